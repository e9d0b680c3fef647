package pgsnap

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/postgres"
	"github.com/fencegate/fencegate/store/storetest"
)

const resource = "snap/r"

func setup(t *testing.T) (*pgxpool.Pool, *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.New(ctx, pool, postgres.Options{Schema: "st", CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return pool, s
}

// accept begins and commits segment seq of fence 1 with payload p.
func accept(t *testing.T, s store.Store, seq uint64, p string) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Begin(ctx, storetest.Attempt(resource, 1, seq, p))
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin seq %d: %v %v", seq, res.Decision, err)
	}
	if _, err := s.Commit(ctx, storetest.Answer(res.Mutation.OpRef)); err != nil {
		t.Fatalf("Commit seq %d: %v", seq, err)
	}
}

type state struct {
	gen      string
	lastSeq  uint64
	stats    store.Stats
	ledger   int
	receipts int
}

func stateOf(t *testing.T, s store.Store) state {
	t.Helper()
	ctx := context.Background()
	gen, err := s.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Record(ctx, resource)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Bytes = 0 // the tables' size on disk is not their data
	led, err := s.Enforcements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := s.ReceiptsOf(ctx, store.ReceiptsQuery{Resource: resource, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return state{gen: gen, lastSeq: rec.LastSeq, stats: st, ledger: len(led), receipts: len(rcs)}
}

// TestTablesAreTheSchemas: Tables names every table a migrated schema
// has but its version table, so a table a migration adds cannot be left
// out of a snapshot.
func TestTablesAreTheSchemas(t *testing.T) {
	pool, _ := setup(t)
	rows, err := pool.Query(context.Background(),
		`SELECT table_name FROM information_schema.tables WHERE table_schema = 'st' AND table_name <> 'schema_version' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(Tables))
	if !slices.Equal(got, want) {
		t.Errorf("the schema's tables are %v, Tables lists %v", got, want)
	}
}

// TestSaveEmptyRestore: a save keeps the data and the generation marker;
// Empty leaves no row but the marker it was given; Restore puts the saved
// rows back, the marker included, as often as asked, and writes after the
// save are gone.
func TestSaveEmptyRestore(t *testing.T) {
	ctx := context.Background()
	pool, s := setup(t)
	if err := Restore(ctx, pool, "st", "bk"); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("Restore before any Save: %v, want ErrNoSnapshot", err)
	}
	accept(t, s, 1, "a")
	if _, err := s.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /v1/items/{id}", Kind: store.EnforcementEnforce, Now: storetest.T0}); err != nil {
		t.Fatal(err)
	}
	saved := stateOf(t, s)
	if saved.lastSeq != 1 || saved.stats.Receipts != 1 || saved.ledger != 1 || saved.gen == "" {
		t.Fatalf("state before the save: %+v", saved)
	}
	if err := Save(ctx, pool, "st", "bk"); err != nil {
		t.Fatal(err)
	}
	accept(t, s, 2, "b")
	// Segment 2 again with another payload: a quarantine entry.
	res, err := s.Begin(ctx, storetest.Attempt(resource, 1, 2, "other"))
	if err != nil || res.Decision != store.DecisionSegmentConflict {
		t.Fatalf("conflicting resend: %v %v", res.Decision, err)
	}
	after := stateOf(t, s)
	if after.lastSeq != 2 || after.stats.Quarantined != 1 || after.receipts != 2 {
		t.Fatalf("state after the save: %+v", after)
	}

	if err := Empty(ctx, pool, "st", "gen2"); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, s); got != (state{gen: "gen2"}) {
		t.Errorf("emptied: %+v, want nothing but the marker gen2", got)
	}

	for i := range 2 {
		if err := Restore(ctx, pool, "st", "bk"); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, s); got != saved {
			t.Errorf("restore %d: %+v, want the saved %+v", i, got, saved)
		}
		accept(t, s, 2, "c") // written after the restore, gone at the next
	}

	if err := Drop(ctx, pool, "bk"); err != nil {
		t.Fatal(err)
	}
	if err := Restore(ctx, pool, "st", "bk"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Restore after Drop: %v, want ErrNoSnapshot", err)
	}
}
