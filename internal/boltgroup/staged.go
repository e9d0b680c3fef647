package boltgroup

import (
	"fmt"

	"go.etcd.io/bbolt"
)

// Stage is what a write of DoStaged leaves to do after its function ran
// in the group transaction. Work is pure computation (the registry signs
// a grant there): it runs in the write's own goroutine while the leader
// runs the functions after it, so the writes of a group do it in
// parallel, not one after another on the leader. Finish runs in the same
// transaction once every Work of the group has returned, before the
// commit: nothing of a staged write is committed without its Finish.
type Stage struct {
	Work   func() error
	Finish func(*bbolt.Tx) error
}

// DoStaged is Do for a write whose function may return a Stage (nil: none).
// A failed Work or Finish fails the group like a failed function: it is
// rolled back and each write runs again alone (its Work then on the
// leader). fn, Work and Finish may run more than once; only the last run
// counts.
func (c *Committer) DoStaged(fn func(*bbolt.Tx) (*Stage, error)) error {
	return c.submit(&request{staged: fn, err: make(chan error, 1), lead: make(chan struct{}, 1),
		work: make(chan *Stage, 1), worked: make(chan error, 1)})
}

// staging tracks the Stages of one group transaction.
type staging struct {
	stages []*Stage
	// handed are the writes whose Work runs in their own goroutine; the
	// others' (the leader's own, a plain test request) runs in finish.
	handed []*request
	inline []*Stage
}

// start hands st.Work to r's goroutine, or keeps it for finish.
func (s *staging) start(r *request, st *Stage) {
	s.stages = append(s.stages, st)
	if r.work != nil && !r.self {
		r.work <- st
		s.handed = append(s.handed, r)
		return
	}
	s.inline = append(s.inline, st)
}

// finish waits for every Work (running the inline ones meanwhile), then
// runs every Finish in tx, in the order the functions ran. The first error
// is returned, after every handed Work has answered.
func (s *staging) finish(tx *bbolt.Tx) error {
	var first error
	for _, st := range s.inline {
		if err := safelyWork(st.Work); err != nil && first == nil {
			first = err
		}
	}
	for _, r := range s.handed {
		if err := <-r.worked; err != nil && first == nil {
			first = err
		}
	}
	s.handed = nil
	if first != nil {
		return first
	}
	for _, st := range s.stages {
		if err := safelyFinish(st.Finish, tx); err != nil {
			return err
		}
	}
	return nil
}

// drain waits for the handed Works of a group that failed, so that no
// answer is left for a later run.
func (s *staging) drain() {
	for _, r := range s.handed {
		<-r.worked
	}
	s.handed = nil
}

// alone runs r by itself in tx: its function, then its Work and Finish.
func alone(r *request, tx *bbolt.Tx) error {
	st, err := safely(r.call, tx)
	if err != nil || st == nil {
		return err
	}
	if err := safelyWork(st.Work); err != nil {
		return err
	}
	return safelyFinish(st.Finish, tx)
}

func safelyWork(fn func() error) (err error) {
	if fn == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("boltgroup: staged work panicked: %v", p)
		}
	}()
	return fn()
}

func safelyFinish(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	if fn == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("boltgroup: staged finish panicked: %v", p)
		}
	}()
	return fn(tx)
}
