package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// TestTrustRotation (issue 19, story 8) runs the key rotation of
// docs/operations.md with the real binaries: three registries (each with
// its own key), one sidecar on a bolt store whose trust bundle file is
// rewritten under it.
//
//  1. The sidecar pins the bundle on first use (registry 1's key).
//  2. Registry 2's key is added to the file: a grant it signs, with fence
//     2^62, is GRANT_INVALID and reaches nothing, until
//     "fencegate trust accept --kid K --thumbprint T".
//  3. Registry 3's key comes in a bundle signed by registry 1's key
//     ("fencegate keys jwks --sign-with"): pinned at reload.
//  4. The sidecar restarts (a new process on the same data directory);
//     a file without registry 2's key, whose grant is still held, is
//     refused at reload ("still in use"), and that grant still writes.
func TestTrustRotation(t *testing.T) {
	ctx := context.Background()
	r1, r2, r3 := startRegistry(t, ""), startRegistry(t, ""), startRegistry(t, "")
	jwks := func(r *registry) string { return filepath.Join(r.dataDir, "keys", "jwks.json") }
	bundle := filepath.Join(t.TempDir(), "trust.jwks")
	setBundle := func(args ...string) {
		t.Helper()
		r := run(t, append([]string{"keys", "jwks"}, args...)...)
		if r.code != 0 {
			t.Fatalf("keys jwks %v: %d %s", args, r.code, r.stderr)
		}
		writeFile(t, bundle, r.stdout)
	}
	setBundle(jwks(r1))

	back := startLedgerBackend(t)
	dataDir := t.TempDir()
	cfg := `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "` + back.URL() + `", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", status: {mode: proof, maxAge: 1m}}
identity: {mode: insecure-header}
trust: {bundle: "` + bundle + `"}
registry: {url: "` + r1.url + `"}
store: {backend: bolt, service: e2e-trust-rotation, claimIdentity: sidecar}
dataDir: "` + dataDir + `"
log: {level: info}
`
	sc := startSidecar(t, cfg)
	acquire := func(r *registry, owner, resource string) *client.Lease {
		t.Helper()
		c, _ := client.New(r.url, client.WithIdentityHeader("X-Fencegate-Identity", owner))
		l, err := c.Acquire(ctx, client.AcquireRequest{Resource: resource, RequestID: owner + "-" + strings.ReplaceAll(resource, "/", "-"), TTL: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	put := func(owner string, l *client.Lease, seg int, body string) (int, fencegate.Code) {
		t.Helper()
		r := send(sc.url, of(owner, l, accountsPath(strings.TrimPrefix(l.Resource, "account/")), fmt.Sprint(seg), body))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r.Status, r.code()
	}
	trustList := func() map[string]struct{ Thumbprint, State, How string } {
		t.Helper()
		r := run(t, "trust", "list", "--json", "--admin", sc.admin)
		if r.code != 0 {
			t.Fatalf("trust list: %d %s", r.code, r.stderr)
		}
		var l struct {
			Keys []struct{ Kid, Thumbprint, State, How string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			t.Fatalf("trust list --json: %v\n%s", err, r.stdout)
		}
		out := map[string]struct{ Thumbprint, State, How string }{}
		for _, k := range l.Keys {
			out[k.Kid] = struct{ Thumbprint, State, How string }{k.Thumbprint, k.State, k.How}
		}
		return out
	}
	reload := func() result {
		t.Helper()
		return run(t, "trust", "reload", "--admin", sc.admin)
	}
	kidOf := func(r *registry) string {
		t.Helper()
		raw, err := os.ReadFile(jwks(r))
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ Keys []struct{ Kid string } }
		if json.Unmarshal(raw, &s) != nil || len(s.Keys) != 1 {
			t.Fatalf("jwks of %s: %s", r.url, raw)
		}
		return s.Keys[0].Kid
	}
	k1, k2, k3 := kidOf(r1), kidOf(r2), kidOf(r3)

	// 1. First use (checked below, after the story's own assertion).
	a := acquire(r1, "worker-a", "account/7")
	if st, code := put("worker-a", a, 1, "A"); st != 200 {
		t.Fatalf("registry 1's grant: %d %s", st, code)
	}

	// 2. A new registry whose fences start at 2^62, its key added to the file.
	c2, _ := client.New(r2.url)
	if err := c2.RaiseFenceFloor(ctx, "", 1<<62); err != nil {
		t.Fatal(err)
	}
	setBundle(jwks(r1), jwks(r2))
	if r := reload(); r.code != 0 || !strings.Contains(r.stdout, `"changed": true`) {
		t.Fatalf("trust reload: %d %s %s", r.code, r.stdout, r.stderr)
	}
	b := acquire(r2, "worker-b", "account/7")
	if b.FenceToken < 1<<62 {
		t.Fatalf("registry 2 issued fence %d", b.FenceToken)
	}
	if st, code := put("worker-b", b, 1, "B-untrusted"); st != 401 || code != fencegate.CodeGrantInvalid {
		t.Fatalf("a grant of the key added to the file: %d %s, want 401 GRANT_INVALID", st, code)
	}
	keys := trustList()
	if keys[k2].State != "unpinned" || keys[k1].State != "trusted" || keys[k1].How != "FIRST_USE" {
		t.Fatalf("trust list after the key was added: %+v", keys)
	}
	if r := run(t, "trust", "list", "--admin", sc.admin); r.code != 0 || !strings.Contains(r.stdout, "IN USE UNTIL") || !strings.Contains(r.stdout, k2) {
		t.Fatalf("trust list table: %d %s", r.code, r.stdout)
	}
	if r := run(t, "trust", "accept", "--admin", sc.admin, "--kid", k2, "--thumbprint", keys[k1].Thumbprint); r.code == 0 {
		t.Fatalf("accept with another key's thumbprint: %s", r.stdout)
	}
	if st, code := put("worker-b", b, 1, "B-untrusted"); st != 401 || code != fencegate.CodeGrantInvalid {
		t.Fatalf("after a refused accept: %d %s", st, code)
	}
	if r := run(t, "trust", "accept", "--admin", sc.admin, "--kid", k2, "--thumbprint", keys[k2].Thumbprint, "--reason", "e2e rotation"); r.code != 0 || !strings.Contains(r.stdout, `"trusted": true`) {
		t.Fatalf("trust accept: %d %s %s", r.code, r.stdout, r.stderr)
	}
	b = refresh(t, r2, "worker-b", b)
	if st, code := put("worker-b", b, 1, "B1"); st != 200 {
		t.Fatalf("registry 2's grant after accept: %d %s", st, code)
	}

	// 3. Registry 3's key, in a bundle signed by registry 1's key.
	signed := run(t, "keys", "jwks", "--sign-with", filepath.Join(r1.dataDir, "keys", "signing.jwk"), jwks(r1), jwks(r2), jwks(r3))
	if signed.code != 0 || strings.HasPrefix(signed.stdout, "{") {
		t.Fatalf("keys jwks --sign-with: %d %s", signed.code, signed.stderr)
	}
	writeFile(t, bundle, signed.stdout)
	if r := reload(); r.code != 0 {
		t.Fatalf("reload of the signed bundle: %d %s", r.code, r.stderr)
	}
	if keys := trustList(); keys[k3].State != "trusted" || keys[k3].How != "SIGNED_BUNDLE" {
		t.Fatalf("registry 3's key after the signed bundle: %+v", keys[k3])
	}
	c := acquire(r3, "worker-c", "account/8")
	if st, code := put("worker-c", c, 1, "C1"); st != 200 {
		t.Fatalf("registry 3's grant: %d %s", st, code)
	}

	// 4. Restart: a new process on the same data directory.
	if err := sc.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	sc = startSidecar(t, cfg)
	setBundle(jwks(r1), jwks(r3))
	if r := reload(); r.code == 0 || !strings.Contains(r.stderr, "still in use") {
		t.Fatalf("a reload dropping registry 2's key in use, after a restart: %d %s %s", r.code, r.stdout, r.stderr)
	}
	b = refresh(t, r2, "worker-b", b)
	if st, code := put("worker-b", b, 2, "B2"); st != 200 {
		t.Fatalf("registry 2's grant after the refused reload: %d %s", st, code)
	}
	back.wantBodies(t, accountsPath("7"), "A", "B1", "B2")
	back.wantBodies(t, accountsPath("8"), "C1")
}

// refresh returns l with a fresh status proof from r.
func refresh(t *testing.T, r *registry, owner string, l *client.Lease) *client.Lease {
	t.Helper()
	c, _ := client.New(r.url, client.WithIdentityHeader("X-Fencegate-Identity", owner))
	s, err := c.Status(context.Background(), l.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if s.Grant == "" {
		s.Grant = l.Grant
	}
	return s
}
