package bolt

import (
	"fmt"
	"runtime"

	"go.etcd.io/bbolt"
)

// grouper is the group committer: one goroutine runs every write. It takes
// the first waiting write plus all others waiting at that moment (up to max)
// and runs them in one transaction, so they share its fsyncs. There is no
// timer: a write arriving while the disk is idle starts at once, and writes
// arriving during an fsync form the next group.
type grouper struct {
	db   *bbolt.DB
	max  int
	reqs chan *groupReq
	stop chan struct{}
	done chan struct{}
}

type groupReq struct {
	fn  func(*bbolt.Tx) error
	err chan error
}

func newGrouper(db *bbolt.DB, max int) *grouper {
	g := &grouper{
		db:   db,
		max:  max,
		reqs: make(chan *groupReq, max),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go g.run()
	return g
}

// do runs fn in a group transaction and returns when it is committed (or
// failed). fn may be called more than once; only the last call counts.
func (g *grouper) do(fn func(*bbolt.Tx) error) error {
	r := &groupReq{fn: fn, err: make(chan error, 1)}
	g.reqs <- r
	return <-r.err
}

// close stops the committer; callers must have stopped calling do.
func (g *grouper) close() {
	close(g.stop)
	<-g.done
}

func (g *grouper) run() {
	defer close(g.done)
	batch := make([]*groupReq, 0, g.max)
	for {
		select {
		case r := <-g.reqs:
			batch = append(batch[:0], r)
			g.gather()
		fill:
			for len(batch) < g.max {
				select {
				case r := <-g.reqs:
					batch = append(batch, r)
				default:
					break fill
				}
			}
			g.commit(batch)
			clear(batch)
		case <-g.stop:
			return
		}
	}
}

// gather lets the goroutines that are runnable now run before the group is
// closed, for as long as that brings more writes (up to a full group).
//
// A writer's send hands the CPU straight to the waiting committer (Go runs
// the goroutine it has just woken next). So when the process has fewer CPUs
// than runnable goroutines (the sidecar pinned to one CPU under 64
// workers), the committer used to close nearly every group at the one write
// that woke it while the other writers waited runnable behind it: measured
// (issue 12), almost every transaction held one write, 2.85 fdatasyncs per
// accepted request, a Go trace showed ~55 of the sidecar's goroutines
// runnable but not running on average, and 64 workers got half the
// throughput of 16. There is still no timer: a yield with nothing else to
// run returns at once, so a lone writer starts its transaction as before.
func (g *grouper) gather() {
	for {
		n := len(g.reqs)
		if n >= g.max-1 {
			return
		}
		runtime.Gosched()
		if len(g.reqs) == n {
			return
		}
	}
}

func (g *grouper) commit(batch []*groupReq) {
	err := g.db.Update(func(tx *bbolt.Tx) error {
		for _, r := range batch {
			if err := safely(r.fn, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			r.err <- err
		}
		return
	}
	// Someone's function failed and took the group down: run each alone.
	for _, r := range batch {
		r.err <- g.db.Update(func(tx *bbolt.Tx) error { return safely(r.fn, tx) })
	}
}

// safely turns a panic of fn into an error so that one bad write cannot take
// the committer (and every waiting caller) down.
func safely(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store: bolt: write panicked: %v", p)
		}
	}()
	return fn(tx)
}
