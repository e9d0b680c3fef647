package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/proxy/server"
)

// TestListenHostFromEnvironment: FENCEGATE_LISTEN_HOST replaces the host
// of the default inbound (8780) and health (8782) addresses, never the
// admin listener's (loopback unless configured), and never an address the
// configuration spells out.
func TestListenHostFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env            string
		explicit       server.Config
		listen, health string
		admin          string
	}{
		{"", server.Config{}, "127.0.0.1:8780", "127.0.0.1:8782", "127.0.0.1:8781"},
		{"0.0.0.0", server.Config{}, "0.0.0.0:8780", "0.0.0.0:8782", "127.0.0.1:8781"},
		{"::", server.Config{}, "[::]:8780", "[::]:8782", "127.0.0.1:8781"},
		{"0.0.0.0", server.Config{Listen: "127.0.0.1:8780", Health: server.HealthConfig{Listen: "127.0.0.1:9782"}, Admin: server.AdminConfig{Listen: "10.0.0.1:8781"}},
			"127.0.0.1:8780", "127.0.0.1:9782", "10.0.0.1:8781"},
		// Only what is left empty takes the variable.
		{"0.0.0.0", server.Config{Listen: "127.0.0.1:9000"}, "127.0.0.1:9000", "0.0.0.0:8782", "127.0.0.1:8781"},
		// A listen on port 0 (tests) makes the default health port 0 too.
		{"", server.Config{Listen: "127.0.0.1:0"}, "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:8781"},
	} {
		t.Setenv(listenaddr.EnvHost, tc.env)
		c := tc.explicit
		c.SetDefaults()
		if c.Listen != tc.listen || c.Health.Listen != tc.health || c.Admin.Listen != tc.admin {
			t.Errorf("%s=%q, %+v: listen %q health %q admin %q; want %q %q %q", listenaddr.EnvHost, tc.env, tc.explicit,
				c.Listen, c.Health.Listen, c.Admin.Listen, tc.listen, tc.health, tc.admin)
		}
	}
}

// TestListenHostFromEnvironmentInFile: the same through LoadConfig: a
// file without listen keys takes the variable, one with them keeps them.
func TestListenHostFromEnvironmentInFile(t *testing.T) {
	t.Setenv(listenaddr.EnvHost, "0.0.0.0")
	example, err := os.ReadFile("../../docs/proxy.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	var kept []string
	skip := false
	for _, line := range strings.Split(string(example), "\n") {
		switch {
		case strings.HasPrefix(line, "listen:"), strings.HasPrefix(line, "health:"):
			skip = strings.HasPrefix(line, "health:")
			continue
		case skip && strings.HasPrefix(line, " "):
			continue
		}
		skip = false
		kept = append(kept, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "0.0.0.0:8780" || c.Health.Listen != "0.0.0.0:8782" || c.Admin.Listen != "127.0.0.1:8781" {
		t.Fatalf("listen %q health %q admin %q", c.Listen, c.Health.Listen, c.Admin.Listen)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err = server.Load("../../docs/proxy.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Health.Listen != "0.0.0.0:8782" || c.Listen != "0.0.0.0:8780" {
		t.Fatalf("the example's explicit addresses: listen %q health %q", c.Listen, c.Health.Listen)
	}
}

// TestHealthListenValidation: a malformed health.listen, or one shared
// with another listener, is refused.
func TestHealthListenValidation(t *testing.T) {
	c, err := server.Load("../../docs/proxy.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"nope", c.Listen, c.Admin.Listen} {
		d := c
		d.Health.Listen = bad
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "health.listen") {
			t.Errorf("health.listen %q: %v", bad, err)
		}
	}
}
