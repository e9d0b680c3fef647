package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// A worker drives one resource: Begin the next segment, Commit it. An
// error must come with no decision; a segment is never committed twice nor
// begun again once committed. After an error it re-reads the record and
// withdraws a marker left in flight (the test sends nothing anywhere, so
// Abort's "never sent" is true): that segment may then proceed again.
type worker struct {
	s        *Store
	resource string

	committed []uint64 // seqs whose Commit returned a receipt, in order
	errors    int
	problems  []string
	acked     *atomic.Int64 // shared by the workers: commits acknowledged
}

func (w *worker) step(ctx context.Context, i int) {
	rec, err := w.s.Record(ctx, w.resource)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.fail(err)
		return
	}
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
		w.fail(err)
		return
	}
	if n := len(w.committed); n > 0 && w.committed[n-1] >= in.Seq {
		w.problems = append(w.problems, "commit of segment "+strconv.FormatUint(in.Seq, 10)+" acknowledged after segment "+strconv.FormatUint(w.committed[n-1], 10))
	}
	w.committed = append(w.committed, in.Seq)
	w.acked.Add(1)
}

// fail counts a store error; it must be a Redis error, never one of the
// store's decision errors.
func (w *worker) fail(err error) {
	w.errors++
	for _, sentinel := range []error{store.ErrNotInFlight, store.ErrConflict, store.ErrOutcomeUnknown, store.ErrNotFound, store.ErrInvalidInput, store.ErrCorrupt} {
		if errors.Is(err, sentinel) {
			w.problems = append(w.problems, "a store error mistaken for a decision error: "+err.Error())
			return
		}
	}
	if !strings.HasPrefix(err.Error(), "store/redis: ") {
		w.problems = append(w.problems, "error without the store/redis prefix: "+err.Error())
	}
}

// Kill -9 the server under load, with fsync on every write: calls fail
// with Redis errors (never a decision), and after the restart every
// acknowledged commit is there and no segment was committed twice.
func TestServerKilledMidRun(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	const workers = 4
	var acked atomic.Int64
	ws := make([]*worker, workers)
	for i := range ws {
		s, err := Open(ctx, Options{Addr: srv.Addr(), Prefix: "fault", ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
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
	waitFor(t, func() bool { return int(acked.Load()) >= 50 })
	srv.Kill()
	phase.Store(1)
	// While the server is down, a call fails with a Redis error.
	probe := ws[0].s
	res, err := probe.Begin(ctx, storetest.Attempt("probe", 1, 1, "p"))
	if err == nil || res.Decision != "" {
		t.Fatalf("Begin with the server down: %s, %v; want an error and no decision", res.Decision, err)
	}
	if !strings.HasPrefix(err.Error(), "store/redis: ") {
		t.Fatalf("error %q lacks the store/redis prefix", err)
	}
	waitFor(t, func() bool { return downErrors.Load() >= workers })
	srv.Restart()
	phase.Store(2)
	base := int(acked.Load())
	waitFor(t, func() bool { return int(acked.Load()) >= base+50 })
	phase.Store(3)
	wg.Wait()

	check := openPrefix(t, srv, "fault")
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
		t.Logf("%s: %d commits acknowledged, %d errors, lastSeq %d", w.resource, len(w.committed), w.errors, rec.LastSeq)
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
