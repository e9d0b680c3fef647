package server

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/fencegate/fencegate/tlsfiles"
)

// maxEtcdStepBound bounds etcd.retryFor and etcd.attemptTimeout: one
// decision takes at most their sum, and the server's write timeout leaves
// leases.maxWait plus 30s for an answer.
const maxEtcdStepBound = 15 * time.Second

// EtcdConfig is the etcd backend's cluster: the registry's etcd section.
type EtcdConfig struct {
	// Endpoints are the members' client URLs, http://host:port or (with
	// tls.enabled) https://host:port; at least one, all of one scheme.
	Endpoints []string `yaml:"endpoints"`
	// DialTimeout bounds each connection attempt (default 5s).
	DialTimeout time.Duration `yaml:"dialTimeout"`
	// RetryFor bounds how long one registry decision is run again, each
	// time on fresh reads, after etcd answered it as unavailable (a leader
	// change, no quorum, a member down): default 3s, at most 15s. Past it
	// the request is answered 503 REGISTRY_UNAVAILABLE.
	RetryFor time.Duration `yaml:"retryFor"`
	// AttemptTimeout bounds one attempt of a decision (its reads and its
	// commit): default 5s, at most 15s. An attempt past it counts as
	// unavailable (its commit's outcome unknown) and is decided again.
	AttemptTimeout time.Duration `yaml:"attemptTimeout"`
	// Username is etcd's user (empty: no authentication); its password is
	// in PasswordFile (an inline password is not a key).
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"passwordFile"`
	// Prefix starts every key, "<prefix>/..." (default "fgreg");
	// registries sharing a cluster each need their own.
	Prefix string `yaml:"prefix"`
	// TLS: enabled, caFile, certFile, keyFile (a client certificate, for
	// a cluster with --client-cert-auth), serverName (default: each
	// endpoint's host).
	TLS tlsfiles.ClientConfig `yaml:"tls"`
	// StateFile is where this process remembers the highest registry state
	// it saw and a fence ceiling above every fence it issued, to meet an
	// etcd restored from an older snapshot across its own restart (default
	// DataDir/etcd-state.json; on a persistent volume for that to hold).
	StateFile string `yaml:"stateFile"`
}

// Validate reports every problem of c at once, each named under section
// ("etcd"). It reads no file.
func (c EtcdConfig) Validate(section string) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(section+format, a...)) }
	if len(c.Endpoints) == 0 {
		add(".endpoints: required (the client URLs of the etcd members)")
	}
	schemes := map[string]bool{}
	for i, e := range c.Endpoints {
		scheme, err := endpointScheme(e)
		if err != nil {
			add(".endpoints[%d]: %q: %v", i, e, err)
			continue
		}
		schemes[scheme] = true
	}
	switch {
	case len(schemes) > 1:
		add(".endpoints: mixes http and https")
	case schemes["https"] && !c.TLS.Enabled:
		add(".endpoints: https needs tls.enabled: true")
	case schemes["http"] && c.TLS.Enabled:
		add(".endpoints: http with tls.enabled: use https URLs")
	}
	errs = append(errs, c.validateDurations(section)...)
	if (c.Username == "") != (c.PasswordFile == "") {
		add(": username and passwordFile go together")
	}
	if strings.HasSuffix(c.Prefix, "/") || strings.ContainsFunc(c.Prefix, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		add(".prefix: %q must be printable, without spaces or a trailing '/'", c.Prefix)
	}
	return append(errs, c.TLS.Validate(section+".tls")...)
}

// validateDurations checks the section's durations.
func (c EtcdConfig) validateDurations(section string) []error {
	var errs []error
	if c.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("%s.dialTimeout: %v must not be negative (0 is the default)", section, c.DialTimeout))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"retryFor", c.RetryFor}, {"attemptTimeout", c.AttemptTimeout}} {
		if d.v < 0 || d.v > maxEtcdStepBound {
			errs = append(errs, fmt.Errorf("%s.%s: %v must be within [0, %v] (0 is the default)", section, d.key, d.v, maxEtcdStepBound))
		}
	}
	return errs
}

// endpointScheme checks one endpoint URL and returns its scheme.
func endpointScheme(e string) (string, error) {
	u, err := url.Parse(e)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("want http://host:port or https://host:port")
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", err
	}
	if u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("a client URL has no path")
	}
	return u.Scheme, nil
}

// readPassword returns the password in PasswordFile without its trailing
// newlines ("" when there is none).
func (c EtcdConfig) readPassword() (string, error) {
	if c.PasswordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("server: etcd.passwordFile: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
