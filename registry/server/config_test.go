package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/server"
)

func TestDefaultNeedsAnIdentitySource(t *testing.T) {
	err := server.Default().Validate()
	if err == nil || !strings.Contains(err.Error(), "identity.mode: mtls needs tls.clientCAFile") {
		t.Fatalf("the default must not run without a way to establish identities: %v", err)
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	os.WriteFile(path, []byte(`
listen: nowhere
backend: cassandra
issuer: ""
tls: {certFile: a.crt}
identity: {mode: header}
leases: {defaultTTL: 1h, maxTTL: 1m}
proofs: {maxTTL: -1s}
maxClockSkew: 2m
log: {level: loud}
`), 0o600)
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, want := range []string{"listen", "backend", "issuer", "certFile and keyFile", "trustedProxies", "leases", "proofs.maxTTL", "maxClockSkew", "log.level"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not mention %q: %v", want, err)
		}
	}
}

func TestUnknownKeysAreErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	os.WriteFile(path, []byte("lisen: 127.0.0.1:1\n"), 0o600)
	if _, err := server.Load(path); err == nil || !strings.Contains(err.Error(), "lisen") {
		t.Fatalf("a misspelt key was accepted: %v", err)
	}
}

func TestExampleConfigLoadsAndValidates(t *testing.T) {
	c, err := server.Load("../../docs/registry.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the documented example does not validate:\n%v", err)
	}
}

func TestRetentionCoversTheLongestLease(t *testing.T) {
	c := server.Default()
	c.Identity.Mode = "insecure-header"
	c.Leases.Retention = c.Leases.MaxTTL / 2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "leases.retention") {
		t.Fatalf("retention below maxTTL accepted: %v", err)
	}
}
