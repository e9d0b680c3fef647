package sim

import (
	"context"
	"strings"
	"testing"
)

func run(t *testing.T, o Options) (*Report, string) {
	t.Helper()
	rep, err := Run(context.Background(), withRegistry(t, withStore(t, o)))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Write(&b)
	return rep, b.String()
}

// gateRows are rows the gate's table must have.
var gateRows = []string{"rounds", "writes attempted", "accepted", "stale accepted", "forged accepted",
	"auth failures that changed a highest fence", "protected mutations that skipped authentication or the fence check",
	"segment gaps accepted", "regressions accepted", "conflicting payloads accepted", "backend data that differs from the receipts",
	"unknown outcomes", "max virtual time in UNKNOWN (settleable)", "unknown outcomes no evidence can settle (left UNKNOWN)", "handoff latency p50/p99 (virtual)"}

// TestGatePasses runs a few hundred rounds with every fault and checks the
// table, the verdict, and that the faults were really met: each answer
// code below comes from a fault or attack of the script.
func TestGatePasses(t *testing.T) {
	rep, out := run(t, Options{Rounds: 400, Seed: 11, Faults: AllFaults(), Replicas: 3})
	if g := rep.Gate(); g != "" {
		t.Fatalf("gate failed: %s\n%s", g, out)
	}
	if !strings.HasSuffix(out, "gate: PASS\n") {
		t.Errorf("last line is not gate: PASS:\n%s", out)
	}
	for _, row := range gateRows {
		if !strings.Contains(out, "\n"+row+"  ") && !strings.HasPrefix(out, row+"  ") {
			t.Errorf("table lacks the row %q:\n%s", row, out)
		}
	}
	if rep.Accepted < rep.Rounds || rep.Handoffs < rep.Rounds/2 || rep.HandoffP99 < rep.HandoffP50 {
		t.Errorf("too little happened: %d accepted, %d hand-offs (p50 %s, p99 %s) in %d rounds", rep.Accepted, rep.Handoffs, rep.HandoffP50, rep.HandoffP99, rep.Rounds)
	}
	for _, code := range []string{"STALE_OWNER", "GRANT_INVALID", "RESOURCE_MISMATCH", "EPOCH_REVOKED", "GRANT_NOT_HELD",
		"STATUS_STALE", "MUTATION_UNKNOWN", "FENCE_REGRESSION", "SEGMENT_GAP", "BACKEND_UNAVAILABLE", "REGISTRY_UNAVAILABLE", "RESOURCE_BUSY"} {
		if rep.Codes[code] == 0 {
			t.Errorf("no %s answer in %d rounds: the fault behind it never happened (codes %v)", code, rep.Rounds, rep.Codes)
		}
	}
	if rep.MaxUnknown == 0 || rep.Unknowns == 0 || rep.NoEvidence == 0 {
		t.Errorf("unknown outcomes: %d, longest settleable %s, %d that no evidence could settle: the operator and the loops met nothing",
			rep.Unknowns, rep.MaxUnknown, rep.NoEvidence)
	}
	// The modelled parts ran: the loops, the operator, the SDK workers,
	// the rotation, the conflicting resends.
	for _, k := range []string{seenEffectQuery, seenOperator, seenCompacted, seenReload, seenSDK, seenSDKLocal, seenConflict} {
		if rep.Seen[k] == 0 {
			t.Errorf("%s: none in %d rounds (%v)", k, rep.Rounds, rep.Seen)
		}
	}
	if rep.Codes["SEGMENT_CONFLICT"] == 0 {
		t.Errorf("no SEGMENT_CONFLICT answer (codes %v)", rep.Codes)
	}
}

// TestNoFaults: without faults and attacks nothing is refused but what the
// hand-off itself refuses, and every round hands the resource over.
func TestNoFaults(t *testing.T) {
	rep, out := run(t, Options{Rounds: 100, Seed: 5, Faults: nil})
	if g := rep.Gate(); g != "" {
		t.Fatalf("gate failed: %s\n%s", g, out)
	}
	for code := range rep.Codes {
		switch code {
		case "201", "STATUS_STALE", "GRANT_NOT_HELD", "STALE_OWNER":
		default:
			t.Errorf("answer %s without any fault (%v)", code, rep.Codes)
		}
	}
}

// TestDeterministic: the same seed gives the same table and the same event
// histories, whatever the number of workers; another seed does not.
func TestDeterministic(t *testing.T) {
	o := Options{Rounds: 60, Seed: 42, Faults: AllFaults(), Replicas: 3, History: true}
	o.Workers = 1
	a, outA := run(t, o)
	o.Workers = 4
	b, outB := run(t, o)
	if outA != outB {
		t.Errorf("two runs of seed 42 differ:\n%s\n---\n%s", outA, outB)
	}
	if a.HistoryHash == "" || a.HistoryHash != b.HistoryHash {
		t.Errorf("history hashes differ: %q vs %q", a.HistoryHash, b.HistoryHash)
	}
	o.Seed = 43
	c, _ := run(t, o)
	if c.HistoryHash == a.HistoryHash {
		t.Error("seeds 42 and 43 gave the same history")
	}
	// A single round replays alone, with the same history.
	m, err := newMaterials(42)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	r1, err := runRound(m, scriptOf(o, 7), roundSeed(42, 7), SabotageNone, true, false)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := runRound(m, scriptOf(o, 7), roundSeed(42, 7), SabotageNone, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r1.History, "\n") != strings.Join(r2.History, "\n") || len(r1.History) == 0 {
		t.Errorf("round 7 does not replay:\n%s\n---\n%s", strings.Join(r1.History, "\n"), strings.Join(r2.History, "\n"))
	}
}

// TestReplay: Replay of one round gives its script and history, the same
// twice, and the violations of a failing round.
func TestReplay(t *testing.T) {
	o := Options{Rounds: 1, Seed: 9, Faults: AllFaults(), Replicas: 2}
	h1, v1, err := Replay(o, 5)
	if err != nil {
		t.Fatal(err)
	}
	h2, _, _ := Replay(o, 5)
	if len(v1) != 0 || len(h1) < 3 || strings.Join(h1, "\n") != strings.Join(h2, "\n") || !strings.HasPrefix(h1[0], "config ") || !strings.HasPrefix(h1[1], "script #1 acquire") {
		t.Errorf("replay of round 5: violations %v, history:\n%s", v1, strings.Join(h1, "\n"))
	}
	o.Sabotage, o.Modes, o.Faults = SabotageStatusLies, []string{"registry"}, []Fault{FaultPause}
	bad := -1
	for i := range 50 {
		if _, v, _ := Replay(o, i); len(v) > 0 {
			bad = i
			break
		}
	}
	if bad < 0 {
		t.Fatal("no round of 50 failed with a lying status source")
	}
	if _, _, err := Replay(o, -1); err == nil {
		t.Error("round -1 replayed")
	}
}
