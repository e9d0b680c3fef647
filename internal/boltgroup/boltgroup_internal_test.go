package boltgroup

import (
	"errors"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"
)

func openDB(t *testing.T) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	return db
}

func put(k string) func(*bbolt.Tx) error {
	return func(tx *bbolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), []byte("v")) }
}

// runGroup commits batch as one group (what run does with the writes
// waiting together) and returns each caller's answer.
func runGroup(c *Committer, fns ...func(*bbolt.Tx) error) []error {
	batch := make([]*request, len(fns))
	for i, fn := range fns {
		batch[i] = &request{fn: fn, err: make(chan error, 1)}
	}
	c.commit(batch)
	out := make([]error, len(batch))
	for i, r := range batch {
		out[i] = <-r.err
	}
	return out
}

func keys(t *testing.T, db *bbolt.DB) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	_ = db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("b")).ForEach(func(k, _ []byte) error { got[string(k)] = true; return nil })
	})
	return got
}

// A write that fails having written nothing (NoWrite) gets its own error
// back and does not roll back the writes grouped with it: they commit in
// that same transaction. A plain error still takes the group down, and each
// write is then run alone, so the others commit all the same.
func TestNoWriteKeepsTheGroup(t *testing.T) {
	db := openDB(t)
	c := &Committer{db: db, max: 8}
	refused := errors.New("refused")
	errs := runGroup(c, put("a"), func(*bbolt.Tx) error { return NoWrite(refused) }, put("b"))
	if errs[0] != nil || errs[2] != nil || errs[1] != refused {
		t.Fatalf("answers %v, want nil, refused, nil", errs)
	}
	if got := keys(t, db); !got["a"] || !got["b"] {
		t.Errorf("after a NoWrite failure in the group: keys %v, want a and b", got)
	}
	if w, tx := c.Stats(); w != 2 || tx != 1 {
		t.Errorf("stats writes %d txs %d, want 2 writes in 1 transaction", w, tx)
	}

	// A plain failure: the group is redone write by write.
	errs = runGroup(c, put("c"), func(tx *bbolt.Tx) error {
		_ = tx.Bucket([]byte("b")).Put([]byte("half"), []byte("v"))
		return refused
	}, put("d"))
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], refused) {
		t.Fatalf("answers %v, want nil, refused, nil", errs)
	}
	if got := keys(t, db); !got["c"] || !got["d"] || got["half"] {
		t.Errorf("after a failed write in the group: keys %v, want c and d and not the failed write's", got)
	}

	// Nothing written at all: no transaction is committed.
	_, txs := c.Stats()
	errs = runGroup(c, func(*bbolt.Tx) error { return NoWrite(refused) })
	if errs[0] != refused {
		t.Fatalf("answer %v, want refused", errs[0])
	}
	if _, now := c.Stats(); now != txs {
		t.Errorf("a group that wrote nothing committed a transaction")
	}
}
