package store_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// FuzzDecideEnforcement: no panic on any input; a valid input keeps the
// entry's invariants (bounded history, EnforcedSince set exactly when the
// last event is an ENFORCE); an invalid one is an *InputError.
func FuzzDecideEnforcement(f *testing.F) {
	f.Add("PUT /v1/items/{}", "ENFORCE", "", int64(0), uint8(3))
	f.Add("PUT /v1/items/{}", "FORCED_DOWNGRADE", "to shadow", int64(3600), uint8(70))
	f.Add("", "ENFORCE", "", int64(0), uint8(0))
	f.Add("PUT /\x00", "SHADOW", "\xff", int64(-1), uint8(1))
	f.Fuzz(func(t *testing.T, shape, kind, detail string, offset int64, steps uint8) {
		var cur *store.Enforcement
		for i := range int(steps) {
			k := kind
			if i%2 == 1 {
				k = store.EnforcementForcedDowngrade
			}
			in := store.EnforcementInput{Shape: shape, Kind: k, Detail: detail, Now: storetest.T0.Add(time.Duration(offset) + time.Duration(i)*time.Second)}
			next, ch, err := store.DecideEnforcement(cur, in)
			changed := ch.Writes()
			if err != nil {
				if in.Validate() == nil {
					t.Fatalf("valid input refused: %v", err)
				}
				return
			}
			if len(next.History) > store.MaxEnforcementHistory || next.Shape != shape {
				t.Fatalf("entry %+v", next)
			}
			if n := len(next.History); n > 0 {
				last := next.History[n-1]
				if (last.Kind == store.EnforcementEnforce) != next.Enforced() || (next.Enforced() && !next.EnforcedSince.Equal(last.At)) {
					t.Fatalf("EnforcedSince %v, last event %+v", next.EnforcedSince, last)
				}
			} else if changed || next.Enforced() {
				t.Fatalf("changed without an event: %+v", next)
			}
			if changed {
				cur = &next
			}
		}
	})
}
