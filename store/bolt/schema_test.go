package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

func TestOpenRefusesOtherSchemaVersion(t *testing.T) {
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
	// Schema 3 (the next one): schema 1 is upgraded (TestUpgradeFromSchema1).
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte("3")) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "schema version") {
		t.Fatalf("Open of a schema 3 file: %v, want ErrCorrupt", err)
	}
}

func TestOpenRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of a foreign bbolt file: %v, want ErrCorrupt", err)
	}
}

// The stored JSON is the file format: if this test fails, the shape of a
// store type changed, and SchemaVersion must be bumped (with a migration).
func TestEncodingIsPinned(t *testing.T) {
	at := time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC)
	ref := store.OpRef{Resource: "r", Fence: 7, Root: "root", Seq: 2}
	rec := store.Record{
		Resource: "r", HighestFence: 7, Root: "root", Lease: "l", GrantDigest: "g",
		Evidence: store.Evidence{IssuerEpoch: 3, BackendRevision: 9}, AcceptedAt: at, LastSeq: 1,
		InFlight: &store.Mutation{OpRef: ref, OperationID: "root/2", PayloadDigest: "p", GrantDigest: "g", Lease: "l",
			Evidence: store.Evidence{IssuerEpoch: 3, BackendRevision: 9}, BegunAt: at, Deadline: at, Attempts: 1,
			State: store.MutationUnknown, Cause: store.CauseNoAnswer, UnknownSince: at},
		Pause: &store.Pause{Reason: store.PauseFenceRegression, Detail: "d", At: at, Fence: 5, Evidence: store.Evidence{IssuerEpoch: 4}},
	}
	rc := store.Receipt{ID: "rcpt-x", OpRef: ref, OperationID: "root/2", PayloadDigest: "p", GrantDigest: "g", BackendStatus: 201,
		Response:   store.StoredResponse{Status: 201, Header: map[string][]string{"A": {"b"}}, Body: []byte("hi"), Truncated: true},
		AcceptedAt: at, Source: store.SourceCommit}
	q := store.Quarantine{ID: "qrnt-x", OpRef: ref, OperationID: "root/2", PayloadDigest: "p2", AcceptedPayloadDigest: "p",
		ReceiptID: "rcpt-x", GrantDigest: "g", FirstSeen: at, LastSeen: at, Attempts: 2}
	// quietAt is optional (omitted when zero): every record of an earlier
	// version decodes without it, and Mutation.QuietBy reads that
	// conservatively, so adding it needed no SchemaVersion bump.
	quiet := *rec.InFlight
	quiet.QuietAt = at.Add(time.Minute)
	for _, c := range []struct {
		v    any
		want string
	}{
		{quiet, `{"resource":"r","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p","grantDigest":"g","lease":"l","evidence":{"issuerEpoch":3,"backendRevision":9},"begunAt":"2026-07-19T12:00:00Z","deadline":"2026-07-19T12:00:00Z","quietAt":"2026-07-19T12:01:00Z","attempts":1,"state":"UNKNOWN","cause":"NO_ANSWER","unknownSince":"2026-07-19T12:00:00Z"}`},
		{rec, `{"resource":"r","highestFence":7,"root":"root","lease":"l","grantDigest":"g","evidence":{"issuerEpoch":3,"backendRevision":9},"acceptedAt":"2026-07-19T12:00:00Z","lastSeq":1,"inFlight":{"resource":"r","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p","grantDigest":"g","lease":"l","evidence":{"issuerEpoch":3,"backendRevision":9},"begunAt":"2026-07-19T12:00:00Z","deadline":"2026-07-19T12:00:00Z","attempts":1,"state":"UNKNOWN","cause":"NO_ANSWER","unknownSince":"2026-07-19T12:00:00Z"},"pause":{"reason":"FENCE_REGRESSION","detail":"d","at":"2026-07-19T12:00:00Z","fence":5,"evidence":{"issuerEpoch":4,"backendRevision":0}}}`},
		{rc, `{"id":"rcpt-x","resource":"r","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p","grantDigest":"g","backendStatus":201,"response":{"status":201,"header":{"A":["b"]},"body":"aGk=","truncated":true},"acceptedAt":"2026-07-19T12:00:00Z","source":"COMMIT"}`},
		{q, `{"id":"qrnt-x","resource":"r","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p2","acceptedPayloadDigest":"p","receiptId":"rcpt-x","grantDigest":"g","firstSeen":"2026-07-19T12:00:00Z","lastSeen":"2026-07-19T12:00:00Z","attempts":2}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("encoding of %T changed (bump SchemaVersion):\n got %s\nwant %s", c.v, got, c.want)
		}
	}
	// The members added within schema 1: an issuer lineage in evidence, the
	// prior lineages of a record, a STORE_LOSS marker and pause, a pin.
	lin := store.Record{Resource: "r", HighestFence: 7, Root: "root", Evidence: store.Evidence{IssuerEpoch: 3, BackendRevision: 9, Lineage: "l2"},
		PriorLineages: []store.PriorLineage{{Lineage: "l1", Fence: 6}}, LastSeq: 1,
		InFlight: &store.Mutation{OpRef: ref, OperationID: "root/2", PayloadDigest: "p", Evidence: store.Evidence{Lineage: "l2"}, BegunAt: at, Deadline: at,
			Attempts: 1, State: store.MutationUnknown, Cause: store.CauseStoreLoss, UnknownSince: at},
		Pause: &store.Pause{Reason: store.PauseStoreLoss, Detail: "d", At: at, Fence: 7, Evidence: store.Evidence{Lineage: "l2"}}}
	pin := store.TrustedKey{Kid: "k1", Thumbprint: "t", Alg: "EdDSA", PinnedAt: at, How: store.TrustFirstUse, Detail: "d", InUseUntil: at}
	signedPin := store.TrustedKey{Kid: "k1", Thumbprint: "t", Alg: "EdDSA", PinnedAt: at, How: store.TrustSignedBundle, BundleSeq: uint64(at.UnixMilli())}
	for _, c := range []struct {
		v    any
		want string
	}{
		{lin, `{"resource":"r","highestFence":7,"root":"root","evidence":{"issuerEpoch":3,"backendRevision":9,"lineage":"l2"},"priorLineages":[{"lineage":"l1","fence":6}],"lastSeq":1,"inFlight":{"resource":"r","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p","grantDigest":"","lease":"","evidence":{"issuerEpoch":0,"backendRevision":0,"lineage":"l2"},"begunAt":"2026-07-19T12:00:00Z","deadline":"2026-07-19T12:00:00Z","attempts":1,"state":"UNKNOWN","cause":"STORE_LOSS","unknownSince":"2026-07-19T12:00:00Z"},"pause":{"reason":"STORE_LOSS","detail":"d","at":"2026-07-19T12:00:00Z","fence":7,"evidence":{"issuerEpoch":0,"backendRevision":0,"lineage":"l2"}}}`},
		{pin, `{"kid":"k1","thumbprint":"t","alg":"EdDSA","pinnedAt":"2026-07-19T12:00:00Z","how":"FIRST_USE","detail":"d","inUseUntil":"2026-07-19T12:00:00Z"}`},
		{signedPin, `{"kid":"k1","thumbprint":"t","alg":"EdDSA","pinnedAt":"2026-07-19T12:00:00Z","how":"SIGNED_BUNDLE","bundleSeq":1784462400000}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("encoding of %T changed (bump SchemaVersion):\n got %s\nwant %s", c.v, got, c.want)
		}
	}
	// A record written before lineages decodes without them.
	var old store.Record
	if err := json.Unmarshal([]byte(`{"resource":"r","highestFence":7,"root":"root","evidence":{"issuerEpoch":3,"backendRevision":9},"lastSeq":1}`), &old); err != nil ||
		old.Evidence.Lineage != "" || old.PriorLineages != nil || old.HighestFence != 7 {
		t.Fatalf("old record: %+v, %v", old, err)
	}
	// And it round-trips exactly.
	raw, _ := json.Marshal(rec)
	var back store.Record
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(raw) {
		t.Fatalf("record does not round-trip:\n%s\n%s", raw, again)
	}
}

