package store_test

import (
	"errors"
	"iter"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

const compactRes = "compact-res"

// keysOf lists the receipts of fences 1..h-1 (segments 1..maxSeq each)
// and of fence h (segments 1..last), ascending.
func keysOf(h, last, maxSeq uint64) []store.ReceiptStamp {
	var out []store.ReceiptStamp
	for f := uint64(1); f <= h; f++ {
		n := maxSeq
		if f == h {
			n = last
		}
		for s := uint64(1); s <= n; s++ {
			out = append(out, store.ReceiptStamp{
				Key:         store.ReceiptKey{Resource: compactRes, Fence: f, Seq: s},
				OperationID: fencegate.OperationID(storetest.Root(f), s),
				AcceptedAt:  storetest.T0,
			})
		}
	}
	return out
}

// seq yields stamps and counts how many were pulled.
func seq(stamps []store.ReceiptStamp, pulled *int) iter.Seq2[store.ReceiptStamp, error] {
	return func(yield func(store.ReceiptStamp, error) bool) {
		for _, st := range stamps {
			*pulled++
			if !yield(st, nil) {
				return
			}
		}
	}
}

func recordAt(h, last uint64) store.Record {
	return store.Record{
		Resource: compactRes, HighestFence: h, Root: storetest.Root(h), Lease: "lease-" + strconv.FormatUint(h, 10),
		GrantDigest: storetest.Digest("grant-" + strconv.FormatUint(h, 10)),
		Evidence:    store.Evidence{IssuerEpoch: 1, BackendRevision: 10 * h}, AcceptedAt: storetest.T0, LastSeq: last,
	}
}

// Every receipt PlanCompaction deletes, over every small state, is one whose
// replay Decide refuses: the conformance suite checks the same end to end.
func TestCompactedSegmentNeverProceeds(t *testing.T) {
	for h := uint64(1); h <= 4; h++ {
		for last := uint64(0); last <= 4; last++ {
			for _, inFlight := range []bool{false, true} {
				rec := recordAt(h, last)
				if inFlight {
					in := storetest.Attempt(compactRes, h, last+1, "next")
					rec.InFlight = &store.Mutation{OpRef: in.Ref(), OperationID: in.Ref().OperationID(), PayloadDigest: in.PayloadDigest,
						GrantDigest: in.GrantDigest, Lease: in.Lease, Evidence: in.Evidence, BegunAt: in.Now, Deadline: in.Deadline,
						Attempts: 1, State: store.MutationInFlight}
				}
				stamps := keysOf(h, last, 4)
				pulled := 0
				plan, err := store.PlanCompaction(rec, len(stamps), seq(stamps, &pulled), nil,
					store.CompactInput{Now: storetest.T0.Add(time.Hour), MaxAge: time.Nanosecond, MaxDeletes: 1000}, 1000)
				if err != nil {
					t.Fatal(err)
				}
				wantDeleted := len(stamps)
				if last > 0 {
					wantDeleted-- // the last accepted segment stays
				}
				if len(plan.Receipts) != wantDeleted || plan.More {
					t.Fatalf("h %d last %d: deleted %d of %d (more %v), want %d", h, last, len(plan.Receipts), len(stamps), plan.More, wantDeleted)
				}
				for _, st := range plan.Receipts {
					for _, payload := range []string{"p", "q"} {
						in := storetest.Attempt(compactRes, st.Key.Fence, st.Key.Seq, payload)
						for _, retry := range []bool{false, true} {
							in.RetryUnknown = retry
							res, _, err := store.Decide(rec, nil, in)
							if err != nil || res.Decision == store.DecisionProceed {
								t.Fatalf("h %d last %d in flight %v: replay of compacted %v: %s (%s), %v",
									h, last, inFlight, st.Key, res.Decision, res.Detail, err)
							}
						}
					}
				}
			}
		}
	}
}

// The walk stops at the first receipt kept and pulls at most budget+1.
func TestPlanCompactionPullsLittle(t *testing.T) {
	stamps := keysOf(3, 50, 50)
	for i := range stamps {
		stamps[i].AcceptedAt = storetest.T0.Add(time.Duration(i) * time.Minute)
	}
	rec := recordAt(3, 50)
	cases := []struct {
		name       string
		in         store.CompactInput
		budget     int
		wantDelete int
		wantMore   bool
		wantPulled int
	}{
		{"young first receipt", store.CompactInput{MaxAge: 200 * time.Minute}, 100, 0, false, 1},
		{"ten old", store.CompactInput{MaxAge: 140 * time.Minute}, 100, 10, false, 11},
		{"budget", store.CompactInput{MaxAge: 140 * time.Minute}, 4, 4, true, 5},
		{"budget exactly", store.CompactInput{MaxAge: 140 * time.Minute}, 10, 10, false, 11},
		{"count", store.CompactInput{MaxPerResource: 140}, 100, 10, false, 11},
	}
	for _, c := range cases {
		c.in.Now = storetest.T0.Add(150 * time.Minute)
		c.in.MaxDeletes = 1000
		pulled := 0
		plan, err := store.PlanCompaction(rec, len(stamps), seq(stamps, &pulled), nil, c.in, c.budget)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Receipts) != c.wantDelete || plan.More != c.wantMore || pulled != c.wantPulled {
			t.Errorf("%s: deleted %d more %v pulled %d; want %d %v %d", c.name, len(plan.Receipts), plan.More, pulled, c.wantDelete, c.wantMore, c.wantPulled)
		}
		if len(plan.Receipts) > 0 && !reflect.DeepEqual(plan.Receipts, stamps[:len(plan.Receipts)]) {
			t.Errorf("%s: deleted %v, not the oldest", c.name, plan.Receipts)
		}
	}
}

