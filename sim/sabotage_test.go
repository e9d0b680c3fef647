package sim

import (
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/pgtest"
)

// failCase is one way to break the gate: a sabotage or a pending fault,
// the faults it needs, and the counter (and table row) that must catch it.
type failCase struct {
	sab     Sabotage
	modes   []string
	faults  []Fault
	rounds  int
	counter func(*Report) int
	row     string
	// mark is what the shrunk history must show (VIOLATION, or OVER
	// BUDGET for the hand-off budget, which fails in number).
	mark string
	// postgres runs c on store/postgres (a database of the test's own),
	// shrinking with fewer re-runs (shrinkRuns).
	postgres   bool
	shrinkRuns int
}

// checkFails runs c and checks that the gate fails on c's counter, with a
// shrunk history shorter than the failing round's script.
func checkFails(t *testing.T, c failCase) {
	t.Helper()
	rounds := c.rounds
	if rounds == 0 {
		rounds = 100
	}
	mark := c.mark
	if mark == "" {
		mark = "VIOLATION"
	}
	o := Options{Rounds: rounds, Seed: 3, Faults: c.faults, Modes: c.modes, Replicas: 2, Sabotage: c.sab, MaxShrinkRuns: c.shrinkRuns}
	if c.postgres {
		o.Postgres = pgtest.Database(t)
	}
	rep, out := run(t, o)
	if rep.Gate() == "" || !strings.Contains(out, "\ngate: FAIL ") || !strings.HasSuffix(strings.TrimSpace(out), rep.Gate()) {
		t.Fatalf("the gate did not fail:\n%s", out)
	}
	if c.counter(rep) == 0 || strings.Contains(out, "\n"+c.row+"  0\n") || !strings.Contains(out, "\n"+c.row+"  ") {
		t.Errorf("%s is 0 (or not in the table):\n%s", c.row, out)
	}
	f := rep.Failure
	if f == nil {
		t.Fatalf("no failing round reported:\n%s", out)
	}
	if len(f.ShrunkEvents) == 0 || len(f.ShrunkEvents) >= f.Events {
		t.Errorf("history not shrunk: %d of %d events", len(f.ShrunkEvents), f.Events)
	}
	if len(f.ShrunkHistory) >= len(f.History) || !strings.Contains(strings.Join(f.ShrunkHistory, "\n"), mark) {
		t.Errorf("shrunk history (%d lines) not shorter than the failing one (%d) or shows no %s:\n%s",
			len(f.ShrunkHistory), len(f.History), mark, strings.Join(f.ShrunkHistory, "\n"))
	}
	if !strings.Contains(out, "shortest failing history") {
		t.Errorf("the shrunk history is not printed:\n%s", out)
	}
	t.Logf("\n%s", out)
}

// TestGateCanFail breaks one part at a time and checks that the gate
// fails on the counter that part protects.
func TestGateCanFail(t *testing.T) {
	for _, c := range []failCase{
		{sab: SabotageShadow, faults: AllFaults(), counter: func(r *Report) int { return r.Skipped }, row: "protected mutations that skipped authentication or the fence check"},
		{sab: SabotageStatusLies, modes: []string{"registry"}, faults: []Fault{FaultPause}, counter: func(r *Report) int { return r.Stale }, row: "stale accepted"},
		{sab: SabotageTrustForger, faults: []Fault{FaultForged}, counter: func(r *Report) int { return r.Forged }, row: "forged accepted"},
		{sab: SabotageReadWrites, modes: []string{"registry"}, faults: []Fault{FaultPause}, counter: func(r *Report) int { return r.AuthChanged }, row: "auth failures that changed a highest fence"},
		// The unknown bound: with no reconcile loop and no operator, an
		// outcome the backend's effect query could settle stays UNKNOWN.
		{sab: SabotageNoReconcile, faults: []Fault{FaultLostAck}, counter: func(r *Report) int { return r.UnknownOver }, row: "unknown outcomes over the 15-minute budget"},
		// Resent segments: a store that takes another payload for a replay.
		{sab: SabotageConflictReplays, faults: []Fault{FaultConflict}, counter: func(r *Report) int { return r.Conflicts }, row: "conflicting payloads accepted"},
		// The hand-off budget: a registry that keeps released leases.
		{sab: SabotageReleaseIgnored, counter: func(r *Report) int { return r.HandoffOver }, row: "hand-offs over their budget (at most 1%)", mark: "OVER BUDGET"},
		// The SDK's promise: a Holder whose clock runs slow sends after
		// its lease expired (the sidecar still refuses it).
		{sab: SabotageSDKSlowClock, faults: []Fault{FaultPause}, rounds: 300, counter: func(r *Report) int { return r.SDKStale }, row: "writes the SDK sent after its lease ended"},
		// Story 1: "not applied" settled before the quiet time; the backend
		// applies the write after the sidecar's timeout and the effect
		// query's 404.
		{sab: SabotageNotQuiet, faults: []Fault{FaultLate}, counter: func(r *Report) int { return r.DataMismatch + r.Stale + r.Gaps }, row: "backend data that differs from the receipts"},
		// Story 8: the attacker's key added to the bundle file is trusted
		// when the pins follow the file.
		{sab: SabotageFilePins, faults: []Fault{FaultKeyAdd}, rounds: 300, counter: func(r *Report) int { return r.Forged }, row: "forged accepted"},
		// Stories 2 and 3: the fenced store emptied or put back, taken as it
		// is by sidecars without its outside anchor.
		{sab: SabotageUnanchored, faults: []Fault{FaultStoreLoss, FaultLostAck}, rounds: 300, counter: func(r *Report) int { return r.DataMismatch + r.Gaps + r.Stale }, row: "backend data that differs from the receipts"},
		// A proof-mode sidecar whose clock lags beyond trust.clockSkew and
		// judges proof windows by it alone.
		{sab: SabotageNoTimeBound, modes: []string{"proof"}, faults: []Fault{FaultSkewLag, FaultNet}, rounds: 300, counter: func(r *Report) int { return r.Stale }, row: "stale accepted"},
	} {
		t.Run(string(c.sab), func(t *testing.T) { checkFails(t, c) })
	}
}
