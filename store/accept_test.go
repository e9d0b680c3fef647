package store_test

import (
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// accept is an AcceptInput of storetest's attempt.
func accept(resource string, fence, seq uint64, payload string) store.AcceptInput {
	return store.AcceptInput{BeginInput: storetest.Attempt(resource, fence, seq, payload)}
}

// TestDecideAcceptSettlesAtOnce: a PROCEED's change is the commit's: the
// record at the new fence and segment with nothing in flight, and the
// receipt (status 200 when none is given, the owner, the response kept).
func TestDecideAcceptSettlesAtOnce(t *testing.T) {
	in := accept("r", 5, 1, "p1")
	in.Response = store.StoredResponse{Body: []byte("ok")}
	res, ch, err := store.DecideAccept(store.Record{}, nil, in, 0)
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("%s, %v: want PROCEED", res.Decision, err)
	}
	if !ch.WriteRecord || ch.Record.HighestFence != 5 || ch.Record.LastSeq != 1 || ch.Record.InFlight != nil {
		t.Fatalf("record %+v (written %v): want fence 5, segment 1, no marker", ch.Record, ch.WriteRecord)
	}
	rc := ch.Receipt
	if !ch.WriteReceipt || rc == nil || rc.Response.Status != 200 || rc.BackendStatus != 200 || string(rc.Response.Body) != "ok" ||
		rc.Owner != in.Owner || rc.PayloadDigest != in.PayloadDigest || rc.ID != store.ReceiptID(in.Ref(), in.PayloadDigest) {
		t.Fatalf("receipt %+v (written %v): want status 200, the body, the owner and the payload", rc, ch.WriteReceipt)
	}
	if res.Receipt == nil || res.Receipt.ID != rc.ID || res.Mutation != nil || res.Record.InFlight != nil {
		t.Fatalf("result %+v: want the receipt and no mutation", res)
	}
}

// TestDecideAcceptRefusals: every other decision is Decide's, change and
// all: a replay and a stale owner write nothing, a conflict writes its
// quarantine entry and no receipt, a fence issued twice pauses.
func TestDecideAcceptRefusals(t *testing.T) {
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), LastSeq: 1, Evidence: store.Evidence{IssuerEpoch: 1, BackendRevision: 50}}
	stored := &store.Receipt{ID: "rcpt-1", OpRef: storetest.Attempt("r", 5, 1, "p1").Ref(), PayloadDigest: storetest.Digest("p1")}
	twin := accept("r", 5, 1, "p1")
	twin.Root = "other-root"
	for _, c := range []struct {
		name           string
		rc             *store.Receipt
		in             store.AcceptInput
		want           store.Decision
		writes, paused bool
	}{
		{"replay", stored, accept("r", 5, 1, "p1"), store.DecisionReplay, false, false},
		{"stale owner", nil, accept("r", 4, 1, "x"), store.DecisionStaleOwner, false, false},
		{"segment gap", nil, accept("r", 5, 3, "x"), store.DecisionSegmentGap, false, false},
		{"conflict", stored, accept("r", 5, 1, "p2"), store.DecisionSegmentConflict, true, false},
		{"issued twice", stored, twin, store.DecisionFenceRegression, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, ch, err := store.DecideAccept(rec, c.rc, c.in, 0)
			if err != nil || res.Decision != c.want {
				t.Fatalf("%s, %v: want %s", res.Decision, err, c.want)
			}
			if ch.Writes() != c.writes || ch.WriteReceipt || (ch.Record.Pause != nil) != c.paused {
				t.Fatalf("change %+v: want writes %v, no receipt, paused %v", ch, c.writes, c.paused)
			}
			if c.want == store.DecisionReplay && (res.Receipt == nil || res.Receipt.ID != stored.ID) {
				t.Fatalf("replay without its receipt: %+v", res)
			}
		})
	}
}
