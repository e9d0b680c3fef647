package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// A worker drives one resource: Begin the next segment, Commit it. An
// error must come with no decision; a segment is never committed twice
// nor begun again once committed. After an error it re-reads the record
// and withdraws a marker left in flight (the test sends nothing anywhere,
// so Abort's "never sent" is true): that segment may then proceed again.
type worker struct {
	s        *Store
	resource string

	committed []uint64 // seqs whose Commit returned a receipt, in order
	uncertain []uint64 // seqs whose Commit failed: applied or not, unknown to the worker
	// pending is the seq of the last failed Commit until the record shows
	// its outcome: applied (lastSeq reached it) or not (its marker still
	// in flight), counted in applied and notApplied.
	pending             uint64
	applied, notApplied int
	errors              int
	problems            []string
	acked               *atomic.Int64 // shared by the workers: commits acknowledged
}

func (w *worker) step(ctx context.Context, i int) {
	rec, err := w.s.Record(ctx, w.resource)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.fail(err)
		return
	}
	w.settle(rec)
	if m := rec.InFlight; m != nil {
		if _, err := w.s.Abort(ctx, store.AbortInput{OpRef: m.Ref(), Now: storetest.T0}); err != nil {
			w.fail(err)
		}
		return
	}
	in := storetest.Attempt(w.resource, 1, rec.LastSeq+1, "p"+strconv.Itoa(i))
	res, err := w.s.Begin(ctx, in)
	if err != nil {
		if res.Decision != "" {
			w.problems = append(w.problems, "Begin returned "+string(res.Decision)+" with error "+err.Error())
		}
		w.fail(err)
		return
	}
	if res.Decision != store.DecisionProceed {
		w.problems = append(w.problems, "Begin of "+in.Ref().OperationID()+": "+string(res.Decision)+" "+res.Detail)
		return
	}
	if n := len(w.committed); n > 0 && w.committed[n-1] >= in.Seq {
		w.problems = append(w.problems, "Begin of "+in.Ref().OperationID()+" proceeded after segment "+strconv.FormatUint(w.committed[n-1], 10)+" was committed")
	}
	if _, err := w.s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
		w.uncertain = append(w.uncertain, in.Seq)
		w.pending = in.Seq
		w.fail(err)
		return
	}
	w.committed = append(w.committed, in.Seq)
	w.acked.Add(1)
}

// settle classifies the pending failed Commit by the record read after it:
// applied whole (lastSeq reached it, no marker) or not at all (its marker
// still in flight); anything else is a half-applied transition.
func (w *worker) settle(rec store.Record) {
	if w.pending == 0 {
		return
	}
	switch m := rec.InFlight; {
	case rec.LastSeq >= w.pending && (m == nil || m.Seq > w.pending):
		w.applied++
	case rec.LastSeq == w.pending-1 && m != nil && m.Seq == w.pending:
		w.notApplied++
	default:
		w.problems = append(w.problems, "a failed Commit of segment "+strconv.FormatUint(w.pending, 10)+" left lastSeq "+strconv.FormatUint(rec.LastSeq, 10)+" and its marker half-applied")
	}
	w.pending = 0
}

// fail counts a store error: PostgreSQL's (STORE_UNAVAILABLE), never one
// of the store's decision errors.
func (w *worker) fail(err error) {
	w.errors++
	if code := store.ErrorCode(err); code != fencegate.CodeStoreUnavailable {
		w.problems = append(w.problems, "a store error answered "+string(code)+", not STORE_UNAVAILABLE: "+err.Error())
	}
	for _, sentinel := range []error{store.ErrNotInFlight, store.ErrConflict, store.ErrOutcomeUnknown, store.ErrNotFound, store.ErrInvalidInput, store.ErrCorrupt} {
		if errors.Is(err, sentinel) {
			w.problems = append(w.problems, "a store error mistaken for a decision error: "+err.Error())
			return
		}
	}
	if !strings.HasPrefix(err.Error(), "store/postgres: ") {
		w.problems = append(w.problems, "error without the store/postgres prefix: "+err.Error())
	}
}

