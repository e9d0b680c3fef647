package main

import (
	"strings"
	"testing"
)

const pprofTop = `File: fencegate
Type: cpu
Duration: 8.13s, Total samples = 9.02s (110.95%)
Showing nodes accounting for 5.1s, 56.54% of 9.02s total
      flat  flat%   sum%        cum   cum%
     1.20s 13.30% 13.30%      1.20s 13.30%  internal/runtime/syscall.Syscall6
     0.50s  5.54% 18.85%      0.90s  9.98%  runtime.mallocgc
     0.30s  3.33% 22.17%      0.30s  3.33%  crypto/internal/fips140/edwards25519/field.feMul

`

// topLines keeps the function lines after pprof's header, at most n.
func TestTopLines(t *testing.T) {
	got := topLines(pprofTop, 2)
	if len(got) != 2 || !strings.HasSuffix(got[0], "internal/runtime/syscall.Syscall6") || !strings.HasSuffix(got[1], "runtime.mallocgc") {
		t.Fatalf("topLines: %q", got)
	}
	if got := topLines("no header here\n1s 1% 1% 1s 1% f\n", 5); len(got) != 0 {
		t.Errorf("lines before a header: %q", got)
	}
	if got := firstOr(nil, "(empty)"); got != "(empty)" {
		t.Errorf("firstOr(nil) = %q", got)
	}
}

// README.md names every profile, its failure when it was not taken, and
// its top lines in a code block.
func TestRenderProfiles(t *testing.T) {
	md := renderProfiles([]profiled{
		{Arm: "fg-bolt-proof-EdDSA", Role: "proxy", File: "fg-bolt-proof-EdDSA-proxy.pprof", Requests: 1234, Top: topLines(pprofTop, 3)},
		{Arm: "fg-memory-registry-EdDSA", Role: "registry", Err: "403 Forbidden: ADMIN_REQUIRED"},
	}, 8)
	for _, want := range []string{"## fg-bolt-proof-EdDSA, proxy", "1234 requests", "runtime.mallocgc", "## fg-memory-registry-EdDSA, registry", "not taken: 403 Forbidden: ADMIN_REQUIRED", "a 8 s CPU profile"} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q:\n%s", want, md)
		}
	}
}
