package postgres

import (
	"crypto/tls"

	"github.com/jackc/pgx/v5/pgconn"
)

// withTLS makes every host of cfg connect with TLS and only with it: the
// configuration hosts names for it, else tc for the host (tlsFor). pgconn
// keeps the DSN's hosts after the first, and for sslmode prefer or allow
// the plaintext attempt of each host, in cfg.Fallbacks: the hosts stay,
// in their order, each once, each with its own configuration, and no
// attempt without TLS is left.
func withTLS(cfg *pgconn.Config, tc *tls.Config, hosts map[string]*tls.Config) {
	type hostPort struct {
		host string
		port uint16
	}
	seen := map[hostPort]bool{{cfg.Host, cfg.Port}: true}
	cfg.TLSConfig = tlsFor(tc, hosts, cfg.Host)
	var fallbacks []*pgconn.FallbackConfig
	for _, f := range cfg.Fallbacks {
		hp := hostPort{f.Host, f.Port}
		if seen[hp] {
			continue // the same host without TLS (or with the DSN's)
		}
		seen[hp] = true
		fallbacks = append(fallbacks, &pgconn.FallbackConfig{Host: f.Host, Port: f.Port, TLSConfig: tlsFor(tc, hosts, f.Host)})
	}
	cfg.Fallbacks = fallbacks
}

// tlsFor is host's configuration in hosts, else a copy of tc whose
// ServerName is host when tc names none (a name verified against every
// host's certificate would be the first host's).
func tlsFor(tc *tls.Config, hosts map[string]*tls.Config, host string) *tls.Config {
	if c, ok := hosts[host]; ok {
		return c
	}
	c := tc.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c
}
