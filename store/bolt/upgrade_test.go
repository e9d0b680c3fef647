package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
	"github.com/fencegate/fencegate/store/storetest"
)

// toSchema1 rewrites a file as schema 1 wrote it: records and receipts as
// JSON, no counts bucket, schema "1" (the other buckets were JSON then and
// still are).
func toSchema1(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		rewrite := func(name []byte, decode func([]byte) (any, error)) error {
			b := tx.Bucket(name)
			vals := map[string][]byte{}
			if err := b.ForEach(func(k, v []byte) error {
				x, err := decode(v)
				if err != nil {
					return err
				}
				if vals[string(k)], err = json.Marshal(x); err != nil {
					return err
				}
				return nil
			}); err != nil {
				return err
			}
			for k, v := range vals {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
			return nil
		}
		if err := rewrite(bucketRecords, func(v []byte) (any, error) { return codec.DecodeRecord(v) }); err != nil {
			return err
		}
		if err := rewrite(bucketReceipts, func(v []byte) (any, error) { return codec.DecodeReceipt(v) }); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketCounts); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rawValues returns the first byte of every record and receipt value.
func rawValues(t *testing.T, s *Store) map[string]byte {
	t.Helper()
	out := map[string]byte{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketRecords, bucketReceipts} {
			if err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				out[string(name)+"/"+string(k)] = v[0]
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// everything reads every record and receipt through the store.
func everything(t *testing.T, s *Store) (map[string]store.Record, map[store.ReceiptKey]store.Receipt) {
	t.Helper()
	ctx := context.Background()
	recs, err := s.Records(ctx, store.RecordsQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	byRes := map[string]store.Record{}
	receipts := map[store.ReceiptKey]store.Receipt{}
	for _, r := range recs {
		byRes[r.Resource] = r
		rs, err := s.ReceiptsOf(ctx, store.ReceiptsQuery{Resource: r.Resource, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range rs {
			receipts[rc.Key()] = rc
			// And by key, the Load path.
			if one, err := s.Receipt(ctx, rc.Key()); err != nil || !reflect.DeepEqual(one, rc) {
				t.Fatalf("receipt %v: %+v, %v", rc.Key(), one, err)
			}
		}
	}
	return byRes, receipts
}

// A schema-1 file (JSON values, no counts) is upgraded in place by Open:
// schema 2, the counts built from its receipts, every value read as it
// was, values left JSON until rewritten; writes then go binary, trim by
// the counts, and the file reads back the same after a reopen.
func TestUpgradeFromSchema1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := storetest.T0
	for seq := uint64(1); seq <= 5; seq++ {
		beginCommit(t, s, "a", 1, seq, 0, t0)
	}
	beginCommit(t, s, "b", 1, 1, 0, t0)
	beginCommit(t, s, "b", 1, 2, 0, t0)
	// b: a mutation in flight; c: paused; d: a quarantine entry.
	if r, err := s.Begin(ctx, storetest.Attempt("b", 1, 3, "p3")); err != nil || r.Decision != store.DecisionProceed {
		t.Fatalf("begin: %+v, %v", r, err)
	}
	beginCommit(t, s, "c", 4, 1, 0, t0)
	if _, err := s.Pause(ctx, store.PauseInput{Resource: "c", Reason: store.PauseOperator, Detail: "maintenance", Now: t0}); err != nil {
		t.Fatal(err)
	}
	beginCommit(t, s, "d", 1, 1, 0, t0)
	if r, err := s.Begin(ctx, storetest.Attempt("d", 1, 1, "another payload")); err != nil || r.Decision != store.DecisionSegmentConflict {
		t.Fatalf("conflict: %+v, %v", r, err)
	}
	wantRecs, wantReceipts := everything(t, s)
	wantQ, err := s.ListQuarantined(ctx, "")
	if err != nil || len(wantQ) != 1 {
		t.Fatalf("quarantine %+v, %v", wantQ, err)
	}
	gen, _ := s.Generation(ctx)
	_ = s.Close()

	toSchema1(t, path)
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for k, b := range rawValues(t, s) {
		if b != '{' {
			t.Fatalf("%s: first byte %q: the upgrade rewrote it (values stay JSON until rewritten)", k, b)
		}
	}
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if v := string(tx.Bucket(bucketMeta).Get(keySchema)); v != "2" {
			t.Fatalf("schema %q after the upgrade", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := checkCounts(t, s.db, "upgrade"); !maps.Equal(got, map[string]uint64{"a": 5, "b": 2, "c": 1, "d": 1}) {
		t.Fatalf("counts %v after the upgrade", got)
	}
	gotRecs, gotReceipts := everything(t, s)
	if !reflect.DeepEqual(gotRecs, wantRecs) || !reflect.DeepEqual(gotReceipts, wantReceipts) {
		t.Fatalf("after the upgrade\n%+v\n%+v\nwant\n%+v\n%+v", gotRecs, gotReceipts, wantRecs, wantReceipts)
	}
	if q, err := s.ListQuarantined(ctx, ""); err != nil || !reflect.DeepEqual(q, wantQ) {
		t.Fatalf("quarantine %+v, %v", q, err)
	}
	if g, _ := s.Generation(ctx); g != gen {
		t.Fatalf("generation %q, want %q", g, gen)
	}

	// Writes: b's commit (trimming to 2: its oldest receipt goes), then
	// more of a, trimming to 3 against the counts the upgrade built.
	c := storetest.Answer(storetest.Attempt("b", 1, 3, "p3").Ref())
	c.KeepReceipts = 2
	if _, err := s.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(6); seq <= 7; seq++ {
		beginCommit(t, s, "a", 1, seq, 3, t0)
	}
	if got := checkCounts(t, s.db, "writes after the upgrade"); !maps.Equal(got, map[string]uint64{"a": 3, "b": 2, "c": 1, "d": 1}) {
		t.Fatalf("counts %v after the writes", got)
	}
	raw := rawValues(t, s)
	if raw["records/a"] != codec.Version || raw["records/b"] != codec.Version || raw["records/c"] != '{' {
		t.Fatalf("first bytes %v: rewritten records binary, the others JSON", raw)
	}
	wantRecs, wantReceipts = everything(t, s)
	if len(wantReceipts) != 7 || wantRecs["b"].InFlight != nil || wantRecs["c"].Pause == nil {
		t.Fatalf("after the writes: %+v %+v", wantRecs, wantReceipts)
	}
	_ = s.Close()

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkCounts(t, s.db, "reopen")
	gotRecs, gotReceipts = everything(t, s)
	if !reflect.DeepEqual(gotRecs, wantRecs) || !reflect.DeepEqual(gotReceipts, wantReceipts) {
		t.Fatalf("after a reopen\n%+v\n%+v\nwant\n%+v\n%+v", gotRecs, gotReceipts, wantRecs, wantReceipts)
	}
}

// A schema-2 file without its counts bucket is refused, not counted anew.
func TestOpenRefusesSchema2WithoutCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketCounts) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "counts") {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}
