package boltgroup

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
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
	db  *bbolt.DB
	max int

	mu sync.Mutex
	// queue holds the writes waiting for the next group, oldest first.
	queue []*request
	// leading: a group is being committed; its leader hands the lead on
	// (queue is empty whenever leading is false).
	leading bool
	closed  bool
	// idle is closed when the lead ends after Close (Close waits on it).
	idle chan struct{}

	writes atomic.Uint64 // writes committed
	txs    atomic.Uint64 // write transactions committed
}

type request struct {
	fn func(*bbolt.Tx) error
	// staged, when set, is the write's function instead of fn (DoStaged).
	staged func(*bbolt.Tx) (*Stage, error)
	err    chan error
	// lead is signalled when this write is to lead the next group.
	lead chan struct{}
	// work carries this write's Stage to its own goroutine, which answers
	// on worked (DoStaged); nil: the leader runs the Work itself.
	work   chan *Stage
	worked chan error
	// self: this is the leader's own write (its goroutine runs the lead).
	self bool
}

// call runs the write's function in tx.
func (r *request) call(tx *bbolt.Tx) (*Stage, error) {
	if r.staged != nil {
		return r.staged(tx)
	}
	return nil, r.fn(tx)
}

// New returns a committer over db with at most limit writes per
// transaction (at least 1). It starts no goroutine.
func New(db *bbolt.DB, limit int) *Committer {
	return &Committer{db: db, max: max(limit, 1)}
}

// Do runs fn in a group transaction and returns when it is committed and
// on disk, or failed (ErrClosed after Close). fn may run more than once:
// when another write of its group fails, the group is rolled back and each
// write runs again alone, so one failure never drops another's write; only
// the last run counts. A panic of fn is its error.
func (c *Committer) Do(fn func(*bbolt.Tx) error) error {
	return c.submit(&request{fn: fn, err: make(chan error, 1), lead: make(chan struct{}, 1)})
}

// submit queues r, leads a group or waits for the one that takes r, and
// returns r's answer. While it waits, it runs r's Work when the leader
// hands it over (DoStaged).
func (c *Committer) submit(r *request) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.queue = append(c.queue, r)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	for !lead {
		select {
		case err := <-r.err: // committed in a group another write led
			return err
		case st := <-r.work: // the leader goes on; this goroutine works
			r.worked <- safelyWork(st.Work)
		case <-r.lead:
			lead = true
		}
	}
	r.self = true
	c.lead()
	return <-r.err
}

// lead commits one group, the oldest waiting writes (the leader's own
// among them: it is the oldest), and hands the lead to the oldest write
// that waits after it, or ends the lead.
func (c *Committer) lead() {
	c.gather()
	c.mu.Lock()
	n := min(len(c.queue), c.max)
	batch := slices.Clone(c.queue[:n])
	c.queue = slices.Delete(c.queue, 0, n)
	c.mu.Unlock()
	c.commit(batch)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) > 0 {
		c.queue[0].lead <- struct{}{}
		return
	}
	c.leading = false
	if c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// Close refuses every later write (ErrClosed) and waits for the writes
// already taken to be committed; callers must have stopped calling Do.
func (c *Committer) Close() {
	c.mu.Lock()
	c.closed = true
	if !c.leading {
		c.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	<-idle
}

// Queued is how many writes wait for a group now (not counting the group
// being committed).
func (c *Committer) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Stats are the writes and the write transactions committed so far.
func (c *Committer) Stats() (writes, txs uint64) { return c.writes.Load(), c.txs.Load() }

// gather lets the goroutines that are runnable now run before the group is
// closed, for as long as that brings more writes (up to a full group).
//
// When the process has fewer CPUs than runnable writers (a sidecar pinned
// to one CPU under 64 workers), a group closed at once would hold the one
// write that happened to run first while the other writers waited runnable
// behind it: measured (issue 12, on the committer goroutine this package
// had then), almost every transaction held one write, 2.85 fdatasyncs per
// accepted request, and 64 workers got half the throughput of 16. There is
// still no timer: a yield with nothing else to run returns at once, so a
// lone writer starts its transaction as before.
func (c *Committer) gather() {
	for {
		n := c.Queued()
		if n >= c.max {
			return
		}
		runtime.Gosched()
		if c.Queued() == n {
			return
		}
	}
}

func (c *Committer) commit(batch []*request) {
	own := make([]error, len(batch))
	err := c.db.Update(func(tx *bbolt.Tx) error {
		wrote := false
		var stages staging
		for i, r := range batch {
			st, err := safely(r.call, tx)
			e, poisons := outcome(err)
			if poisons {
				stages.drain()
				return e
			}
			own[i], wrote = e, wrote || e == nil
			if e == nil && st != nil {
				stages.start(r, st)
			}
		}
		if err := stages.finish(tx); err != nil {
			return err
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
		err := c.db.Update(func(tx *bbolt.Tx) error { return alone(r, tx) })
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
func safely(fn func(*bbolt.Tx) (*Stage, error), tx *bbolt.Tx) (st *Stage, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, err = nil, fmt.Errorf("boltgroup: write panicked: %v", p)
		}
	}()
	return fn(tx)
}
