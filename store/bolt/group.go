package bolt

import (
	"fmt"

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
