package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/registry/server"
)

// TestListenHostFromEnvironment: FENCEGATE_LISTEN_HOST replaces the host
// of the default listen address (Default, and a file that leaves listen
// out or empty), never an address the file spells out.
func TestListenHostFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	omitted := file("omitted.yaml", "backend: memory\n")
	empty := file("empty.yaml", "listen: \"\"\n")
	explicit := file("explicit.yaml", "listen: 127.0.0.1:9700\n")
	loopback := file("loopback.yaml", "listen: 127.0.0.1:8700\n")
	for _, tc := range []struct {
		env                                     string
		def, omitted, empty, explicit, loopback string
	}{
		{"", "127.0.0.1:8700", "127.0.0.1:8700", "127.0.0.1:8700", "127.0.0.1:9700", "127.0.0.1:8700"},
		{"0.0.0.0", "0.0.0.0:8700", "0.0.0.0:8700", "0.0.0.0:8700", "127.0.0.1:9700", "127.0.0.1:8700"},
		{"::", "[::]:8700", "[::]:8700", "[::]:8700", "127.0.0.1:9700", "127.0.0.1:8700"},
	} {
		t.Setenv(listenaddr.EnvHost, tc.env)
		if got := server.Default().Listen; got != tc.def {
			t.Errorf("%s=%q: Default().Listen = %q, want %q", listenaddr.EnvHost, tc.env, got, tc.def)
		}
		for path, want := range map[string]string{omitted: tc.omitted, empty: tc.empty, explicit: tc.explicit, loopback: tc.loopback} {
			c, err := server.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.Listen != want {
				t.Errorf("%s=%q, %s: listen = %q, want %q", listenaddr.EnvHost, tc.env, filepath.Base(path), c.Listen, want)
			}
		}
	}
}
