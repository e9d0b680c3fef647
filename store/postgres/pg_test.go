package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

func open(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func pool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestReplicasShareTheServerClock: two replicas whose clocks are an hour
// apart share the store. The slow one begins a mutation with a one-minute
// window; the fast one then finds it BUSY, not expired, because both
// decide at PostgreSQL's clock_timestamp(). Under the caller's clock the
// fast replica takes it for MUTATION_UNKNOWN.
func TestReplicasShareTheServerClock(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	real := clock.Real().Now().UTC()
	slow, fast := real.Add(-time.Hour), real.Add(time.Hour)
	for _, c := range []struct {
		name        string
		callerClock bool
		want        store.Decision
	}{
		{"server clock", false, store.DecisionBusy},
		{"caller clock", true, store.DecisionMutationUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := map[bool]string{false: "srv", true: "caller"}[c.callerClock]
			r1 := open(t, Options{DSN: dsn, Schema: schema, CallerClock: c.callerClock})
			r2 := open(t, Options{DSN: dsn, Schema: schema, CallerClock: c.callerClock})

			in := storetest.Attempt("skew/r", 1, 1, "a")
			in.Now, in.Deadline, in.QuietAt = slow, slow.Add(time.Minute), slow.Add(2*time.Minute)
			res, err := r1.Begin(ctx, in)
			if err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Begin on the slow replica: %v %v", res.Decision, err)
			}
			m := res.Mutation
			if !c.callerClock {
				if d := m.BegunAt.Sub(real); d < -5*time.Second || d > 5*time.Second {
					t.Errorf("marker begun at %v, %v from the real time; want the server's time", m.BegunAt, d)
				}
				if w := m.Deadline.Sub(m.BegunAt); w != time.Minute {
					t.Errorf("marker window %v, want the minute the caller asked for", w)
				}
			}
			next := storetest.Attempt("skew/r", 1, 2, "b")
			next.Now, next.Deadline, next.QuietAt = fast, fast.Add(time.Minute), fast.Add(2*time.Minute)
			res2, err := r2.Begin(ctx, next)
			if err != nil {
				t.Fatal(err)
			}
			if res2.Decision != c.want {
				t.Errorf("the fast replica's Begin while the slow one's mutation runs: %s, want %s", res2.Decision, c.want)
			}
		})
	}
}

// TestSchemaTooNew: a schema a newer fencegate migrated is refused at
// Open, naming both versions, and left as it is.
func TestSchemaTooNew(t *testing.T) {
	dsn := pgtest.Database(t)
	s := open(t, Options{DSN: dsn, Schema: "fg"})
	_ = s.Close()
	p := pool(t, dsn)
	if _, err := p.Exec(context.Background(), `UPDATE fg.schema_version SET version = $1`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{DSN: dsn, Schema: "fg"})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open over a newer schema: %v, want ErrSchemaTooNew", err)
	}
	var v int
	if err := p.QueryRow(context.Background(), `SELECT version FROM fg.schema_version`).Scan(&v); err != nil || v != SchemaVersion+1 {
		t.Fatalf("schema version after the refusal: %d %v", v, err)
	}
}

// TestConcurrentMigration: sidecars starting together over an empty
// database all open it (the advisory lock orders their migrations) and
// the schema is migrated once.
func TestConcurrentMigration(t *testing.T) {
	dsn := pgtest.Database(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), Options{DSN: dsn, Schema: "race", MaxConns: 2})
			if err == nil {
				_ = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	var rows int
	if err := pool(t, dsn).QueryRow(context.Background(), `SELECT count(*) FROM race.schema_version WHERE version = $1`, SchemaVersion).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("schema_version rows at %d: %d %v", SchemaVersion, rows, err)
	}
}

// TestGenerationLoss: a store expecting its generation marker fails every
// call closed with ErrGenerationChanged once the marker is gone (an empty
// or replaced database) or another, CheckGeneration shows it, the loss
// stays after the marker is written anew, and ExpectGeneration with the
// marker now in place lifts it.
func TestGenerationLoss(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	s0 := open(t, Options{DSN: dsn, Schema: "gen", CallerClock: true})
	gen, err := s0.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, Options{DSN: dsn, Schema: "gen", CallerClock: true, ExpectedGeneration: gen})
	in := storetest.Attempt("gen/r", 1, 1, "a")
	if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin before the loss: %v %v", res.Decision, err)
	}
	if _, err := pool(t, dsn).Exec(ctx, `TRUNCATE gen.meta, gen.records, gen.receipts, gen.counts`); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckGeneration(ctx); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("CheckGeneration after the loss: %v", err)
	}
	_, err = s.Begin(ctx, storetest.Attempt("gen/r", 1, 1, "a"))
	if !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("Begin after the loss: %v, want ErrGenerationChanged", err)
	}
	if got := store.ErrorCode(err); got != fencegate.CodeStoreUnavailable {
		t.Fatalf("the loss answers %s, want STORE_UNAVAILABLE", got)
	}
	now, err := s.Generation(ctx) // writes a new marker: the loss stays
	if err != nil || now == gen {
		t.Fatalf("Generation after the loss: %q %v (was %q)", now, err, gen)
	}
	if _, err := s.Records(ctx, store.RecordsQuery{Limit: 10}); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("Records after a new marker: %v, want the loss still", err)
	}
	if err := s.ExpectGeneration(ctx, now); err != nil {
		t.Fatalf("ExpectGeneration(%s): %v", now, err)
	}
	if res, err := s.Begin(ctx, storetest.Attempt("gen/r", 1, 1, "a")); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin after the acknowledgement: %v %v", res.Decision, err)
	}
}

