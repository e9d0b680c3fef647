// Package boltgroup is the group committer both bbolt files of fencegate
// use (the fenced store, store/bolt, and the guard's checkpoints,
// store/guard): one goroutine runs every write, taking the first waiting
// write plus all others waiting at that moment (up to a maximum) into one
// transaction, so they share its fsyncs. A call returns once its
// transaction is committed and on disk.
//
// There is no timer, unlike bbolt's DB.Batch (MaxBatchDelay, 10 ms by
// default, would be added to every lone write): a write arriving while the
// disk is idle starts at once, and writes arriving during an fsync form the
// next group. Before it closes a group the committer lets the goroutines
// that are runnable now run, for as long as that brings more writes
// (gather): without it, on a process with fewer CPUs than runnable writers
// nearly every transaction held one write (see gather).
package boltgroup

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"go.etcd.io/bbolt"
)

// ErrClosed is returned by Do once the committer is closed.
var ErrClosed = errors.New("boltgroup: committer closed")

// NoWrite wraps the error of a write function that failed before it wrote
// anything (a decision to write nothing, a rejected request). Such a
// failure does not roll back the writes grouped with it: Do returns err to
// its caller alone and the rest of the group commits. Only a function that
// knows it wrote nothing may use it: a write it did make would be
// committed.
func NoWrite(err error) error { return &noWriteError{err} }

type noWriteError struct{ err error }

func (e *noWriteError) Error() string { return e.err.Error() }
func (e *noWriteError) Unwrap() error { return e.err }

// errNothingToCommit rolls back a group in which no function wrote.
var errNothingToCommit = errors.New("boltgroup: nothing to commit")

// outcome is a function's own result inside a group: nil, or the error it
// returned wrapped in NoWrite, unwrapped.
func outcome(err error) (own error, poisons bool) {
	var nw *noWriteError
	if errors.As(err, &nw) {
		return nw.err, false
	}
	return err, err != nil
}

// Committer is a group committer over one bbolt file.
type Committer struct {
	db   *bbolt.DB
	max  int
	reqs chan *request
	stop chan struct{}
	done chan struct{}

	writes atomic.Uint64 // writes committed
	txs    atomic.Uint64 // write transactions committed
}

type request struct {
	fn  func(*bbolt.Tx) error
	err chan error
}

// New starts a committer over db with at most limit writes per
// transaction (at least 1).
func New(db *bbolt.DB, limit int) *Committer {
	limit = max(limit, 1)
	c := &Committer{
		db:   db,
		max:  limit,
		reqs: make(chan *request, limit),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go c.run()
	return c
}

// Do runs fn in a group transaction and returns when it is committed and
// on disk, or failed (ErrClosed after Close). fn may run more than once:
// when another write of its group fails, the group is rolled back and each
// write runs again alone, so one failure never drops another's write; only
// the last run counts. A panic of fn is its error.
func (c *Committer) Do(fn func(*bbolt.Tx) error) error {
	r := &request{fn: fn, err: make(chan error, 1)}
	select {
	case c.reqs <- r:
	case <-c.done:
		return ErrClosed
	}
	select {
	case err := <-r.err:
		return err
	case <-c.done:
		// Stopped after taking r: its answer was sent before done closed.
		select {
		case err := <-r.err:
			return err
		default:
			return ErrClosed
		}
	}
}

// Close stops the committer; callers must have stopped calling Do.
func (c *Committer) Close() {
	close(c.stop)
	<-c.done
}

// Queued is how many writes wait for the committer now.
func (c *Committer) Queued() int { return len(c.reqs) }

// Stats are the writes and the write transactions committed so far.
func (c *Committer) Stats() (writes, txs uint64) { return c.writes.Load(), c.txs.Load() }

func (c *Committer) run() {
	defer close(c.done)
	batch := make([]*request, 0, c.max)
	for {
		select {
		case r := <-c.reqs:
			batch = append(batch[:0], r)
			c.gather()
		fill:
			for len(batch) < c.max {
				select {
				case r := <-c.reqs:
					batch = append(batch, r)
				default:
					break fill
				}
			}
			c.commit(batch)
			clear(batch)
		case <-c.stop:
			return
		}
	}
}

// gather lets the goroutines that are runnable now run before the group is
// closed, for as long as that brings more writes (up to a full group).
//
// A writer's send hands the CPU straight to the waiting committer (Go runs
// the goroutine it has just woken next). So when the process has fewer CPUs
// than runnable goroutines (a sidecar pinned to one CPU under 64 workers),
// the committer used to close nearly every group at the one write that
// woke it while the other writers waited runnable behind it: measured
// (issue 12), almost every transaction held one write, 2.85 fdatasyncs per
// accepted request, and 64 workers got half the throughput of 16. There is
// still no timer: a yield with nothing else to run returns at once, so a
// lone writer starts its transaction as before.
func (c *Committer) gather() {
	for {
		n := len(c.reqs)
		if n >= c.max-1 {
			return
		}
		runtime.Gosched()
		if len(c.reqs) == n {
			return
		}
	}
}

func (c *Committer) commit(batch []*request) {
	own := make([]error, len(batch))
	err := c.db.Update(func(tx *bbolt.Tx) error {
		wrote := false
		for i, r := range batch {
			e, poisons := outcome(safely(r.fn, tx))
			if poisons {
				return e
			}
			own[i], wrote = e, wrote || e == nil
		}
		if !wrote {
			return errNothingToCommit
		}
		return nil
	})
	if errors.Is(err, errNothingToCommit) {
		err = nil
	}
	if err == nil {
		n := 0
		for i, r := range batch {
			if own[i] == nil {
				n++
			}
			r.err <- own[i]
		}
		if n > 0 {
			c.count(nil, n)
		}
		return
	}
	if len(batch) == 1 {
		batch[0].err <- err
		return
	}
	// One function failed and took the group down: run each alone, so one
	// failure never drops another's write.
	for _, r := range batch {
		err := c.db.Update(func(tx *bbolt.Tx) error { return safely(r.fn, tx) })
		c.count(err, 1)
		err, _ = outcome(err)
		r.err <- err
	}
}

// count counts a committed transaction of n writes.
func (c *Committer) count(err error, n int) {
	if err == nil {
		c.txs.Add(1)
		c.writes.Add(uint64(n))
	}
}

// safely turns a panic of fn into an error, so that one bad write cannot
// take the committer (and every waiting caller) down.
func safely(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("boltgroup: write panicked: %v", p)
		}
	}()
	return fn(tx)
}
