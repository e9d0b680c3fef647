package anchor_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	regmemory "github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
)

// TestRestoredRegistrySettlesThroughTheSupersededFence: a registry
// restored from a copy taken while fence 1's segment was anchored pending
// forgets the Begin that raised the fence to 2. B's fence 2 write is left
// UNKNOWN and fence 1's receipts are compacted away; settling B as not
// applied meets a SETTLE CONFLICT (the anchor holds fence 1's pending
// mutation), which the record's Superseded progress answers: fence 1 was
// committed through that segment before fence 2 took over. Without that
// proof B could never be settled (found by the simulation's gate).
func TestRestoredRegistrySettlesThroughTheSupersededFence(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			ctx := context.Background()
			rs := regmemory.New()
			reg, err := registry.New(registry.Options{Backend: registry.NewTxBackend(rs), Signer: registrytest.NewKeys(t).Signer, Metrics: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			registrytest.Start(t, reg)
			st := wrapped(t, be.Open(t), anchor.FromRegistry(reg, caller), anchor.Options{})
			defer st.Close()
			a1 := attempt("acct/1", 1, 1, "A1")
			mustProceed(t, st, a1)
			if _, err := st.Commit(ctx, store.CommitInput{OpRef: a1.Ref(), BackendStatus: 200, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			snap := rs.Snapshot() // the anchor: fence 1, segment 1 pending

			a2 := attempt("acct/1", 1, 2, "A2")
			mustProceed(t, st, a2)
			if _, err := st.Commit(ctx, store.CommitInput{OpRef: a2.Ref(), BackendStatus: 200, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			b := attempt("acct/1", 2, 1, "B1")
			mustProceed(t, st, b)
			if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: b.Ref(), Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			res, err := st.Compact(ctx, store.CompactInput{Now: time.Now().Add(time.Hour), MaxAge: time.Minute, MaxDeletes: 100})
			if err != nil || res.Receipts != 2 {
				t.Fatalf("compaction deleted %d receipts (%v), want fence 1's 2", res.Receipts, err)
			}
			rs.Restore(snap)

			if _, err := st.Resolve(ctx, store.ResolveInput{OpRef: b.Ref(), Now: time.Now(), Closed: true}); err != nil {
				t.Fatalf("settling B as not applied after the registry's restore: %v", err)
			}
			rec, err := st.Record(ctx, "acct/1")
			if err != nil || rec.InFlight != nil || rec.Pause != nil || rec.HighestFence != 2 {
				t.Fatalf("record after the settle: %+v %v", rec, err)
			}
			mustProceed(t, st, attempt("acct/1", 3, 1, "C1"))
		})
	}
}

// TestRestoredStoreCaughtAtSettle: the store is put back to a save that
// still holds A's UNKNOWN, which was settled at the anchor since, while
// the anchor moved on to fence 2 (B anchored in flight). No Begin comes
// first: the reconciler settling A as not applied is what meets the
// anchor. That SETTLE is a loss: refused, the resource repaired from the
// anchor (B's mutation UNKNOWN under fence 2) and paused STORE_LOSS.
func TestRestoredStoreCaughtAtSettle(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			ctx := context.Background()
			reg := anchor.FromRegistry(newRegistry(t), caller)
			st := wrapped(t, be.Open(t), reg, anchor.Options{})
			a := attempt("acct/1", 1, 1, "A1")
			mustProceed(t, st, a)
			if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: a.Ref(), Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			snap := be.Snapshot(t) // A unknown

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			if _, err := st.Resolve(ctx, store.ResolveInput{OpRef: a.Ref(), Now: time.Now(), Closed: true}); err != nil {
				t.Fatal(err)
			}
			b := attempt("acct/1", 2, 1, "B1")
			mustProceed(t, st, b)
			_ = st.Close()
			be.Restore(t, snap)

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			defer st.Close()
			if _, err := st.Resolve(ctx, store.ResolveInput{OpRef: a.Ref(), Now: time.Now(), Closed: true}); err == nil {
				t.Fatal("A settled on a store behind its anchor")
			}
			rec, err := st.Record(ctx, "acct/1")
			if err != nil || rec.HighestFence != 2 || !rec.Unknown() || rec.InFlight.OperationID != b.Ref().OperationID() ||
				rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
				t.Fatalf("record after the refused settle: %+v (marker %+v, pause %+v), %v", rec, rec.InFlight, rec.Pause, err)
			}
		})
	}
}

// TestRestoredStoreCaughtByAudit: the store is put back to a save older
// than an anchored segment, and no write on that resource follows (no
// Begin, no settle to meet the anchor). Run's audit finds it at its
// interval: the resource is repaired (the anchored segment UNKNOWN) and
// paused; a healthy resource audited beside it is left alone.
func TestRestoredStoreCaughtByAudit(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			ctx := context.Background()
			reg := anchor.FromRegistry(newRegistry(t), caller)
			st := wrapped(t, be.Open(t), reg, anchor.Options{})
			ok := attempt("acct/ok", 1, 1, "K1")
			mustProceed(t, st, ok)
			if _, err := st.Commit(ctx, store.CommitInput{OpRef: ok.Ref(), BackendStatus: 200, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			snap := be.Snapshot(t)

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			a := attempt("acct/1", 1, 1, "A1")
			mustProceed(t, st, a) // at the backend when the store is put back
			_ = st.Close()
			be.Restore(t, snap)

			// Run audits at its interval (on a test clock).
			clk := clocktest.New(time.Now())
			st = wrapped(t, be.Open(t), reg, anchor.Options{Clock: clk, AuditInterval: time.Minute})
			defer st.Close()
			runCtx, stop := context.WithTimeout(ctx, time.Minute)
			done := make(chan error, 1)
			go func() { done <- st.Run(runCtx) }()
			defer func() { stop(); <-done }()
			if !clk.WaitPending(runCtx, 1) {
				t.Fatal("Run armed no audit timer")
			}
			if rec, _ := st.Record(ctx, "acct/1"); rec.Pause != nil {
				t.Fatal("paused before the audit")
			}
			clk.Advance(time.Minute)
			rec, err := st.Record(ctx, "acct/1")
			for (err != nil || rec.Pause == nil) && runCtx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
				rec, err = st.Record(ctx, "acct/1")
			}
			if err != nil || rec.HighestFence != 1 || !rec.Unknown() || rec.InFlight.OperationID != a.Ref().OperationID() ||
				rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
				t.Fatalf("record after the audit: %+v (marker %+v, pause %+v), %v", rec, rec.InFlight, rec.Pause, err)
			}
			if rec, err := st.Record(ctx, "acct/ok"); err != nil || rec.Pause != nil || rec.InFlight != nil || rec.LastSeq != 1 {
				t.Fatalf("the healthy resource after the audit: %+v %v", rec, err)
			}
		})
	}
}
