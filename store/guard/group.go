package guard

import (
	"fmt"
	"sync/atomic"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// grouper is the group committer of a checkpoint file (the design of
// store/bolt's GroupCommit): one goroutine runs every write, taking the
// first waiting write plus all others waiting at that moment (up to max)
// into one transaction, so they share its fsyncs. There is no timer, unlike
// bbolt's DB.Batch (MaxBatchDelay, 10 ms by default, would be added to
// every lone write): a write arriving while the disk is idle starts at
// once, and writes arriving during an fsync form the next group.
type grouper struct {
	db   *bbolt.DB
	max  int
	reqs chan *groupReq
	stop chan struct{}
	done chan struct{}

	writes    atomic.Uint64 // writes committed
	txCommits atomic.Uint64 // write transactions committed
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

// do runs fn in a group transaction and returns when it is committed and
// on disk, or failed. fn may run more than once; only the last run counts.
func (g *grouper) do(fn func(*bbolt.Tx) error) error {
	r := &groupReq{fn: fn, err: make(chan error, 1)}
	select {
	case g.reqs <- r:
	case <-g.done:
		return store.ErrClosed
	}
	select {
	case err := <-r.err:
		return err
	case <-g.done:
		// Stopped after taking r: its answer was sent before done closed.
		select {
		case err := <-r.err:
			return err
		default:
			return store.ErrClosed
		}
	}
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
		g.count(err, len(batch))
		for _, r := range batch {
			r.err <- errClosedDB(err)
		}
		return
	}
	// One function failed and took the group down: run each alone, so one
	// failure never drops another's write.
	for _, r := range batch {
		err := g.db.Update(func(tx *bbolt.Tx) error { return safely(r.fn, tx) })
		g.count(err, 1)
		r.err <- errClosedDB(err)
	}
}

// count counts a committed transaction of n writes.
func (g *grouper) count(err error, n int) {
	if err == nil {
		g.txCommits.Add(1)
		g.writes.Add(uint64(n))
	}
}

// safely turns a panic of fn into an error, so that one bad write cannot
// take the committer (and every waiting caller) down.
func safely(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store/guard: checkpoint write panicked: %v", p)
		}
	}()
	return fn(tx)
}
