package bolt

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// reopen closes s and opens its file again.
func reopen(tb testing.TB, s store.Store) store.Store {
	path := s.(*Store).Path()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	again, err := Open(path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = again.Close() })
	return again
}

func TestReopen(t *testing.T) {
	storetest.RunReopen(t, newStore, reopen)
}

// A file written before the enforcement bucket existed (schema 1 without
// it) opens, keeps its records and gets a working ledger.
func TestOpenAddsEnforcementBucketToOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fence.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.BeginCommitLoop(t, s, "old-", 1, 3)
	_ = s.Close()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketEnforcement) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a file without the enforcement bucket: %v", err)
	}
	defer s.Close()
	if rec, err := s.Record(ctx, "old-0"); err != nil || rec.LastSeq != 3 {
		t.Fatalf("record after reopen: %+v, %v", rec, err)
	}
	if es, err := s.Enforcements(ctx); err != nil || len(es) != 0 {
		t.Fatalf("Enforcements: %+v, %v", es, err)
	}
	in := store.EnforcementInput{Shape: "PUT /v1/items/{}", Kind: store.EnforcementEnforce, Now: storetest.T0}
	if _, err := s.RecordEnforcement(ctx, in); err != nil {
		t.Fatal(err)
	}
	if es, err := s.Enforcements(ctx); err != nil || len(es) != 1 || !es[0].EnforcedSince.Equal(storetest.T0) {
		t.Fatalf("Enforcements: %+v, %v", es, err)
	}
}

// A repeated ENFORCE is answered from a read-only transaction: no write.
func TestRepeatedEnforceDoesNotWrite(t *testing.T) {
	ctx := context.Background()
	s := newStore(t).(*Store)
	in := store.EnforcementInput{Shape: "PUT /v1/items/{}", Kind: store.EnforcementEnforce, Now: storetest.T0}
	if _, err := s.RecordEnforcement(ctx, in); err != nil {
		t.Fatal(err)
	}
	before := s.Counters()
	in.Now = in.Now.Add(time.Hour)
	if _, err := s.RecordEnforcement(ctx, in); err != nil {
		t.Fatal(err)
	}
	if after := s.Counters(); after != before {
		t.Fatalf("repeated ENFORCE wrote: counters %+v, then %+v", before, after)
	}
}

// The stored JSON of a ledger entry is part of the file format.
func TestEnforcementEncodingIsPinned(t *testing.T) {
	at := time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC)
	e := store.Enforcement{Shape: "PUT /v1/items/{}", EnforcedSince: at, History: []store.EnforcementEvent{
		{At: at, Kind: store.EnforcementEnforce},
		{At: at, Kind: store.EnforcementForcedDowngrade, Detail: "to shadow"},
	}}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"shape":"PUT /v1/items/{}","enforcedSince":"2026-07-19T12:00:00Z","history":[` +
		`{"at":"2026-07-19T12:00:00Z","kind":"ENFORCE"},{"at":"2026-07-19T12:00:00Z","kind":"FORCED_DOWNGRADE","detail":"to shadow"}]}`
	if string(raw) != want {
		t.Fatalf("encoding\n got %s\nwant %s", raw, want)
	}
	var back store.Enforcement
	if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back, e) {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	raw, _ = json.Marshal(store.Enforcement{Shape: "POST /v1/items"})
	if string(raw) != `{"shape":"POST /v1/items"}` {
		t.Fatalf("entry not enforced: %s", raw)
	}
}