func TestPlanCompactionRefusesMismatchedState(t *testing.T) {
	in := store.CompactInput{Now: storetest.T0, MaxPerResource: 1, MaxDeletes: 10}
	stamps := keysOf(2, 2, 2)
	pulled := 0
	if _, err := store.PlanCompaction(store.Record{}, len(stamps), seq(stamps, &pulled), nil, in, 10); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("receipts without a record: %v, want ErrCorrupt", err)
	}
	other := recordAt(2, 2)
	other.Resource = "other"
	if _, err := store.PlanCompaction(other, len(stamps), seq(stamps, &pulled), nil, in, 10); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("receipts of another resource: %v, want ErrCorrupt", err)
	}
	q := store.Quarantine{ID: "q", OpRef: store.OpRef{Resource: "other", Fence: 1, Root: "r", Seq: 1}}
	if _, err := store.PlanCompaction(recordAt(2, 2), 0, seq(nil, &pulled), []store.Quarantine{q, q}, in, 10); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("quarantine of another resource: %v, want ErrCorrupt", err)
	}
	if _, err := store.PlanCompaction(recordAt(2, 2), 0, seq(nil, &pulled), nil, store.CompactInput{Now: storetest.T0, MaxDeletes: 1}, 10); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("no limit: %v, want ErrInvalidInput", err)
	}
}

// Receipts that break the record's invariants (beyond the last segment,
// or of the mutation in flight) are kept, whatever the limits.
func TestPlanCompactionKeepsOddReceipts(t *testing.T) {
	rec := recordAt(2, 1)
	in := storetest.Attempt(compactRes, 2, 2, "next")
	rec.InFlight = &store.Mutation{OpRef: in.Ref(), OperationID: in.Ref().OperationID(), State: store.MutationUnknown}
	stamps := keysOf(2, 3, 0) // (2,1), (2,2) of the unknown mutation, (2,3) beyond
	pulled := 0
	plan, err := store.PlanCompaction(rec, len(stamps), seq(stamps, &pulled), nil,
		store.CompactInput{Now: storetest.T0.Add(time.Hour), MaxAge: time.Nanosecond, MaxPerResource: 1, MaxDeletes: 10}, 10)
	if err != nil || len(plan.Receipts) != 0 {
		t.Fatalf("deleted %v, %v; want nothing", plan.Receipts, err)
	}
}
