package proxy_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// TestLaggingClockSeesProofWindowsClose: a proof-mode sidecar whose clock
// lags the registry's by more than trust.clockSkew (10 s, against the
// default 1 s) would take a proof whose window closed in real time for a
// fresh one: issued 10 s ago, expired 5 s ago, it looks just issued to
// the lagging clock. Once the sidecar has seen any authentic proof of the
// present (refused itself: issued "in the future" by its clock), the proof
// window is judged at the time that proof teaches, and the old proof is
// refused as expired; the metric says how far behind the clock is.
func TestLaggingClockSeesProofWindowsClose(t *testing.T) {
	real := time.Now()
	lag := 10 * time.Second
	f := newFixtureAt(t, clocktest.New(real.Add(-lag)))
	f.run()

	// The present, as the registry's proofs state it: refused by the
	// lagging clock, but authentic, so it teaches the time.
	tokB, gB := f.crafted("doc/now", "worker-b", 1)
	fresh := string(f.issuer.SignStatus(f.issuer.StatusFor(tokB, gB, real)))
	f.do(call{path: "/v1/docs/now", owner: "worker-b", grant: string(tokB), status: fresh, body: "b"}).expect(t, 403, fencegate.CodeStatusStale)

	// A proof issued lag ago: expired in real time (its TTL is shorter
	// than the lag), "just issued" on the sidecar's clock.
	if verifytest.DefaultProofTTL >= lag {
		t.Fatalf("the proof TTL %s must be below the lag %s for the proof to be expired", verifytest.DefaultProofTTL, lag)
	}
	tokA, gA := f.crafted("doc/old", "worker-a", 1)
	old := string(f.issuer.SignStatus(f.issuer.StatusFor(tokA, gA, real.Add(-lag))))
	f.do(call{path: "/v1/docs/old", owner: "worker-a", grant: string(tokA), status: old, body: "a"}).expect(t, 403, fencegate.CodeStatusStale)
	if n := f.back.count(); n != 0 {
		t.Fatalf("the backend received %d writes, want none", n)
	}
	if behind := f.counter("fencegate_proxy_clock_behind_seconds"); behind < (lag - 2*time.Second).Seconds() {
		t.Fatalf("fencegate_proxy_clock_behind_seconds = %v, want about %s minus the skew", behind, lag)
	}
}

// TestRegistryTimeTeachesTheFirstProof: the first proof a lagging
// proof-mode sidecar ever sees cannot teach it the present (it is old
// itself). The store anchor's answers can: its registration at start
// hands the registry's clock to the sidecar's shared time bound, so even
// that first, expired proof is refused.
func TestRegistryTimeTeachesTheFirstProof(t *testing.T) {
	real := time.Now()
	lag := 10 * time.Second
	clk := clocktest.New(real.Add(-lag))
	f := newFixtureAt(t, clk)
	f.timeBound = authn.NewTimeBound(clk, f.cfg.Trust.ClockSkew)
	f.timeBound.ObserveRegistryTime(real) // the anchor's Open: the registry's clock now
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
	tokA, gA := f.crafted("doc/first", "worker-a", 1)
	old := string(f.issuer.SignStatus(f.issuer.StatusFor(tokA, gA, real.Add(-lag))))
	f.do(call{path: "/v1/docs/first", owner: "worker-a", grant: string(tokA), status: old, body: "a"}).expect(t, 403, fencegate.CodeStatusStale)
	if n := f.back.count(); n != 0 {
		t.Fatalf("the backend received %d writes, want none", n)
	}
}
