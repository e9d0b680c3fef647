package postgres

import (
	"crypto/tls"
	"testing"
)

// TestTLSKeepsEveryHost: with Options.TLS a DSN of two hosts keeps both,
// in order, each with TLS naming its host, and none of sslmode prefer's
// plaintext attempts.
func TestTLSKeepsEveryHost(t *testing.T) {
	for _, mode := range []string{"prefer", "require", "disable", "verify-full"} {
		t.Run(mode, func(t *testing.T) {
			tc := &tls.Config{MinVersion: tls.VersionTLS12}
			cfg, err := poolConfig(Options{DSN: "postgres://u@db-a:5432,db-b:5433/fg?sslmode=" + mode, TLS: tc})
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.ConnConfig
			if c.Host != "db-a" || c.Port != 5432 || c.TLSConfig == nil || c.TLSConfig.ServerName != "db-a" {
				t.Fatalf("primary %s:%d TLS %v, want db-a:5432 with TLS naming db-a", c.Host, c.Port, c.TLSConfig)
			}
			if len(c.Fallbacks) != 1 {
				t.Fatalf("%d fallbacks, want the second host only: %+v", len(c.Fallbacks), c.Fallbacks)
			}
			f := c.Fallbacks[0]
			if f.Host != "db-b" || f.Port != 5433 || f.TLSConfig == nil || f.TLSConfig.ServerName != "db-b" {
				t.Fatalf("fallback %s:%d TLS %v, want db-b:5433 with TLS naming db-b", f.Host, f.Port, f.TLSConfig)
			}
			if tc.ServerName != "" {
				t.Errorf("the caller's TLS config was changed: ServerName %q", tc.ServerName)
			}
		})
	}
	t.Run("per host", func(t *testing.T) {
		b := &tls.Config{ServerName: "b.verified"}
		cfg, err := poolConfig(Options{DSN: "host=db-a,db-b dbname=fg", TLS: &tls.Config{}, HostTLS: map[string]*tls.Config{"db-b": b}})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.ConnConfig
		if len(c.Fallbacks) != 1 || c.TLSConfig.ServerName != "db-a" || c.Fallbacks[0].TLSConfig != b {
			t.Fatalf("hosts %s %+v: want db-a from TLS, db-b from HostTLS", c.Host, c.Fallbacks)
		}
	})
	t.Run("server name given", func(t *testing.T) {
		cfg, err := poolConfig(Options{DSN: "host=db-a,db-b dbname=fg", TLS: &tls.Config{ServerName: "pg.internal"}})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.ConnConfig
		if len(c.Fallbacks) != 1 || c.TLSConfig.ServerName != "pg.internal" || c.Fallbacks[0].TLSConfig.ServerName != "pg.internal" {
			t.Fatalf("hosts %s %+v: want both, verified as pg.internal", c.Host, c.Fallbacks)
		}
	})
}
