package postgres

import (
	"crypto/tls"

	"github.com/jackc/pgx/v5/pgconn"
)

// withTLS makes every host of cfg connect with tc and only with it. pgconn
// keeps the DSN's hosts after the first, and for sslmode prefer or allow
// the plaintext attempt of each host, in cfg.Fallbacks: the hosts stay,
// in their order, each once, each with its own copy of tc naming it
// (ServerName, when tc names none), and no attempt without TLS is left.
func withTLS(cfg *pgconn.Config, tc *tls.Config) {
	type hostPort struct {
		host string
		port uint16
	}
	seen := map[hostPort]bool{{cfg.Host, cfg.Port}: true}
	cfg.TLSConfig = tlsFor(tc, cfg.Host)
	var fallbacks []*pgconn.FallbackConfig
	for _, f := range cfg.Fallbacks {
		hp := hostPort{f.Host, f.Port}
		if seen[hp] {
			continue // the same host without TLS (or with the DSN's)
		}
		seen[hp] = true
		fallbacks = append(fallbacks, &pgconn.FallbackConfig{Host: f.Host, Port: f.Port, TLSConfig: tlsFor(tc, f.Host)})
	}
	cfg.Fallbacks = fallbacks
}

// tlsFor is tc for host: a copy whose ServerName is host when tc names
// none (a name verified against every host's certificate would be the
// first host's).
func tlsFor(tc *tls.Config, host string) *tls.Config {
	c := tc.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c
}
