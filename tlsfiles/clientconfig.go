package tlsfiles

import (
	"crypto/tls"
	"fmt"
)

// ClientConfig is the YAML of a TLS client connection to a server such as
// Redis: the sidecar's store.redis.tls and the registry's redis.tls.
type ClientConfig struct {
	// Enabled turns TLS on; the other keys need it.
	Enabled bool `yaml:"enabled"`
	// CAFile verifies the server (default: the system roots).
	CAFile string `yaml:"caFile"`
	// CertFile and KeyFile are a client certificate, for a server that
	// requires one.
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	// ServerName overrides the name verified (default: the host dialed).
	ServerName string `yaml:"serverName"`
}

// Validate reports the problems of the settings (prefix names the config
// key, "store.redis.tls").
func (c ClientConfig) Validate(prefix string) []error {
	var errs []error
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: certFile and keyFile go together", prefix))
	}
	if !c.Enabled && (c.CAFile != "" || c.CertFile != "" || c.ServerName != "") {
		errs = append(errs, fmt.Errorf("%s: files or serverName set without enabled: true", prefix))
	}
	return errs
}

// Reloading returns the TLS configuration of the connection (nil when TLS
// is not enabled), verifying the server as host unless ServerName says
// otherwise, and re-reading the files when they change (Client.Reloading).
func (c ClientConfig) Reloading(host string, r Reload) (*tls.Config, error) {
	if !c.Enabled {
		return nil, nil
	}
	files := Client{CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, ServerName: c.ServerName}
	if files.ServerName == "" {
		files.ServerName = host
	}
	return files.Reloading(r)
}
