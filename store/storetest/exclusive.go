package storetest

import (
	"sync"
	"testing"

	"github.com/fencegate/fencegate/store"
)

// runExclusive races N goroutines on Begin for one resource, round after
// round: exactly one may PROCEED each time.
func runExclusive(t *testing.T, newStore Factory) {
	const goroutines, rounds = 32, 12
	f := newFixture(t, newStore(t))
	const r = "contended"
	var highest uint64
	for round := range rounds {
		// Odd rounds: every goroutine is a new owner with its own fence.
		// Even rounds: all send the next segment of the current owner, with
		// different payloads.
		attempts := make([]store.BeginInput, goroutines)
		for i := range attempts {
			if round%2 == 1 || highest == 0 {
				attempts[i] = Attempt(r, highest+1+uint64(i), 1, "p")
			} else {
				rec := f.record(r)
				attempts[i] = Attempt(r, highest, rec.LastSeq+1, "p"+string(rune('a'+i)))
			}
		}
		results := make([]store.BeginResult, goroutines)
		errs := make([]error, goroutines)
		var start, wg sync.WaitGroup
		start.Add(1)
		for i := range attempts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start.Wait()
				results[i], errs[i] = f.s.Begin(f.ctx, attempts[i])
			}()
		}
		start.Done()
		wg.Wait()
		winner := -1
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("round %d: Begin: %v", round, errs[i])
			}
			switch res.Decision {
			case store.DecisionProceed:
				if winner >= 0 {
					t.Fatalf("round %d: %s and %s both PROCEED", round, attempts[winner].Ref().OperationID(), attempts[i].Ref().OperationID())
				}
				winner = i
			case store.DecisionBusy, store.DecisionStaleOwner:
			default:
				t.Fatalf("round %d: unexpected %s (%s)", round, res.Decision, res.Detail)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody proceeded", round)
		}
		w := attempts[winner]
		rec := f.record(r)
		if rec.InFlight == nil || rec.InFlight.Ref() != w.Ref() || rec.InFlight.PayloadDigest != w.PayloadDigest || rec.HighestFence != w.Fence {
			t.Fatalf("round %d: record %s, winner %s", round, dump(rec), w.Ref().OperationID())
		}
		// Every loser with a lower fence than the winner's was stale.
		for i, res := range results {
			if i != winner && attempts[i].Fence < w.Fence && res.Decision == store.DecisionProceed {
				t.Fatalf("round %d: lower fence proceeded", round)
			}
		}
		f.commit(w.Ref())
		highest = w.Fence
	}
}
