package inject_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/inject"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "injector.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	c, err := inject.LoadConfig(writeConfig(t, "image: fencegate:0.1.0\nresources:\n  requests: {cpu: 50m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Native != inject.NativeAuto || c.Port != 8780 || c.HealthPort != 8782 || c.AdminPort != 8781 || c.ImagePullPolicy != "IfNotPresent" {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Resources.Requests.Cpu().String() != "50m" {
		t.Errorf("resources %v", c.Resources)
	}
}

func TestLoadConfigRefuses(t *testing.T) {
	for text, want := range map[string]string{
		"image: x\nimagePulPolicy: Always\n":     `unknown field "imagePulPolicy"`,
		"native: auto\n":                         "image is required",
		"image: x\nnative: maybe\n":              `native "maybe" is not auto, always or never`,
		"image: x\nport: 8782\n":                 "port and healthPort are both 8782",
		"image: x\nimagePullPolicy: Sometimes\n": `imagePullPolicy "Sometimes"`,
		"image: x\nadminPort: 70000\n":           "adminPort: must be between 1 and 65535",
	} {
		_, err := inject.LoadConfig(writeConfig(t, text))
		if !errors.Is(err, inject.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want ErrConfig with %q", text, err, want)
		}
	}
}
