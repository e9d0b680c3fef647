package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/pgfence"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/postgres"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// world is a service's database with its business table (invoices: one
// row per batch, the total and how many writes applied it), the fence's
// tables (a store/postgres Store in schema fencegate) and an issuer of
// real signed grants whose key the Fence's trust bundle holds.
type world struct {
	t      testing.TB
	dsn    string
	pool   *pgxpool.Pool
	st     *postgres.Store
	is     *verifytest.Issuer
	fence  *pgfence.Fence
	bundle string
	n      int
}

const resource = "invoice-batch/7"

func newWorld(t testing.TB, opts ...pgfence.Option) *world {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.Database(t)
	st, err := postgres.Open(ctx, postgres.Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE invoices (batch text PRIMARY KEY, total bigint NOT NULL CHECK (total >= 0), applied int NOT NULL DEFAULT 0);
		CREATE TABLE racing (batch text PRIMARY KEY, value text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	is.Now = clock.Real().Now()
	bundle := verifytest.BundleFile(t, is)
	f, err := pgfence.New(ctx, st, append([]pgfence.Option{pgfence.WithTrustBundle(bundle)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, dsn: dsn, pool: pool, st: st, is: is, fence: f, bundle: bundle}
}

// owner is one lease of the resource: its grant and a fresh proof.
type owner struct {
	grant, proof string
	g            fencegate.Grant
}

// leaseOn is lease on another resource.
func (w *world) leaseOn(res string, fence uint64) owner {
	return w.lease(fence, func(g *fencegate.Grant) { g.Resource = res })
}

// refresh signs o a fresh proof of its grant.
func (w *world) refresh(o owner) owner {
	w.is.Now = clock.Real().Now()
	o.proof = string(w.is.SignStatus(w.is.StatusFor([]byte(o.grant), o.g, w.is.Now)))
	return o
}

// lease issues a grant of fence (under a root of its own) to the default
// owner, with a fresh HELD proof.
func (w *world) lease(fence uint64, mut ...func(*fencegate.Grant)) owner {
	w.n++
	w.is.Now = clock.Real().Now()
	g := w.is.Grant(append([]func(*fencegate.Grant){func(g *fencegate.Grant) {
		g.Resource, g.FenceToken, g.OperationRoot = resource, fence, fmt.Sprintf("root-%d", w.n)
	}}, mut...)...)
	tok := w.is.Sign(g)
	proof := w.is.SignStatus(w.is.StatusFor(tok, g, w.is.Now))
	return owner{grant: string(tok), proof: string(proof), g: g}
}

func (o owner) request(seq uint64, payload string) pgfence.Request {
	return pgfence.Request{Resource: o.g.Resource, Caller: o.g.Owner, Grant: o.grant, Status: o.proof, Segment: seq, Payload: []byte(payload)}
}

// write is the service's fenced write: the fence, then the business
// change, in one transaction of the default isolation (READ COMMITTED).
// total < 0 makes the business write fail (its CHECK) after the fence
// accepted.
func (w *world) write(req pgfence.Request, total int64) (store.Receipt, error) {
	var rc store.Receipt
	err := pgx.BeginFunc(context.Background(), w.pool, func(tx pgx.Tx) error {
		var err error
		if rc, err = w.fence.Apply(context.Background(), tx, req); err != nil {
			return err
		}
		_, err = tx.Exec(context.Background(), `INSERT INTO invoices (batch, total, applied) VALUES ($1, $2, 1)
			ON CONFLICT (batch) DO UPDATE SET total = excluded.total, applied = invoices.applied + 1`, "7", total)
		return err
	})
	return rc, err
}

// row is the business row: its total and how many writes applied it
// (-1, -1 when there is none).
func (w *world) row() (total int64, applied int) {
	w.t.Helper()
	err := w.pool.QueryRow(context.Background(), `SELECT total, applied FROM invoices WHERE batch = '7'`).Scan(&total, &applied)
	if errors.Is(err, pgx.ErrNoRows) {
		return -1, -1
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return total, applied
}

// record is the resource's fence record (the zero Record if none).
func (w *world) record() store.Record {
	w.t.Helper()
	rec, err := w.st.Record(context.Background(), resource)
	if errors.Is(err, store.ErrNotFound) {
		return store.Record{}
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return rec
}

// receipts are the resource's receipts.
func (w *world) receipts() []store.Receipt {
	w.t.Helper()
	rcs, err := w.st.ReceiptsOf(context.Background(), store.ReceiptsQuery{Resource: resource, Limit: 100})
	if err != nil {
		w.t.Fatal(err)
	}
	return rcs
}

// code is the problem code of err ("" if it is none).
func code(err error) fencegate.Code {
	var p *fencegate.Problem
	if errors.As(err, &p) {
		return p.Code
	}
	return ""
}

func mustCode(t *testing.T, err error, want fencegate.Code) {
	t.Helper()
	if got := code(err); got != want {
		t.Fatalf("error %v: code %q, want %q", err, got, want)
	}
}

const timeUnit = time.Second

// sleep waits a little (polling), or until ctx ends.
func sleep(ctx context.Context) {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
