package pgfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/pgfence"
	"github.com/fencegate/fencegate/store"
)

// TestAcceptedWriteCommitsWithItsReceipt: an accepted write's business
// row, the record (fence and segment) and the receipt are all there once
// the transaction commits.
func TestAcceptedWriteCommitsWithItsReceipt(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	rc, err := w.write(a.request(1, "total=100"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if total, applied := w.row(); total != 100 || applied != 1 {
		t.Fatalf("row total=%d applied=%d, want 100, 1", total, applied)
	}
	rec := w.record()
	if rec.HighestFence != 5 || rec.LastSeq != 1 || rec.InFlight != nil {
		t.Fatalf("record %+v: want fence 5, segment 1, nothing in flight", rec)
	}
	rcs := w.receipts()
	if len(rcs) != 1 || rcs[0].ID != rc.ID || rcs[0].Owner != a.g.Owner || rcs[0].Response.Status != 200 {
		t.Fatalf("receipts %+v, want the one Apply returned (%s) with status 200", rcs, rc.ID)
	}
}

// TestRolledBackWriteLeavesNothing: the fence accepts, the business write
// then fails (its CHECK), the transaction rolls back: no row, no record,
// no receipt. The same request is accepted afresh afterwards, not taken
// for a replay.
func TestRolledBackWriteLeavesNothing(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	if _, err := w.write(a.request(1, "total=-1"), -1); err == nil || code(err) != "" {
		t.Fatalf("the business write's failure: %v, want the database's error", err)
	}
	if total, _ := w.row(); total != -1 {
		t.Fatalf("a business row survived the rollback (total %d)", total)
	}
	if rec := w.record(); rec.Exists() {
		t.Fatalf("a fence record survived the rollback: %+v", rec)
	}
	if rcs := w.receipts(); len(rcs) != 0 {
		t.Fatalf("receipts survived the rollback: %+v", rcs)
	}
	if _, err := w.write(a.request(1, "total=-1"), 10); err != nil {
		t.Fatalf("the same request after the rollback: %v, want accepted", err)
	}
}

// TestPausedOwner: the first owner (fence 5) writes segment 1 and stalls;
// its lease passes to the next owner (fence 6), who writes; the first
// wakes and writes segment 2 with its old grant and a proof it still
// holds. It is refused STALE_OWNER, and the row is the new owner's.
func TestPausedOwner(t *testing.T) {
	w := newWorld(t)
	a, b := w.lease(5), w.lease(6)
	if _, err := w.write(a.request(1, "a1"), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := w.write(b.request(1, "b1"), 200); err != nil {
		t.Fatal(err)
	}
	_, err := w.write(a.request(2, "a2"), 999)
	mustCode(t, err, fencegate.CodeStaleOwner)
	var p *fencegate.Problem
	if errors.As(err, &p); p.Status != 409 || p.Extra["highestFence"] != uint64(6) {
		t.Fatalf("problem %+v: want 409 with highestFence 6", p)
	}
	if total, applied := w.row(); total != 200 || applied != 2 {
		t.Fatalf("row total=%d applied=%d, want the new owner's 200 after 2 writes", total, applied)
	}
}

// TestLateDelivery: a write the first owner sent while it held the lease
// arrives after the next owner wrote, its proof expired meanwhile. The
// proof is STATUS_STALE on its own; with a higher fence accepted it is
// told STALE_OWNER, and nothing changes.
func TestLateDelivery(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	late := a.request(1, "a1")
	st := w.is.StatusFor([]byte(a.grant), a.g, w.is.Now.Add(-10*pgfence.DefaultProofMaxAge))
	late.Status = string(w.is.SignStatus(st))
	b := w.lease(6)
	if _, err := w.write(b.request(1, "b1"), 200); err != nil {
		t.Fatal(err)
	}
	_, err := w.write(late, 100)
	mustCode(t, err, fencegate.CodeStaleOwner)
	if total, _ := w.row(); total != 200 {
		t.Fatalf("row total %d, want 200", total)
	}
	if rec := w.record(); rec.HighestFence != 6 || rec.LastSeq != 1 {
		t.Fatalf("record %+v, want fence 6 segment 1", rec)
	}
}

// TestReplayIsAnsweredFromTheReceipt: the same segment with the same
// payload again (a retry after a lost answer) is ErrReplayed carrying the
// receipt, and the business write is not applied a second time.
func TestReplayIsAnsweredFromTheReceipt(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	rc, err := w.write(a.request(1, "total=100"), 100)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.write(a.request(1, "total=100"), 100)
	var rp *pgfence.Replayed
	if !errors.Is(err, pgfence.ErrReplayed) || !errors.As(err, &rp) || rp.Receipt.ID != rc.ID {
		t.Fatalf("replay: %v, want ErrReplayed with receipt %s", err, rc.ID)
	}
	if _, applied := w.row(); applied != 1 {
		t.Fatalf("the business write was applied %d times, want once", applied)
	}
}

// TestConflictingPayloadIsQuarantined: another payload under an accepted
// segment is SEGMENT_CONFLICT; its quarantine entry is kept although the
// service's transaction rolled back, and the row is unchanged.
func TestConflictingPayloadIsQuarantined(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	if _, err := w.write(a.request(1, "total=100"), 100); err != nil {
		t.Fatal(err)
	}
	_, err := w.write(a.request(1, "total=555"), 555)
	mustCode(t, err, fencegate.CodeSegmentConflict)
	q, qerr := w.st.ListQuarantined(context.Background(), resource)
	if qerr != nil || len(q) != 1 {
		t.Fatalf("quarantine %+v (%v), want the conflicting payload kept", q, qerr)
	}
	var p *fencegate.Problem
	if errors.As(err, &p); p.Extra["quarantineId"] != q[0].ID {
		t.Fatalf("problem names quarantine %v, want %s", p.Extra["quarantineId"], q[0].ID)
	}
	if total, applied := w.row(); total != 100 || applied != 1 {
		t.Fatalf("row total=%d applied=%d, want 100, 1", total, applied)
	}
}

// TestFenceRegressionPausesTheResource: the same fence under another
// operation root (a registry that issued fence 5 twice) is
// FENCE_REGRESSION, and the resource stays paused though the transaction
// rolled back: the next write, even a higher fence's, is refused.
func TestFenceRegressionPausesTheResource(t *testing.T) {
	w := newWorld(t)
	if _, err := w.write(w.lease(5).request(1, "a1"), 100); err != nil {
		t.Fatal(err)
	}
	_, err := w.write(w.lease(5).request(1, "twin"), 300)
	mustCode(t, err, fencegate.CodeFenceRegression)
	if rec := w.record(); rec.Pause == nil || rec.Pause.Reason != store.PauseFenceRegression {
		t.Fatalf("record %+v: want paused FENCE_REGRESSION", rec)
	}
	_, err = w.write(w.lease(9).request(1, "later"), 400)
	mustCode(t, err, fencegate.CodeFenceRegression)
	if total, _ := w.row(); total != 100 {
		t.Fatalf("row total %d, want 100", total)
	}
}

// TestAuthenticationFailureChangesNothing: a grant signed by a key the
// bundle does not hold, one bound to another owner, and a missing proof
// are refused with their codes before the store is read: no record.
func TestAuthenticationFailureChangesNothing(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	forged := a.request(1, "x")
	forged.Grant = forged.Grant[:len(forged.Grant)-4] + "AAAA"
	other := a.request(1, "x")
	other.Caller = "spiffe://example.org/ns/billing/sa/intruder"
	noProof := a.request(1, "x")
	noProof.Status = ""
	for _, c := range []struct {
		name string
		req  pgfence.Request
		want fencegate.Code
	}{
		{"bad signature", forged, fencegate.CodeGrantInvalid},
		{"another caller", other, fencegate.CodeOwnerMismatch},
		{"no proof", noProof, fencegate.CodeStatusStale},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.write(c.req, 1)
			mustCode(t, err, c.want)
		})
	}
	if rec := w.record(); rec.Exists() {
		t.Fatalf("an authentication failure wrote a record: %+v", rec)
	}
}
