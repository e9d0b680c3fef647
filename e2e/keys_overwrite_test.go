package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysGenerateRefusesToOverwrite: "keys generate" never replaces an
// existing signing key or trust bundle unless --force is given; refused,
// it exits non-zero and writes nothing. With --force it replaces both
// atomically, leaving mode 0600 files and no temporary files.
func TestKeysGenerateRefusesToOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	keyPath, bundlePath := filepath.Join(dir, "signing.jwk"), filepath.Join(dir, "jwks.json")
	if r := run(t, "keys", "generate", "--alg", "EdDSA", "--out", dir); r.code != 0 {
		t.Fatalf("first generate: %d %s %s", r.code, r.stdout, r.stderr)
	}
	oldKey, oldBundle := readKeyFile(t, keyPath), readKeyFile(t, bundlePath)

	// Without --force: refused, nothing written, whichever file exists.
	r := run(t, "keys", "generate", "--alg", "ES256", "--out", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "already exists") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("generate over an existing key: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if readKeyFile(t, keyPath) != oldKey || readKeyFile(t, bundlePath) != oldBundle {
		t.Fatal("a refused generate changed the key files")
	}
	onlyBundle := filepath.Join(t.TempDir(), "only-bundle")
	if err := os.MkdirAll(onlyBundle, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(onlyBundle, "jwks.json"), oldBundle)
	if r := run(t, "keys", "generate", "--out", onlyBundle); r.code == 0 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("generate over an existing bundle: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(onlyBundle, "signing.jwk")); !os.IsNotExist(err) {
		t.Fatalf("a refused generate wrote signing.jwk: %v", err)
	}
	onlyKeyFiles(t, onlyBundle, "jwks.json")

	// With --force: replaced, 0600 even over a looser file, no leftovers.
	if err := os.Chmod(keyPath, 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, "keys", "generate", "--alg", "ES256", "--out", dir, "--force")
	if r.code != 0 {
		t.Fatalf("generate --force: %d %s %s", r.code, r.stdout, r.stderr)
	}
	newKey, newBundle := readKeyFile(t, keyPath), readKeyFile(t, bundlePath)
	if newKey == oldKey || newBundle == oldBundle {
		t.Fatal("generate --force did not replace the files")
	}
	for _, p := range []string{keyPath, bundlePath} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v (%v), want 0600", p, fi.Mode().Perm(), err)
		}
	}
	var k struct {
		Kid, Alg, D string
	}
	var set struct {
		Keys []struct{ Kid, D string }
	}
	if err := json.Unmarshal([]byte(newKey), &k); err != nil || k.D == "" || k.Alg != "ES256" {
		t.Fatalf("new signing key: %+v %v", k, err)
	}
	if err := json.Unmarshal([]byte(newBundle), &set); err != nil || len(set.Keys) != 1 || set.Keys[0].Kid != k.Kid || set.Keys[0].D != "" {
		t.Fatalf("new bundle %s does not publish the new key %s alone: %v", newBundle, k.Kid, err)
	}
	if fields(r.stdout)["kid"] != k.Kid {
		t.Fatalf("printed kid %q, file holds %q", fields(r.stdout)["kid"], k.Kid)
	}
	onlyKeyFiles(t, dir, "jwks.json", "signing.jwk")
}

func readKeyFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// onlyKeyFiles fails t unless dir holds exactly the named entries.
func onlyKeyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}
