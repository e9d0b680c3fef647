package boltgroup

import (
	"errors"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// member is a staged write of a group whose goroutine waits as Do's does
// and runs the Work the leader hands it.
func member(fn func(*bbolt.Tx) (*Stage, error)) *request {
	r := &request{staged: fn, err: make(chan error, 1), work: make(chan *Stage, 1), worked: make(chan error, 1)}
	go func() {
		for st := range r.work {
			r.worked <- safelyWork(st.Work)
		}
	}()
	return r
}

func stagedPut(k string, work func() error) func(*bbolt.Tx) (*Stage, error) {
	return func(tx *bbolt.Tx) (*Stage, error) {
		if err := tx.Bucket([]byte("b")).Put([]byte(k), []byte("unsealed")); err != nil {
			return nil, err
		}
		return &Stage{Work: work, Finish: func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("b")).Put([]byte(k), []byte("sealed"))
		}}, nil
	}
}

// TestStagedWorkRunsInMembers: the Works of two members of a group run at
// the same time, each in its member's goroutine: each waits for the other
// to start, which the leader running them one after another never lets
// happen (the test would not end). Every Finish runs before the commit.
func TestStagedWorkRunsInMembers(t *testing.T) {
	db := openDB(t)
	c := New(db, 8)
	var both sync.WaitGroup
	both.Add(2)
	met := make(chan struct{})
	go func() { both.Wait(); close(met) }()
	// A bound only so that a broken committer fails instead of hanging:
	// the two Works meet at once when they run in parallel.
	barrier := func() error {
		both.Done()
		select {
		case <-met:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the Works of a group ran one after another")
		}
	}
	leader := &request{staged: stagedPut("l", func() error { return nil }), err: make(chan error, 1), self: true}
	a, b := member(stagedPut("a", barrier)), member(stagedPut("b", barrier))
	c.commit([]*request{leader, a, b})
	for _, r := range []*request{leader, a, b} {
		if err := <-r.err; err != nil {
			t.Fatal(err)
		}
	}
	close(a.work)
	close(b.work)
	_ = db.View(func(tx *bbolt.Tx) error {
		for _, k := range []string{"l", "a", "b"} {
			if v := string(tx.Bucket([]byte("b")).Get([]byte(k))); v != "sealed" {
				t.Errorf("%s committed as %q, want sealed", k, v)
			}
		}
		return nil
	})
}

// TestStagedWorkFailure: a Work that fails takes its group down: the
// others are committed alone, sealed, and nothing of the failed write is,
// neither its function's write nor its Finish.
func TestStagedWorkFailure(t *testing.T) {
	db := openDB(t)
	c := New(db, 8)
	boom := errors.New("boom")
	a := member(stagedPut("a", func() error { return nil }))
	bad := member(stagedPut("bad", func() error { return boom }))
	plain := &request{fn: put("plain"), err: make(chan error, 1)}
	c.commit([]*request{a, bad, plain})
	if err := <-a.err; err != nil {
		t.Errorf("a: %v", err)
	}
	if err := <-bad.err; !errors.Is(err, boom) {
		t.Errorf("bad: %v, want boom", err)
	}
	if err := <-plain.err; err != nil {
		t.Errorf("plain: %v", err)
	}
	close(a.work)
	close(bad.work)
	got := keys(t, db)
	if !got["a"] || !got["plain"] || got["bad"] {
		t.Errorf("committed %v, want a and plain only", got)
	}
	_ = db.View(func(tx *bbolt.Tx) error {
		if v := string(tx.Bucket([]byte("b")).Get([]byte("a"))); v != "sealed" {
			t.Errorf("a committed as %q, want sealed", v)
		}
		return nil
	})
}
