package inject

import (
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Config is the injector's own file (injector.yaml, rendered by the chart
// from injector.sidecar): what every injected sidecar looks like.
type Config struct {
	// Image of the sidecar (the fencegate image; required).
	Image string `json:"image"`
	// ImagePullPolicy of the sidecar; empty: IfNotPresent.
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Native is auto, always or never (see NativeMode); empty: auto.
	Native NativeMode `json:"native,omitempty"`
	// Port is the sidecar's inbound port (proxy.yaml's listen); 0: 8780.
	Port int32 `json:"port,omitempty"`
	// HealthPort is the health listener's port (health.listen); 0: 8782.
	HealthPort int32 `json:"healthPort,omitempty"`
	// AdminPort is the admin API's loopback port (admin.listen); 0: 8781.
	// It is not declared on the container; a pod that declares it is refused.
	AdminPort int32 `json:"adminPort,omitempty"`
	// Resources of the sidecar container.
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// The defaults, the chart's and the image's.
const (
	DefaultPort       = 8780
	DefaultHealthPort = 8782
	DefaultAdminPort  = 8781
	// RunAsID is the image's user and group (distroless nonroot).
	RunAsID = 65532
)

// LoadConfig reads an injector.yaml strictly (an unknown key is an
// error), applies the defaults and validates it.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// SetDefaults fills what is empty.
func (c *Config) SetDefaults() {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if c.Native == "" {
		c.Native = NativeAuto
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.HealthPort == 0 {
		c.HealthPort = DefaultHealthPort
	}
	if c.AdminPort == 0 {
		c.AdminPort = DefaultAdminPort
	}
}

// Validate reports every problem of a defaulted Config at once.
func (c Config) Validate() error {
	var problems []error
	add := func(format string, a ...any) {
		problems = append(problems, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
	}
	if c.Image == "" {
		add("image is required")
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		add("imagePullPolicy %q is not Always, IfNotPresent or Never", c.ImagePullPolicy)
	}
	if _, err := ParseNativeMode(string(c.Native)); err != nil {
		add("%v", err)
	}
	ports := map[int32]string{}
	for _, p := range []struct {
		name string
		v    int32
	}{{"port", c.Port}, {"healthPort", c.HealthPort}, {"adminPort", c.AdminPort}} {
		for _, m := range validation.IsValidPortNum(int(p.v)) {
			add("%s: %s", p.name, m)
		}
		if other, dup := ports[p.v]; dup {
			add("%s and %s are both %d", other, p.name, p.v)
		}
		ports[p.v] = p.name
	}
	return errors.Join(problems...)
}
