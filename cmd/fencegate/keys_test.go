package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysGenerateJSON: keys generate -o json is one document naming the
// kid and the files it wrote; a second run without --force is refused and
// writes nothing.
func TestKeysGenerateJSON(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, "-o", "json", "keys", "generate", "--alg", "ES256", "--out", dir)
	var g generatedKey
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil || r.code != exitOK {
		t.Fatalf("exit %d %q %s (%v)", r.code, r.stdout, r.stderr, err)
	}
	if g.Kid == "" || g.Alg != "ES256" || g.SigningKey != filepath.Join(dir, "signing.jwk") || g.TrustBundle != filepath.Join(dir, "jwks.json") || g.Replaced {
		t.Errorf("document %+v", g)
	}
	for _, p := range []string{g.SigningKey, g.TrustBundle} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, st, err)
		}
	}
	before, _ := os.ReadFile(g.SigningKey)
	r = runCLI(t, "keys", "generate", "--out", dir)
	after, _ := os.ReadFile(g.SigningKey)
	if r.code == exitOK || !strings.Contains(r.stderr, "already exists") || string(before) != string(after) {
		t.Errorf("second generate: exit %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, "keys", "generate", "--alg", "none", "--out", t.TempDir()); r.code != exitUsage {
		t.Errorf("--alg none: exit %d", r.code)
	}
}
