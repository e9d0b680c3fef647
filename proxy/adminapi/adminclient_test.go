package adminapi_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestClient: the admin API's Go client against a real sidecar pipeline
// served over HTTP on a loopback port: receipts by operation, by resource
// (every page) and by ID, the record, pause and resume with a detail,
// the unknown mutations and their reconciliation; refusals match their
// codes.
func TestClient(t *testing.T) {
	ctx := context.Background()
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	srv := httptest.NewServer(adminOn(t, st))
	t.Cleanup(srv.Close)
	c, err := adminapi.NewClient(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	var want []store.Receipt
	for seq := uint64(1); seq <= 5; seq++ {
		want = append(want, accept(t, st, "item/1", 1, seq))
	}
	all, err := c.AllReceiptsOf(ctx, "item/1", 2)
	if err != nil || len(all) != len(want) {
		t.Fatalf("all receipts of item/1: %d, %v; want %d", len(all), err, len(want))
	}
	for i := range want {
		if all[i].ID != want[i].ID {
			t.Errorf("receipt %d: %s, want %s", i, all[i].ID, want[i].ID)
		}
	}
	if byOp, err := c.Receipts(ctx, "item/1", want[3].OperationID); err != nil || len(byOp) != 1 || byOp[0].ID != want[3].ID {
		t.Errorf("receipts of %s: %+v, %v", want[3].OperationID, byOp, err)
	}
	if rc, err := c.Receipt(ctx, "item/1", want[4].ID); err != nil || rc.OperationID != want[4].OperationID {
		t.Errorf("receipt %s: %+v, %v", want[4].ID, rc, err)
	}
	if _, err := c.Receipt(ctx, "item/2", want[4].ID); !errors.Is(err, fencegate.CodeNotFound) {
		t.Errorf("receipt of another resource: %v, want NOT_FOUND", err)
	}
	if rec, err := c.Record(ctx, "item/1"); err != nil || rec.HighestFence != 1 || rec.LastSeq != 5 {
		t.Errorf("record: %+v, %v", rec, err)
	}
	if rec, err := c.Pause(ctx, "item/3", "maintenance 42"); err != nil || rec.Pause == nil || rec.Pause.Detail != "maintenance 42" {
		t.Errorf("pause: %+v, %v", rec, err)
	}
	if _, err := c.Resume(ctx, "item/3"); err != nil {
		t.Errorf("resume: %v", err)
	}
	if _, err := c.Resume(ctx, "item/3"); !errors.Is(err, fencegate.CodeConflict) {
		t.Errorf("second resume: %v, want CONFLICT", err)
	}

	in := storetest.Attempt("item/4", 1, 1, "p1")
	if _, err := st.Begin(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: in.Now}); err != nil {
		t.Fatal(err)
	}
	unknown, err := c.Unknown(ctx)
	if err != nil || len(unknown) != 1 || unknown[0].OperationID != in.Ref().OperationID() {
		t.Fatalf("unknown: %+v, %v", unknown, err)
	}
	ans, err := c.Reconcile(ctx, adminapi.ReconcileRequest{Resource: "item/4", OperationID: in.Ref().OperationID(), Applied: true, Status: 201, Reason: "checked"})
	if err != nil || !ans.Applied || ans.Receipt == nil || ans.Record.Resource != "item/4" {
		t.Errorf("reconcile: %+v, %v", ans, err)
	}
	if _, err := adminapi.NewClient("127.0.0.1:8781"); err == nil {
		t.Error("NewClient accepted a URL without a scheme")
	}
}
