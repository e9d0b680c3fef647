package anchor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	storepg "github.com/fencegate/fencegate/store/postgres"
)

// TestPostgresSchemaDroppedUnderRunningStore: the PostgreSQL store's schema
// dropped under a running sidecar (as a new, empty database behind the DSN
// looks) is a loss without a restart: the next write is refused, the
// wrapper reports it lost and the readiness check fails with the store's
// ErrGenerationChanged; the recheck presents the new marker (the schema
// migrated again), and once it is acknowledged the resource is repaired
// from its anchor and writes flow.
func TestPostgresSchemaDroppedUnderRunningStore(t *testing.T) {
	ctx := context.Background()
	be := newPostgres(t)
	r := newRegistry(t)
	st := wrapped(t, be.Open(t), anchor.FromRegistry(r, caller), anchor.Options{})
	defer st.Close()
	mustProceed(t, st, attempt("acct/1", 3, 1, "A1"))
	be.Wipe(t)

	if _, err := st.Begin(ctx, attempt("acct/1", 4, 1, "A2")); err == nil {
		t.Fatal("Begin on a dropped schema succeeded")
	}
	if !errors.Is(st.Lost(), storepg.ErrGenerationChanged) || !st.Report().Lost {
		t.Fatalf("not reported lost: %v", st.Lost())
	}
	if err := st.CheckLoss(ctx); err == nil {
		t.Fatal("the readiness check passes on a lost store")
	}
	if err := st.Recheck(ctx); err != nil || st.Lost() == nil {
		t.Fatalf("recheck before the acknowledgement: %v, lost %v", err, st.Lost())
	}
	gen, err := st.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.AcknowledgeLoss(ctx, storeName, gen); err != nil {
		t.Fatalf("acknowledge %s: %v", gen, err)
	}
	if err := st.Recheck(ctx); err != nil || st.Lost() != nil {
		t.Fatalf("recheck after the acknowledgement: %v, lost %v", err, st.Lost())
	}
	rec, err := st.Record(ctx, "acct/1")
	if err != nil || rec.HighestFence != 3 || rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
		t.Fatalf("acct/1 repaired to %+v, %v", rec, err)
	}
	mustProceed(t, st, attempt("acct/2", 1, 1, "B1"))
}
