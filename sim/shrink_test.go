package sim

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestShrinkFindsTheCulprits: a failure that needs events 3 and 7 shrinks
// to exactly those two, within the budget; one that needs none of them
// shrinks to nothing; the budget is kept.
func TestShrinkFindsTheCulprits(t *testing.T) {
	var sc script
	for i := 1; i <= 20; i++ {
		sc.Events = append(sc.Events, event{ID: i, Kind: evWrite, At: time.Millisecond})
	}
	has := func(s script, id int) bool {
		return slices.ContainsFunc(s.Events, func(e event) bool { return e.ID == id })
	}
	got, err := shrink(sc, 1000, func(s script) (bool, error) { return has(s, 3) && has(s, 7), nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 || !has(got, 3) || !has(got, 7) {
		t.Errorf("shrunk to %v, want events 3 and 7", got.Events)
	}
	runs := 0
	if _, err := shrink(sc, 5, func(script) (bool, error) { runs++; return false, nil }); err != nil || runs != 5 {
		t.Errorf("budget 5: %d runs, %v", runs, err)
	}
	boom := errors.New("boom")
	if _, err := shrink(sc, 5, func(script) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("error not returned: %v", err)
	}
}

func TestParseFaults(t *testing.T) {
	for in, want := range map[string]int{"": len(AllFaults()), "all": len(AllFaults()), "none": 0, "net,pause,net": 2} {
		got, err := ParseFaults(in)
		if err != nil || len(got) != want {
			t.Errorf("ParseFaults(%q) = %v, %v; want %d kinds", in, got, err, want)
		}
	}
	if _, err := ParseFaults("net,nope"); !errors.Is(err, ErrOptions) {
		t.Errorf("unknown fault: %v", err)
	}
	// The gate's set leaves the pending faults out; they can be named.
	all, _ := ParseFaults("all")
	for _, p := range PendingFaults() {
		if slices.Contains(all, p) {
			t.Errorf("pending fault %s is in the gate's set", p)
		}
		got, err := ParseFaults("all," + string(p))
		if err != nil || len(got) != len(AllFaults())+1 || !slices.Contains(got, p) {
			t.Errorf("ParseFaults(all,%s) = %v, %v", p, got, err)
		}
	}
}