// TestPostmasterKilledMidLoad: a private cluster (initdb, fsync on), four
// workers Begin and Commit under load, and the postmaster is killed with
// SIGKILL mid-run. While it is down every call fails closed
// (STORE_UNAVAILABLE, no decision); after the restart (crash recovery) the
// workers go on, and at the end every acknowledged commit has its receipt,
// and each resource's record and receipts agree: every segment up to its
// lastSeq has its receipt (a transition whose answer was lost in the kill
// was applied whole or not at all).
func TestPostmasterKilledMidLoad(t *testing.T) {
	cl := pgtest.StartCluster(t)
	dsn := cl.DSN("postgres")
	ctx := context.Background()
	const workers = 4
	var acked atomic.Int64
	ws := make([]*worker, workers)
	for i := range ws {
		s := open(t, Options{DSN: dsn, Schema: "fault", MaxConns: 2, ConnectTimeout: time.Second, StatementTimeout: 5 * time.Second})
		ws[i] = &worker{s: s, resource: "r" + strconv.Itoa(i), acked: &acked}
	}
	var phase atomic.Int32 // 0 before the kill, 1 down, 2 restarted, 3 stop
	var downErrors atomic.Int64
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; phase.Load() != 3; i++ {
				p := phase.Load()
				before := w.errors
				w.step(ctx, i)
				if p == 1 && w.errors > before {
					downErrors.Add(1)
				}
				if w.errors > before {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	waitFor(t, func() bool { return acked.Load() >= 100 })
	cl.Kill()
	phase.Store(1)
	res, err := ws[0].s.Begin(ctx, storetest.Attempt("probe", 1, 1, "p"))
	if err == nil || res.Decision != "" {
		t.Fatalf("Begin with the postmaster down: %s, %v; want an error and no decision", res.Decision, err)
	}
	if code := store.ErrorCode(err); code != fencegate.CodeStoreUnavailable || !strings.HasPrefix(err.Error(), "store/postgres: ") {
		t.Fatalf("Begin with the postmaster down: %v (%s), want a store/postgres error answered STORE_UNAVAILABLE", err, code)
	}
	waitFor(t, func() bool { return downErrors.Load() >= workers })
	atKill := acked.Load()
	cl.Restart()
	phase.Store(2)
	waitFor(t, func() bool { return acked.Load() >= atKill+100 })
	phase.Store(3)
	wg.Wait()

	check := open(t, Options{DSN: dsn, Schema: "fault"})
	for _, w := range ws {
		for _, p := range w.problems {
			t.Error(w.resource + ": " + p)
		}
		for _, seq := range w.committed {
			if _, err := check.Receipt(ctx, store.ReceiptKey{Resource: w.resource, Fence: 1, Seq: seq}); err != nil {
				t.Errorf("%s: acknowledged commit of segment %d lost: %v", w.resource, seq, err)
			}
		}
		rec, err := check.Record(ctx, w.resource)
		if err != nil {
			t.Fatal(err)
		}
		if rec.LastSeq < uint64(len(w.committed)) {
			t.Errorf("%s: lastSeq %d below %d acknowledged commits", w.resource, rec.LastSeq, len(w.committed))
		}
		for seq := uint64(1); seq <= rec.LastSeq; seq++ {
			if _, err := check.Receipt(ctx, store.ReceiptKey{Resource: w.resource, Fence: 1, Seq: seq}); err != nil {
				t.Errorf("%s: lastSeq %d without the receipt of segment %d: %v", w.resource, rec.LastSeq, seq, err)
			}
		}
		if _, err := check.Receipt(ctx, store.ReceiptKey{Resource: w.resource, Fence: 1, Seq: rec.LastSeq + 1}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: a receipt beyond lastSeq %d: %v", w.resource, rec.LastSeq, err)
		}
		if m := rec.InFlight; m != nil && m.Seq != rec.LastSeq+1 {
			t.Errorf("%s: marker of segment %d under lastSeq %d", w.resource, m.Seq, rec.LastSeq)
		}
		t.Logf("%s: %d commits acknowledged, %d errors, %d failed commits (%d applied whole, %d not at all), lastSeq %d",
			w.resource, len(w.committed), w.errors, len(w.uncertain), w.applied, w.notApplied, rec.LastSeq)
	}
}

// waitFor polls cond until it holds. Two minutes without it fail the
// test: a liveness bound that turns a hang (a wait that will not come)
// into a failure instead of the package's -timeout; it asserts no speed.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("still waiting after 2 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
