package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/proxy/server"
	"github.com/fencegate/fencegate/tlsfiles"
)

// The postgres store backend is configured under store.postgres: its DSN
// file is required, a DSN in the file itself is refused, and every
// malformed setting is named at once.
func TestPostgresStoreConfigValidates(t *testing.T) {
	c := validConfig(t)
	c.Registry.URL = "http://registry.internal:8700"
	c.Store = server.StoreConfig{Backend: "postgres", Service: "svc-a", Postgres: server.PostgresStoreConfig{
		DSNFile: "/etc/fencegate/postgres/dsn", Schema: "svc_a", MaxConns: 8, MinConns: 2, ConnectTimeout: time.Second,
		TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}}}
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid postgres store config: %v", err)
	}
	if !c.Anchored() || c.Store.Claimed() {
		t.Fatal("a postgres store must be anchored (store.service, registry.url) and never claimed (shared by replicas)")
	}

	c.Store = server.StoreConfig{Backend: "postgres"}
	c.Registry.URL = ""
	err := c.Validate()
	for _, want := range []string{"store.postgres.dsnFile: required", "store.service: required for the postgres store", "registry.url: required (http(s)://host:port) by the postgres store"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("an empty postgres section: Validate does not mention %q:\n%v", want, err)
		}
	}

	c.Registry.URL = "http://registry.internal:8700"
	c.Store = server.StoreConfig{Backend: "postgres", Service: "svc-a", Postgres: server.PostgresStoreConfig{
		DSN:              "postgres://u:secret@db/x",
		DSNFile:          "/dsn",
		Schema:           "Bad-Schema",
		MaxConns:         2,
		MinConns:         3,
		ConnectTimeout:   -time.Second,
		StatementTimeout: -time.Second,
		TLS:              tlsfiles.ClientConfig{CertFile: "c.pem", CAFile: "ca.pem"},
	}}
	err = c.Validate()
	if err == nil {
		t.Fatal("a broken postgres store config validated")
	}
	for _, want := range []string{"store.postgres.dsn: a DSN written into the configuration is refused", "store.postgres.schema", "store.postgres.minConns: 3 is above maxConns 2",
		"store.postgres: connectTimeout and statementTimeout must not be negative",
		"store.postgres.tls: certFile and keyFile", "store.postgres.tls: files or serverName set without enabled"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("Validate prints the DSN's password:\n%v", err)
	}
	for _, bad := range []string{"1abc", "pg_catalog", strings.Repeat("a", 64), "a b"} {
		c.Store.Postgres = server.PostgresStoreConfig{DSNFile: "/dsn", Schema: bad}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "store.postgres.schema") {
			t.Errorf("schema %q: %v", bad, err)
		}
	}
}

func TestPostgresStoreConfigLoadsFromYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pg.yaml")
	if err := os.WriteFile(path, []byte(`
store:
  backend: postgres
  postgres:
    dsnFile: /etc/fencegate/postgres/dsn
    schema: payments
    maxConns: 12
    minConns: 2
    connectTimeout: 3s
    statementTimeout: 4s
    allowNonDurable: true
    tls: {enabled: true, caFile: /etc/fencegate/postgres/ca.pem, certFile: /c.pem, keyFile: /k.pem, serverName: db.internal}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := server.PostgresStoreConfig{DSNFile: "/etc/fencegate/postgres/dsn", Schema: "payments", MaxConns: 12, MinConns: 2,
		ConnectTimeout: 3 * time.Second, StatementTimeout: 4 * time.Second, AllowNonDurable: true,
		TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: "/etc/fencegate/postgres/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem", ServerName: "db.internal"}}
	if c.Store.Backend != "postgres" || c.Store.Postgres != want {
		t.Fatalf("store: %+v", c.Store)
	}
}
