package sim

import (
	"testing"
	"time"
)

// TestOracleStale pins the staleness rule of each status mode to the
// design's numbers: registry mode needs the lease held at the instant;
// proof mode accepts exactly what a signed HELD proof allows (now < exp,
// now - iat <= maxAge) and nothing more than maxAge after the lease ended.
func TestOracleStale(t *testing.T) {
	const base = int64(1_900_000_000_000)
	ms := func(d int64) time.Duration { return time.Duration(d) * time.Millisecond }
	o := newOracle()
	g := &grantInfo{lease: "l1"}
	o.leases["l1"] = &leaseInfo{expiresAt: base + 2000, proofs: []proofWindow{{iat: base + 1000, exp: base + 2000}}}
	maxAge := ms(500)
	check := func(name string, at int64, proof bool, stale bool) {
		t.Helper()
		why := o.stale(g, ms(at), base+at, 0, proof, maxAge)
		if (why != "") != stale {
			t.Errorf("%s at %d ms (proof %v): stale %q, want stale=%v", name, at, proof, why, stale)
		}
	}
	check("held", 1200, false, false)
	check("expiry instant", 2000, false, true)
	check("proof fresh", 1500, true, false)
	check("proof one ms too old", 1501, true, true)
	check("proof issued later", 999, true, false) // iat in the future of now: allowed (skew)
	o.leases["l1"].proofs = append(o.leases["l1"].proofs, proofWindow{iat: base + 1800, exp: base + 2000})
	check("proof at its exp", 2000, true, true)
	check("newer proof", 1999, true, false)
	o.end("l1", ms(1900), "released")
	check("released, registry mode", 1901, false, true)
	check("released, within the window", 1999, true, false)
	o.leases["l1"].expiresAt = base + 5000
	o.leases["l1"].proofs = append(o.leases["l1"].proofs, proofWindow{iat: base + 1900, exp: base + 5000})
	check("released, window edge", 2400, true, false)
	check("released, past the window", 2401, true, true)
	if why := o.stale(&grantInfo{lease: "nope"}, 0, base, 0, true, maxAge); why == "" {
		t.Error("an unknown lease is not stale")
	}
}

// TestOracleRestore: a restore forgets leases issued after the snapshot
// (they end now) and brings back the snapshot's state of the others,
// keeping the proofs already signed.
func TestOracleRestore(t *testing.T) {
	o := newOracle()
	o.leases["old"] = &leaseInfo{expiresAt: 100}
	o.snapshot()
	o.leases["old"].proofs = []proofWindow{{1, 2}}
	o.end("old", time.Second, "released")
	o.leases["new"] = &leaseInfo{expiresAt: 200}
	if !o.restore(2 * time.Second) {
		t.Fatal("restore did nothing")
	}
	if li := o.leases["old"]; li.ended || len(li.proofs) != 1 {
		t.Errorf("old lease after restore: %+v", *li)
	}
	if li := o.leases["new"]; !li.ended || li.cause != "restored" || li.endedAt != 2*time.Second {
		t.Errorf("new lease after restore: %+v", *li)
	}
	if (&oracle{}).restore(0) {
		t.Error("restore without a snapshot")
	}
}
