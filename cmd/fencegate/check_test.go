package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const checkProxyYAML = `listen: 127.0.0.1:0
admin: {listen: 127.0.0.1:0}
backend: {url: "http://127.0.0.1:9"}
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "item/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "/nonexistent/jwks.json"}
registry: {url: "http://127.0.0.1:8700"}
store: {backend: bolt, service: chk, identity: sidecar}
dataDir: DATA
`

// TestProxyCheck: proxy --check exits 0 on a valid file, and on an
// invalid one prints every problem at once, the unknown key with the
// others, exit 2; it starts nothing (its data directory is not created).
func TestProxyCheck(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	cfg := strings.Replace(checkProxyYAML, "DATA", data, 1)
	writeTestFile(t, good, cfg)
	writeTestFile(t, bad, strings.NewReplacer("listen: 127.0.0.1:0\nadmin", "listen: nope\nbogusKey: 1\nadmin", "mode: registry", "mode: sometimes").Replace(cfg))

	if r := runCLI(t, "proxy", "--config", good, "--check"); r.code != exitOK || !strings.Contains(r.stdout, "is valid") {
		t.Fatalf("valid file: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, "proxy", "--config", bad, "--check")
	if r.code != exitUsage {
		t.Errorf("invalid file: exit %d, want 2", r.code)
	}
	for _, w := range []string{"field bogusKey not found", `routes[0].status.mode: "sometimes"`, `listen: "nope"`} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("--check does not report %q:\n%s", w, r.stderr)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("--check created the data directory (%v): it must start nothing", err)
	}
	j := runCLI(t, "proxy", "--config", bad, "--check", "-o", "json")
	var e struct {
		Error jsonError `json:"error"`
	}
	if err := json.Unmarshal([]byte(j.stderr), &e); err != nil || j.code != exitUsage || len(e.Error.Problems) != 3 {
		t.Errorf("-o json: exit %d, %d problems (%v): %s", j.code, len(e.Error.Problems), err, j.stderr)
	}
}

// TestRegistryCheck: registry --check validates the file and the flags
// together, every problem at once, and starts nothing.
func TestRegistryCheck(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if r := runCLI(t, "registry", "--insecure-dev", "--data", data, "--check"); r.code != exitOK || !strings.Contains(r.stdout, "is valid") {
		t.Fatalf("valid: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("--check created the data directory (%v)", err)
	}
	bad := filepath.Join(dir, "registry.yaml")
	writeTestFile(t, bad, "listen: x\nfoo: 1\nbackend: nope\n")
	r := runCLI(t, "-o", "json", "registry", "--config", bad, "--insecure-dev", "--check")
	if r.code != exitUsage {
		t.Errorf("invalid: exit %d", r.code)
	}
	for _, w := range []string{"field foo not found", `listen: \"x\"`, `backend: \"nope\"`, `"exit":2`} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("--check does not report %q:\n%s", w, r.stderr)
		}
	}
}

func writeTestFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCompletion: completion scripts for bash, zsh and fish, and the
// completion of subcommands and flags they call back into.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -o default -F __start_fencegate fencegate", "zsh": "#compdef fencegate", "fish": "complete -c fencegate"} {
		if r := runCLI(t, "completion", shell); r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, lacks %q", shell, r.code, want)
		}
	}
	r := runCLI(t, "__complete", "grant", "ac")
	if r.code != exitOK || !strings.Contains(r.stdout, "acquire") {
		t.Errorf("completing 'grant ac': %d %q", r.code, r.stdout)
	}
	r = runCLI(t, "__complete", "grant", "release", "--")
	if !strings.Contains(r.stdout, "--lease") || strings.Contains(r.stdout, "--ttl") || strings.Contains(r.stdout, "--admin-token-file") {
		t.Errorf("grant release's flags: %q", r.stdout)
	}
}