// TestTxOnSharesTheCallersTransaction: a record written through TxOn in a
// transaction the caller began commits or rolls back with the caller's own
// row.
func TestTxOnSharesTheCallersTransaction(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	s := open(t, Options{DSN: dsn, Schema: "lib", CallerClock: true})
	p := pool(t, dsn)
	if _, err := p.Exec(ctx, `CREATE TABLE invoices (batch text PRIMARY KEY, total int)`); err != nil {
		t.Fatal(err)
	}
	now := clock.Real().Now()
	write := func(resource string, fail bool) error {
		return pgx.BeginTxFunc(ctx, p, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			if err := s.CheckIn(ctx, tx); err != nil {
				return err
			}
			st := s.TxOn(ctx, tx)
			rec, rc, err := st.Load(resource, &store.ReceiptKey{Resource: resource, Fence: 1, Seq: 1})
			if err != nil {
				return err
			}
			in := storetest.Attempt(resource, 1, 1, "a")
			in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
			res, ch, err := store.Decide(rec, rc, in)
			if err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Decide: %v %v", res.Decision, err)
			}
			if err := st.PutRecord(ch.Record); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO invoices VALUES ($1, 7)`, resource); err != nil {
				return err
			}
			if fail {
				return errors.New("the service's write failed")
			}
			return nil
		})
	}
	if err := write("lib/rolled-back", true); err == nil {
		t.Fatal("the failing transaction committed")
	}
	if err := write("lib/committed", false); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Records(ctx, store.RecordsQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Resource != "lib/committed" || recs[0].InFlight == nil {
		t.Fatalf("records after one rollback and one commit: %+v", recs)
	}
	var n int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("invoices: %d %v", n, err)
	}
}

// TestContention: replicas racing Begins on one resource under the
// server's clock: exactly one proceeds, the others are BUSY, and every
// call returns (serialization failures are retried, never surfaced).
func TestContention(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	const n = 8
	stores := make([]*Store, 4)
	for i := range stores {
		stores[i] = open(t, Options{DSN: dsn, Schema: "hot", MaxConns: 4})
	}
	var wg sync.WaitGroup
	decisions := make([]store.Decision, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := storetest.Attempt("hot/r", 1, 1, "a")
			now := clock.Real().Now()
			in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
			in.PayloadDigest = storetest.Attempt("hot/r", 1, 1, string(rune('a'+i))).PayloadDigest
			res, err := stores[i%len(stores)].Begin(ctx, in)
			decisions[i], errs[i] = res.Decision, err
		}()
	}
	wg.Wait()
	proceed := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Begin %d: %v", i, errs[i])
		}
		if decisions[i] == store.DecisionProceed {
			proceed++
		} else if decisions[i] != store.DecisionBusy {
			t.Errorf("Begin %d: %s, want PROCEED or BUSY", i, decisions[i])
		}
	}
	if proceed != 1 {
		t.Fatalf("%d Begins proceeded, want 1", proceed)
	}
}

// TestInRunsTheStoreInTheCallersTransaction: library mode's shape. The
// store's own Begin and Commit run inside a transaction the service began,
// beside its business row: rolled back, neither the fence's record and
// receipt nor the row exist; committed, both do; and a stale grant decided
// in the next transaction is refused before the service writes.
func TestInRunsTheStoreInTheCallersTransaction(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	s := open(t, Options{DSN: dsn, Schema: "lib"})
	gen, err := s.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ExpectGeneration(ctx, gen); err != nil {
		t.Fatal(err)
	}
	p := pool(t, dsn)
	if _, err := p.Exec(ctx, `CREATE TABLE invoices (batch text PRIMARY KEY, total int)`); err != nil {
		t.Fatal(err)
	}
	errService := errors.New("the service's write failed")
	write := func(fence uint64, batch string, fail bool) (store.Decision, error) {
		var decision store.Decision
		err := pgx.BeginTxFunc(ctx, p, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			st := s.In(tx)
			in := storetest.Attempt("lib/r", fence, 1, batch)
			now := clock.Real().Now()
			in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
			res, err := st.Begin(ctx, in)
			if err != nil {
				return err
			}
			if decision = res.Decision; decision != store.DecisionProceed {
				return nil // refused: the service writes nothing
			}
			if _, err := tx.Exec(ctx, `INSERT INTO invoices VALUES ($1, 7)`, batch); err != nil {
				return err
			}
			if fail {
				return errService
			}
			_, err = st.Commit(ctx, storetest.Answer(in.Ref()))
			return err
		})
		return decision, err
	}
	invoices := func() int {
		var n int
		if err := p.QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if d, err := write(2, "b1", true); !errors.Is(err, errService) || d != store.DecisionProceed {
		t.Fatalf("the failing transaction: %s %v", d, err)
	}
	if _, err := s.Record(ctx, "lib/r"); !errors.Is(err, store.ErrNotFound) || invoices() != 0 {
		t.Fatalf("after the rollback: record %v, %d invoices; want neither", err, invoices())
	}
	if d, err := write(2, "b2", false); err != nil || d != store.DecisionProceed {
		t.Fatalf("the committed transaction: %s %v", d, err)
	}
	rec, err := s.Record(ctx, "lib/r")
	if err != nil || rec.LastSeq != 1 || rec.InFlight != nil || invoices() != 1 {
		t.Fatalf("after the commit: %+v %v, %d invoices", rec, err, invoices())
	}
	if _, err := s.Receipt(ctx, store.ReceiptKey{Resource: "lib/r", Fence: 2, Seq: 1}); err != nil {
		t.Fatalf("the receipt of the committed transaction: %v", err)
	}
	if d, err := write(1, "stale", false); err != nil || d != store.DecisionStaleOwner || invoices() != 1 {
		t.Fatalf("a stale grant: %s %v, %d invoices; want STALE_OWNER and no write", d, err, invoices())
	}
}
