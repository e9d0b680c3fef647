package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestQuickstart is the README's registry walk-through: acquire, inspect,
// wait out the TTL, acquire from another owner and see a larger fence.
func TestQuickstart(t *testing.T) {
	reg := startRegistry(t, "")
	grantFile := filepath.Join(t.TempDir(), "a.jws")

	a := run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-a",
		"--resource", "invoice-batch/2026-07-19", "--ttl", "300ms", "--grant-out", grantFile)
	if a.code != 0 {
		t.Fatalf("acquire by worker-a: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	fa := fields(a.stdout)
	if fa["owner"] != "worker-a" || fa["state"] != "HELD" {
		t.Fatalf("acquire output: %q", a.stdout)
	}

	in := run(t, "grant", "inspect", "--registry", reg.url, "--file", grantFile)
	if in.code != 0 {
		t.Fatalf("inspect: exit %d\n%s%s", in.code, in.stdout, in.stderr)
	}
	fi := fields(in.stdout)
	for k, want := range map[string]string{"schema": "lockGrant.v1", "resource": "invoice-batch/2026-07-19", "owner": "worker-a", "fenceToken": fa["fenceToken"], "lease": fa["lease"]} {
		if fi[k] != want {
			t.Errorf("inspect %s = %q, want %q", k, fi[k], want)
		}
	}

	// While A holds it, B is refused.
	if b := run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-b", "--resource", "invoice-batch/2026-07-19"); b.code == 0 {
		t.Fatalf("worker-b acquired a held resource:\n%s", b.stdout)
	}

	// After the TTL, B gets it with a larger fence.
	deadline := time.Now().Add(10 * time.Second)
	var b result
	for {
		b = run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-b", "--resource", "invoice-batch/2026-07-19", "--wait", "2s")
		if b.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	if b.code != 0 {
		t.Fatalf("acquire by worker-b after the TTL: exit %d\n%s%s", b.code, b.stdout, b.stderr)
	}
	fa1, _ := strconv.ParseUint(fa["fenceToken"], 10, 64)
	fb, _ := strconv.ParseUint(fields(b.stdout)["fenceToken"], 10, 64)
	if fb <= fa1 {
		t.Fatalf("worker-b's fence %d is not above worker-a's %d", fb, fa1)
	}

	// A tampered grant is rejected by inspect.
	raw, _ := os.ReadFile(grantFile)
	raw[len(raw)/2] ^= 0x01
	bad := filepath.Join(t.TempDir(), "bad.jws")
	os.WriteFile(bad, raw, 0o600)
	if r := run(t, "grant", "inspect", "--registry", reg.url, "--file", bad); r.code == 0 {
		t.Fatalf("inspect accepted a tampered grant:\n%s", r.stdout)
	}
}
