package e2e

import (
	"strings"
	"testing"
)

// TestDemo runs "fencegate demo", the README's first command, and checks
// that it tells the stalled-worker story: act 1 corrupted, act 2 protected by
// STALE_OWNER with worker-b's value surviving, receipts listed.
func TestDemo(t *testing.T) {
	r := run(t, "demo", "--lease", "400ms", "--pause", "700ms")
	if r.code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	act1, act2, ok := strings.Cut(r.stdout, "Act 2")
	if !ok {
		t.Fatalf("no act 2:\n%s", r.stdout)
	}
	for _, want := range []string{`backend holds "total=1200"`, "[CORRUPTED]"} {
		if !strings.Contains(act1, want) {
			t.Errorf("act 1 lacks %q:\n%s", want, act1)
		}
	}
	for _, want := range []string{"409 STALE_OWNER", `backend holds "total=1350"`, "Fence-Receipt rcpt-", "Receipts:", "rejected   STALE_OWNER  1"} {
		if !strings.Contains(act2, want) {
			t.Errorf("act 2 lacks %q:\n%s", want, act2)
		}
	}
}
