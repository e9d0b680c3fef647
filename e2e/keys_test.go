package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeyRotation: keys made by "fencegate keys generate", a registry that
// signs with the new key and still publishes the old one, and trust
// bundles built by "fencegate keys jwks".
func TestKeyRotation(t *testing.T) {
	dir := t.TempDir()
	oldDir, newDir, hsDir := filepath.Join(dir, "old"), filepath.Join(dir, "new"), filepath.Join(dir, "hs")
	for alg, out := range map[string]string{"EdDSA": oldDir, "ES256": newDir, "HS256": hsDir} {
		if r := run(t, "keys", "generate", "--alg", alg, "--out", out); r.code != 0 || !strings.Contains(r.stdout, "kid:") {
			t.Fatalf("keys generate %s: %d %s %s", alg, r.code, r.stdout, r.stderr)
		}
	}
	if r := run(t, "keys", "generate", "--alg", "none", "--out", dir); r.code != 2 {
		t.Fatalf("alg none: exit %d", r.code)
	}
	if r := run(t, "keys", "jwks", filepath.Join(hsDir, "signing.jwk")); r.code == 0 {
		t.Fatalf("an HS256 secret was published without --include-secrets: %s", r.stdout)
	}
	both := run(t, "keys", "jwks", filepath.Join(oldDir, "signing.jwk"), filepath.Join(newDir, "signing.jwk"))
	if both.code != 0 || strings.Contains(both.stdout, `"d"`) {
		t.Fatalf("keys jwks: %d %s", both.code, both.stderr)
	}
	bundleBoth := filepath.Join(dir, "both.json")
	writeFile(t, bundleBoth, both.stdout)

	cfg := filepath.Join(dir, "registry.yaml")
	writeFile(t, cfg, `
backend: bolt
signingKey: `+filepath.Join(newDir, "signing.jwk")+`
publishKeys: [`+filepath.Join(oldDir, "signing.jwk")+`]
identity: {mode: insecure-header}
admin: {allowLoopback: true}
`)
	data := t.TempDir()
	p := start(t, "registry", "registry", "--config", cfg, "--data", data, "--listen", "127.0.0.1:0")
	url := "http://" + p.waitFor(listeningRE, 15*time.Second)
	grant := filepath.Join(dir, "g.jws")
	if r := run(t, "grant", "acquire", "--registry", url, "--owner", "worker-a", "--resource", "r/1", "--grant-out", grant); r.code != 0 {
		t.Fatalf("acquire: %s %s", r.stdout, r.stderr)
	}
	// The published bundle holds both public keys.
	if pub, _ := os.ReadFile(filepath.Join(data, "keys", "jwks.json")); strings.Count(string(pub), `"kid"`) != 2 {
		t.Fatalf("published bundle: %s", pub)
	}
	if r := run(t, "grant", "inspect", "--jwks", bundleBoth, "--file", grant); r.code != 0 || fields(r.stdout)["schema"] != "lockGrant.v1" {
		t.Fatalf("inspect with the rotation bundle: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "grant", "inspect", "--jwks", filepath.Join(oldDir, "jwks.json"), "--file", grant); r.code != 8 || !strings.Contains(r.stderr, "GRANT_INVALID") {
		t.Fatalf("inspect with only the old key: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
