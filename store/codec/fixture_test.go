package codec_test

import (
	"strings"
	"time"

	"github.com/fencegate/fencegate/store"
)

// at is the fixed time of the fixtures.
var at = time.Date(2026, 7, 19, 12, 0, 0, 500, time.UTC)

// fullRecord has every member set: a marker in flight (unknown) and a pause.
func fullRecord() store.Record {
	ref := store.OpRef{Resource: "r", Fence: 7, Root: "root", Seq: 2}
	return store.Record{
		Resource: "r", HighestFence: 7, Root: "root", Lease: "l", GrantDigest: "g",
		Evidence:      store.Evidence{IssuerEpoch: 3, BackendRevision: 9, Lineage: "l2"},
		PriorLineages: []store.PriorLineage{{Lineage: "l1", Fence: 6}},
		AcceptedAt:    at, LastSeq: 1,
		Superseded: store.Superseded{Fence: 6, Root: "root6", LastSeq: 4},
		InFlight: &store.Mutation{OpRef: ref, OperationID: "root/2", PayloadDigest: "p", GrantDigest: "g", Lease: "l", Owner: "o",
			Evidence: store.Evidence{IssuerEpoch: 3, BackendRevision: 9, Lineage: "l2"}, BegunAt: at, Deadline: at.Add(time.Minute),
			QuietAt: at.Add(2 * time.Minute), Attempts: 1, State: store.MutationUnknown, Cause: store.CauseNoAnswer, UnknownSince: at},
		Pause: &store.Pause{Reason: store.PauseFenceRegression, Detail: "d", At: at, Fence: 5, Evidence: store.Evidence{IssuerEpoch: 4}},
	}
}

// fullReceipt has every member set.
func fullReceipt() store.Receipt {
	return store.Receipt{ID: "rcpt-x", OpRef: store.OpRef{Resource: "r", Fence: 7, Root: "root", Seq: 2}, OperationID: "root/2",
		PayloadDigest: "p", GrantDigest: "g", Owner: "o", BackendStatus: 201,
		Response: store.StoredResponse{Status: 201, Header: map[string][]string{"A": {"b"}, "C": {"d", "e"}, "N": nil},
			Body: []byte("hi"), Truncated: true},
		AcceptedAt: at, Source: store.SourceCommit}
}

// hotRecord is a record as a Begin leaves it: a marker in flight, no pause.
func hotRecord() store.Record {
	r := fullRecord()
	r.Resource = "orders/customer-4711"
	r.Root = "op-3ad8f0c2b7e14c5f9b8a6d2e1f0c3b4a"
	r.GrantDigest = "sha256:" + strings.Repeat("ab", 32)
	r.PriorLineages, r.Pause, r.Superseded = nil, nil, store.Superseded{}
	m := *r.InFlight
	m.Resource, m.Root, m.OperationID = r.Resource, r.Root, r.Root+"/2"
	m.PayloadDigest, m.GrantDigest = "sha256:"+strings.Repeat("cd", 32), r.GrantDigest
	m.Owner = "spiffe://cluster.local/ns/shop/sa/orders"
	m.State, m.Cause, m.UnknownSince = store.MutationInFlight, "", time.Time{}
	r.InFlight = &m
	return r
}

// hotReceipt is a receipt as a Commit writes it: two headers, a small body.
func hotReceipt() store.Receipt {
	r := fullReceipt()
	m := hotRecord().InFlight
	r.OpRef, r.OperationID, r.PayloadDigest, r.GrantDigest, r.Owner = m.OpRef, m.OperationID, m.PayloadDigest, m.GrantDigest, m.Owner
	r.ID = store.ReceiptID(r.OpRef, r.PayloadDigest)
	r.Response = store.StoredResponse{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}, "Etag": {`"v42"`}},
		Body: []byte(`{"id":"4711","status":"accepted","items":[1,2,3]}`)}
	return r
}
