package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/proxy/server"
)

// The documents whose store sections the tests below load.
const (
	exampleConfig = "../../docs/proxy.example.yaml"
	operatorGuide = "../../docs/operations.md"
)

// readDoc returns the text of a document of the repository.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withStore returns example with its top-level store section replaced by
// block (a "store:" section of its own).
func withStore(t *testing.T, example, block string) string {
	t.Helper()
	lines := strings.Split(example, "\n")
	start := -1
	for i, l := range lines {
		if l == "store:" {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatal("the example has no top-level store section")
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if l := lines[i]; l != "" && l[0] != ' ' && l[0] != '#' {
			end = i
			break
		}
	}
	out := append(append(append([]string{}, lines[:start]...), strings.Split(strings.TrimRight(block, "\n"), "\n")...), lines[end:]...)
	return strings.Join(out, "\n")
}

// uncommentedStore returns the example's store section with backend set
// to key and the commented-out block "  # key:" (and the lines under it,
// "  #   ...") uncommented: the block as an operator enables it.
func uncommentedStore(t *testing.T, example, key string) string {
	t.Helper()
	lines := strings.Split(example, "\n")
	var out []string
	in, found, section := false, false, false
	for _, l := range lines {
		switch {
		case l == "store:":
			section = true
		case section && l != "" && l[0] != ' ' && l[0] != '#':
			section = false
		}
		if !section {
			continue
		}
		switch {
		case l == "  # "+key+":":
			in, found = true, true
			out = append(out, "  "+key+":")
		case in && strings.HasPrefix(l, "  #   "):
			out = append(out, "  "+l[4:])
		default:
			in = false
			if strings.HasPrefix(l, "  backend: ") {
				l = "  backend: " + key
			}
			out = append(out, l)
		}
	}
	if !found {
		t.Fatalf("the example's store section has no commented %s block", key)
	}
	return strings.Join(out, "\n")
}

// loadText loads text as a proxy.yaml and validates it.
func loadText(t *testing.T, text string) server.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := server.Load(path)
	if err != nil {
		t.Fatalf("load:\n%v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate:\n%v", err)
	}
	return c
}

// TestExamplePostgresBlockValidates: the example's commented store.postgres
// block, uncommented as an operator enables it, loads (no unknown key) and
// validates, with the values it shows.
func TestExamplePostgresBlockValidates(t *testing.T) {
	example := readDoc(t, exampleConfig)
	c := loadText(t, withStore(t, example, uncommentedStore(t, example, "postgres")))
	pg := c.Store.Postgres
	if c.Store.Backend != "postgres" || pg.DSNFile != "/etc/fencegate/postgres/dsn" || pg.Schema != "fencegate" ||
		pg.MaxConns != 10 || pg.MinConns != 2 || pg.ConnectTimeout != 5*time.Second || pg.StatementTimeout != 5*time.Second ||
		!pg.TLS.Enabled || pg.TLS.CAFile != "/etc/fencegate/postgres/ca.pem" || pg.TLS.ServerName != "postgres.fencegate.svc" {
		t.Fatalf("the example's postgres block loaded as %+v (backend %q)", pg, c.Store.Backend)
	}
}

// TestExampleRedisBlockValidates: the same for the commented store.redis
// block.
func TestExampleRedisBlockValidates(t *testing.T) {
	example := readDoc(t, exampleConfig)
	c := loadText(t, withStore(t, example, uncommentedStore(t, example, "redis")))
	if c.Store.Backend != "redis" || c.Store.Redis.Addr != "redis.fencegate.svc:6379" || c.Store.Redis.Prefix != "fg" || !c.Store.Redis.TLS.Enabled {
		t.Fatalf("the example's redis block loaded as %+v (backend %q)", c.Store.Redis, c.Store.Backend)
	}
}

// guideBlock returns the YAML block of the operator guide whose first line
// is "# "+title, without that line.
func guideBlock(t *testing.T, title string) string {
	t.Helper()
	guide := readDoc(t, operatorGuide)
	_, rest, ok := strings.Cut(guide, "```yaml\n# "+title+"\n")
	if !ok {
		t.Fatalf("%s has no yaml block titled %q", operatorGuide, title)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the block %q does not end", operatorGuide, title)
	}
	return block
}

// TestGuidePostgresStoreSectionValidates: the store section the operator
// guide gives for a PostgreSQL store ("Choose a fenced store"), put in
// place of the example's, loads and validates.
func TestGuidePostgresStoreSectionValidates(t *testing.T) {
	c := loadText(t, withStore(t, readDoc(t, exampleConfig), guideBlock(t, "proxy.yaml (store section)")))
	pg := c.Store.Postgres
	if c.Store.Backend != "postgres" || c.Store.Service != "billing-api" || pg.DSNFile == "" || pg.Schema != "billing_api" || !pg.TLS.Enabled {
		t.Fatalf("the guide's store section loaded as %+v (backend %q, service %q)", pg, c.Store.Backend, c.Store.Service)
	}
}
