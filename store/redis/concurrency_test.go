package redis

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// Many sidecars, each with its own client (its own connections), race on
// one resource: every round, each tries the next segment of the current
// owner with its own payload, or a new fence. Exactly one attempt per
// (fence, seq) proceeds, its Commit is the receipt stored, and the record
// ends at the number of rounds won.
func TestSeparateClientsAcceptOnce(t *testing.T) {
	srv := redistest.Start(t)
	const clients, rounds, resource = 8, 40, "shared"
	stores := make([]*Store, clients)
	for i := range stores {
		stores[i] = openPrefix(t, srv, "shared")
	}
	ctx := context.Background()
	type win struct {
		client int
		in     store.BeginInput
	}
	var wins []win
	fence := uint64(1)
	for round := range rounds {
		rec, err := stores[0].Record(ctx, resource)
		next := uint64(1)
		if err == nil {
			next = rec.LastSeq + 1
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		newOwner := round%10 == 9
		attempts := make([]store.BeginInput, clients)
		for i := range attempts {
			if newOwner {
				attempts[i] = storetest.Attempt(resource, fence+1+uint64(i), 1, "p")
			} else {
				attempts[i] = storetest.Attempt(resource, fence, next, "p"+strconv.Itoa(round)+"-"+strconv.Itoa(i))
			}
		}
		results := make([]store.BeginResult, clients)
		errs := make([]error, clients)
		var start, wg sync.WaitGroup
		start.Add(1)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start.Wait()
				results[i], errs[i] = stores[i].Begin(ctx, attempts[i])
			}()
		}
		start.Done()
		wg.Wait()
		winner := -1
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("round %d client %d: %v", round, i, errs[i])
			}
			switch res.Decision {
			case store.DecisionProceed:
				if winner >= 0 {
					t.Fatalf("round %d: clients %d and %d both PROCEED", round, winner, i)
				}
				winner = i
			case store.DecisionBusy, store.DecisionStaleOwner:
			default:
				t.Fatalf("round %d client %d: unexpected %s (%s)", round, i, res.Decision, res.Detail)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody proceeded", round)
		}
		w := attempts[winner]
		// Every client commits "its" attempt; only the winner's is in flight.
		for i := range clients {
			_, err := stores[i].Commit(ctx, storetest.Answer(attempts[i].Ref()))
			if i == winner && err != nil {
				t.Fatalf("round %d: winner's commit: %v", round, err)
			}
			if i != winner && attempts[i].Ref() != w.Ref() && !errors.Is(err, store.ErrNotInFlight) {
				t.Fatalf("round %d: loser %d's commit: %v, want ErrNotInFlight", round, i, err)
			}
		}
		wins = append(wins, win{winner, w})
		fence = w.Fence
	}
	// Read back through another client: one receipt per won round, the
	// winner's payload.
	check := openPrefix(t, srv, "shared")
	for _, w := range wins {
		rc, err := check.Receipt(ctx, store.ReceiptKey{Resource: resource, Fence: w.in.Fence, Seq: w.in.Seq})
		if err != nil {
			t.Fatal(err)
		}
		if rc.PayloadDigest != w.in.PayloadDigest {
			t.Fatalf("receipt of %s holds payload %s, winner sent %s", w.in.Ref().OperationID(), rc.PayloadDigest, w.in.PayloadDigest)
		}
	}
	st, err := check.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Receipts != rounds || st.Resources != 1 {
		t.Fatalf("stats %+v, want %d receipts of 1 resource", st, rounds)
	}
}
