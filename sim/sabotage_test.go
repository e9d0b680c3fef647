package sim

import (
	"strings"
	"testing"
)

// TestGateCanFail breaks one part at a time and checks that the gate
// fails on the counter that part protects, with a shrunk history shorter
// than the failing round's script.
func TestGateCanFail(t *testing.T) {
	cases := []struct {
		sab     Sabotage
		modes   []string
		faults  []Fault
		counter func(*Report) int
		row     string
	}{
		{SabotageShadow, nil, AllFaults(), func(r *Report) int { return r.Skipped }, "protected mutations that skipped authentication or the fence check"},
		{SabotageStatusLies, []string{"registry"}, []Fault{FaultPause}, func(r *Report) int { return r.Stale }, "stale accepted"},
		{SabotageTrustForger, nil, []Fault{FaultForged}, func(r *Report) int { return r.Forged }, "forged accepted"},
		{SabotageReadWrites, []string{"registry"}, []Fault{FaultPause}, func(r *Report) int { return r.AuthChanged }, "auth failures that changed a highest fence"},
	}
	for _, c := range cases {
		t.Run(string(c.sab), func(t *testing.T) {
			rep, out := run(t, Options{Rounds: 100, Seed: 3, Faults: c.faults, Modes: c.modes, Replicas: 2, Sabotage: c.sab})
			if rep.Gate() == "" || !strings.Contains(out, "\ngate: FAIL ") || !strings.HasSuffix(strings.TrimSpace(out), rep.Gate()) {
				t.Fatalf("the gate did not fail:\n%s", out)
			}
			if c.counter(rep) == 0 || strings.Contains(out, "\n"+c.row+"  0\n") {
				t.Errorf("%s is 0:\n%s", c.row, out)
			}
			f := rep.Failure
			if f == nil {
				t.Fatalf("no failing round reported:\n%s", out)
			}
			if len(f.ShrunkEvents) == 0 || len(f.ShrunkEvents) >= f.Events {
				t.Errorf("history not shrunk: %d of %d events", len(f.ShrunkEvents), f.Events)
			}
			if len(f.ShrunkHistory) >= len(f.History) || !strings.Contains(strings.Join(f.ShrunkHistory, "\n"), "VIOLATION") {
				t.Errorf("shrunk history (%d lines) not shorter than the failing one (%d) or shows no violation:\n%s",
					len(f.ShrunkHistory), len(f.History), strings.Join(f.ShrunkHistory, "\n"))
			}
			if !strings.Contains(out, "shortest failing history") {
				t.Errorf("the shrunk history is not printed:\n%s", out)
			}
			t.Logf("\n%s", out)
		})
	}
}
