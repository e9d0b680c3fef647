package bolt

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// Begin and Commit run in the write transaction first (writeFirst); their
// decisions that write nothing still commit no transaction (no fsync), under
// every grouping, and answer as before.
func TestNoWriteDecisionsCommitNothing(t *testing.T) {
	for _, g := range []struct {
		name string
		opts Options
	}{{"group", Options{}}, {"boltbatch", Options{Grouping: BoltBatch}}, {"none", Options{Grouping: NoGrouping}}} {
		t.Run(g.name, func(t *testing.T) {
			s := openWith(t, g.opts)
			ctx := context.Background()
			beginCommit(t, s, "r", 2, 1, 0, storetest.T0)
			in2 := storetest.Attempt("r", 2, 2, "p2")
			if r, err := s.Begin(ctx, in2); err != nil || r.Decision != store.DecisionProceed {
				t.Fatalf("begin: %+v, %v", r, err)
			}
			before := s.Counters()
			for _, c := range []struct {
				name string
				in   store.BeginInput
				want store.Decision
			}{
				{"replay", storetest.Attempt("r", 2, 1, "p1"), store.DecisionReplay},
				{"busy", storetest.Attempt("r", 2, 3, "p3"), store.DecisionBusy},
				{"stale", storetest.Attempt("r", 1, 1, "p1"), store.DecisionStaleOwner},
			} {
				if r, err := s.Begin(ctx, c.in); err != nil || r.Decision != c.want {
					t.Fatalf("%s: %s %s %v, want %s", c.name, r.Decision, r.Detail, err, c.want)
				}
			}
			// A commit again (its receipt is stored) and one of nothing in flight.
			again := storetest.Answer(storetest.Attempt("r", 2, 1, "p1").Ref())
			if rc, err := s.Commit(ctx, again); err != nil || rc.Seq != 1 {
				t.Fatalf("commit again: %+v, %v", rc, err)
			}
			if _, err := s.Commit(ctx, storetest.Answer(storetest.Attempt("r", 2, 5, "p5").Ref())); !errors.Is(err, store.ErrNotInFlight) {
				t.Fatalf("commit of nothing in flight: %v", err)
			}
			if after := s.Counters(); after != before {
				t.Fatalf("decisions that write nothing committed: counters %+v, then %+v", before, after)
			}
			// And a write still writes.
			if _, err := s.Commit(ctx, storetest.Answer(in2.Ref())); err != nil {
				t.Fatal(err)
			}
			if after := s.Counters(); after.Writes != before.Writes+1 {
				t.Fatalf("commit: counters %+v, then %+v", before, after)
			}
		})
	}
}

// opsSeen is a TxStore over a Store that records the op names of Update.
type opsSeen struct {
	*Store
	ops []string
}

func (o *opsSeen) Update(ctx context.Context, op string, fn func(store.Tx) error) error {
	o.ops = append(o.ops, op)
	return o.Store.Update(ctx, op, fn)
}

// The names writeFirst takes are the ones store.NewTxBackend passes for
// Begin and Commit, and those two run in the write transaction first.
func TestWriteFirstOperationNames(t *testing.T) {
	o := &opsSeen{Store: openWith(t, Options{})}
	s := store.NewTxBackend(o, store.TxOptions{})
	ctx := context.Background()
	in := storetest.Attempt("r", 1, 1, "p")
	if _, err := s.Begin(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
		t.Fatal(err)
	}
	if len(o.ops) != 2 || !writeFirst(o.ops[0]) || !writeFirst(o.ops[1]) {
		t.Fatalf("Begin and Commit ran Update as %q: not writeFirst", o.ops)
	}
	// The first run of a writeFirst op is in a write transaction.
	var writable []bool
	err := o.Store.Update(ctx, "begin", func(tx store.Tx) error {
		writable = append(writable, tx.(interface{ writable() bool }).writable())
		return nil
	})
	if err != nil || len(writable) == 0 || !writable[0] {
		t.Fatalf("runs of a Begin: writable %v, %v", writable, err)
	}
}

// writable reports whether t is a write transaction's.
func (t tx) writable() bool { return t.wrote != nil }