// A file of an earlier version of schema 1 (no generation, no trust
// bucket) opens: it gets a generation once, kept from then on, and a trust
// bucket; a file whose generation is malformed is refused.
func TestOpenAddsGenerationOnce(t *testing.T) {
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
	if err := db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketTrust); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(keyGeneration)
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := s.Generation(ctx)
	if err != nil || store.ValidateGeneration(g) != nil {
		t.Fatalf("generation %q, %v", g, err)
	}
	if pins, err := s.TrustedKeys(ctx); err != nil || len(pins) != 0 {
		t.Fatalf("pins %+v, %v", pins, err)
	}
	_ = s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.Generation(ctx); err != nil || again != g {
		t.Fatalf("generation after reopen %q, want %q (%v)", again, g, err)
	}
	_ = s.Close()
	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyGeneration, []byte("NOT A GENERATION")) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open with a malformed generation: %v", err)
	}
}

// A new file is another data set: another generation.
func TestNewFileNewGeneration(t *testing.T) {
	dir := t.TempDir()
	var gens []string
	for _, name := range []string{"a.db", "b.db"} {
		s, err := Open(filepath.Join(dir, name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.Generation(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
		_ = s.Close()
	}
	if gens[0] == gens[1] {
		t.Fatalf("two files share generation %s", gens[0])
	}
}
