package bolt

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// Files written before receipts kept their owner stay readable under the
// same SchemaVersion: the owner is an optional JSON member, so an old
// receipt, and the receipt of an old in-flight marker, read back ownerless.
func TestOwnerlessRecordsOfEarlierFiles(t *testing.T) {
	// The encodings as written before the owner existed (TestEncodingIsPinned).
	const oldReceipt = `{"id":"rcpt-x","resource":"r","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p","grantDigest":"g","backendStatus":201,"response":{"status":201,"header":{"A":["b"]},"body":"aGk=","truncated":true},"acceptedAt":"2026-07-19T12:00:00Z","source":"COMMIT"}`
	const oldRecord = `{"resource":"r2","highestFence":7,"root":"root","lease":"l","grantDigest":"g","evidence":{"issuerEpoch":3,"backendRevision":9},"acceptedAt":"2026-07-19T12:00:00Z","lastSeq":1,"inFlight":{"resource":"r2","fence":7,"root":"root","seq":2,"operationId":"root/2","payloadDigest":"p","grantDigest":"g","lease":"l","evidence":{"issuerEpoch":3,"backendRevision":9},"begunAt":"2026-07-19T12:00:00Z","deadline":"2026-07-19T12:00:00Z","attempts":1,"state":"UNKNOWN","cause":"NO_ANSWER","unknownSince":"2026-07-19T12:00:00Z"}}`
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
	rk := store.ReceiptKey{Resource: "r", Fence: 7, Seq: 2}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, err := range []error{
			tx.Bucket(bucketReceipts).Put(receiptKey(rk), []byte(oldReceipt)),
			tx.Bucket(bucketOps).Put(opKey("r", "root/2", 7), receiptKey(rk)),
			tx.Bucket(bucketRecords).Put([]byte("r2"), []byte(oldRecord)),
			tx.Bucket(bucketInFlight).Put([]byte("r2"), []byte{}),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	rc, err := s.Receipt(ctx, rk)
	if err != nil || rc.Owner != "" || rc.ID != "rcpt-x" || rc.GrantDigest != "g" || rc.BackendStatus != 201 {
		t.Fatalf("old receipt: %+v, %v", rc, err)
	}
	byOp, err := s.ReceiptsByOperation(ctx, "r", "root/2")
	if err != nil || len(byOp) != 1 || byOp[0].Owner != "" {
		t.Fatalf("old receipt by operation: %+v, %v", byOp, err)
	}
	us, err := s.ListUnknown(ctx, time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC))
	if err != nil || len(us) != 1 || us[0].Owner != "" {
		t.Fatalf("old marker: %+v, %v", us, err)
	}
	// The late answer of the old marker: its receipt has no owner either.
	got, err := s.Commit(ctx, store.CommitInput{OpRef: store.OpRef{Resource: "r2", Fence: 7, Root: "root", Seq: 2}, BackendStatus: 201,
		Now: time.Date(2026, 7, 19, 12, 0, 1, 0, time.UTC)})
	if err != nil || got.Owner != "" || got.Source != store.SourceCommit {
		t.Fatalf("commit of an old marker: %+v, %v", got, err)
	}
}

// An owned receipt encodes its owner as the optional "owner" member, and an
// ownerless one encodes exactly as before (so TestEncodingIsPinned holds).
func TestOwnerEncoding(t *testing.T) {
	rc := store.Receipt{ID: "rcpt-x", OperationID: "root/2", PayloadDigest: "p", GrantDigest: "g", Owner: "spiffe://t/w", BackendStatus: 201}
	raw, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"grantDigest":"g","owner":"spiffe://t/w","backendStatus":201`) {
		t.Fatalf("encoding %s", raw)
	}
	var back store.Receipt
	if err := json.Unmarshal(raw, &back); err != nil || back.Owner != rc.Owner {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	m := store.Mutation{Owner: "w"}
	if raw, _ := json.Marshal(m); !strings.Contains(string(raw), `"lease":"","owner":"w","evidence"`) {
		t.Fatalf("mutation encoding %s", raw)
	}
	rc.Owner = ""
	if raw, _ := json.Marshal(rc); strings.Contains(string(raw), "owner") {
		t.Fatalf("ownerless encoding %s", raw)
	}
}
