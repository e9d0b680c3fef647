package adminapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// adminOn is the admin API of a real sidecar pipeline over st.
func adminOn(t *testing.T, st store.Store) http.Handler {
	t.Helper()
	h, err := adminapi.New(adminapi.Options{Proxy: newProxyOn(t, st)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// local serves one request from loopback, with a JSON body if any.
func local(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:1"
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func accept(t *testing.T, st store.Store, resource string, fence, seq uint64) store.Receipt {
	t.Helper()
	in := storetest.Attempt(resource, fence, seq, "p"+string(rune('0'+seq)))
	if res, err := st.Begin(context.Background(), in); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("begin: %+v, %v", res, err)
	}
	rc, err := st.Commit(context.Background(), storetest.Answer(in.Ref()))
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestReceiptsOfResource: GET /v1/receipts?resource=R lists the
// resource's receipts themselves, paged by after=<fence>.<seq> of the
// last one; a resource without any answers []; ?op= still names one
// operation.
func TestReceiptsOfResource(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	h := adminOn(t, st)
	want := []store.Receipt{accept(t, st, "item/1", 1, 1), accept(t, st, "item/1", 1, 2), accept(t, st, "item/1", 2, 1)}
	accept(t, st, "item/2", 1, 1)

	var got []store.Receipt
	path := "/v1/receipts?resource=item/1&limit=2"
	for pages := 0; pages < 5; pages++ {
		rec := local(h, "GET", path, "")
		var page []store.Receipt
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &page) != nil {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		got = append(got, page...)
		if len(page) < 2 {
			break
		}
		last := page[len(page)-1]
		path = "/v1/receipts?resource=item/1&limit=2&after=" + adminapi.ReceiptCursor{Fence: last.Fence, Seq: last.Seq}.String()
	}
	if len(got) != len(want) {
		t.Fatalf("paged %d receipts of item/1, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].OperationID != want[i].OperationID || got[i].Response.Status != want[i].Response.Status {
			t.Errorf("receipt %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if rec := local(h, "GET", "/v1/receipts?resource=item/none", ""); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("receipts of a resource without any: %d %s, want []", rec.Code, rec.Body)
	}
	rec := local(h, "GET", "/v1/receipts?resource=item/1&op="+url.QueryEscape(want[2].OperationID), "")
	var byOp []store.Receipt
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &byOp) != nil || len(byOp) != 1 || byOp[0].ID != want[2].ID {
		t.Errorf("receipts of one operation: %d %s", rec.Code, rec.Body)
	}
}

// TestReceiptByID: GET /v1/receipts/{id}?resource=R answers the receipt
// whose ID is the Fence-Receipt value; another resource's, an unknown or
// a malformed ID and a missing resource are refused with their codes.
func TestReceiptByID(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	h := adminOn(t, st)
	rc := accept(t, st, "item/1", 1, 1)
	other := accept(t, st, "item/2", 1, 1)
	rec := local(h, "GET", "/v1/receipts/"+rc.ID+"?resource=item/1", "")
	var got store.Receipt
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.ID != rc.ID || got.OperationID != rc.OperationID {
		t.Fatalf("receipt %s: %d %s", rc.ID, rec.Code, rec.Body)
	}
	for _, c := range []struct {
		path   string
		status int
		code   fencegate.Code
	}{
		{"/v1/receipts/" + other.ID + "?resource=item/1", 404, fencegate.CodeNotFound},
		{"/v1/receipts/rcpt-00000000000000000000000000000000?resource=item/1", 404, fencegate.CodeNotFound},
		{"/v1/receipts/rcpt-XYZ?resource=item/1", 400, fencegate.CodeInvalidRequest},
		{"/v1/receipts/" + rc.ID, 400, fencegate.CodeInvalidRequest},
		{"/v1/receipts/" + rc.ID + "?resource=item/1&op=x", 400, fencegate.CodeInvalidRequest},
	} {
		if st, code := problemOf(local(h, "GET", c.path, "")); st != c.status || code != c.code {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, st, code, c.status, c.code)
		}
	}
}

// TestReceiptsBadQueries: bad parameters of GET /v1/receipts are 400
// INVALID_REQUEST.
func TestReceiptsBadQueries(t *testing.T) {
	h := adminOn(t, memory.New(memory.Options{}))
	for _, q := range []string{"", "op=r/1", "resource=item/1&limit=0", "resource=item/1&limit=1001", "resource=item/1&after=1", "resource=item/1&after=0.1",
		"resource=item/1&after=01.1", "resource=item/1&op=r/1&limit=1", "resource=item/1&color=red", "resource=a&resource=b", "resource=%zz", "resource=bad%20r"} {
		if st, code := problemOf(local(h, "GET", "/v1/receipts?"+q, "")); st != 400 || code != fencegate.CodeInvalidRequest {
			t.Errorf("?%s: %d %s, want 400 INVALID_REQUEST", q, st, code)
		}
	}
}

// TestReconcileAnswerFields: POST /v1/reconcile answers the documented
// lowerCamel members applied, receipt and record (not Go field names).
func TestReconcileAnswerFields(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	h := adminOn(t, st)
	in := storetest.Attempt("item/1", 1, 1, "p1")
	ctx := context.Background()
	if _, err := st.Begin(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: in.Now}); err != nil {
		t.Fatal(err)
	}
	rec := local(h, "POST", "/v1/reconcile", `{"resource":"item/1","operationId":"`+in.Ref().OperationID()+`","applied":true,"status":201,"body":"done"}`)
	var raw map[string]json.RawMessage
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &raw) != nil {
		t.Fatalf("reconcile: %d %s", rec.Code, rec.Body)
	}
	for _, k := range []string{"applied", "receipt", "record"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("reconcile's answer has no %q: %s", k, rec.Body)
		}
	}
	for _, k := range []string{"Applied", "Receipt", "Record"} {
		if _, ok := raw[k]; ok {
			t.Errorf("reconcile's answer has the Go field name %q: %s", k, rec.Body)
		}
	}
	var ans adminapi.ReconcileAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || !ans.Applied || ans.Receipt == nil || ans.Receipt.Source != store.SourceReconciled || ans.Record.Resource != "item/1" {
		t.Errorf("reconcile answer %+v, %v", ans, err)
	}
}

// FuzzParseReceiptCursor: any input parses or is refused without a
// panic; what parses is canonical.
func FuzzParseReceiptCursor(f *testing.F) {
	for _, s := range []string{"1.0", "7.3", "0.1", "01.1", "1.", ".1", "18446744073709551615.18446744073709551615", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := adminapi.ParseReceiptCursor(s)
		if err != nil {
			return
		}
		if c.String() != s || c.Fence == 0 {
			t.Fatalf("ParseReceiptCursor(%q) = %+v, which writes %q", s, c, c.String())
		}
	})
}

func problemOf(rec *httptest.ResponseRecorder) (int, fencegate.Code) {
	p, err := fencegate.ReadProblem(rec.Result())
	if err != nil {
		return rec.Code, "<not problem+json>"
	}
	return rec.Code, p.Code
}

// FuzzReceiptsQuery: no query string of GET /v1/receipts or of a lookup
// by ID makes the admin API answer 5xx or anything but JSON or
// problem+json.
func FuzzReceiptsQuery(f *testing.F) {
	st := memory.New(memory.Options{})
	f.Cleanup(func() { _ = st.Close() })
	h, err := adminapi.New(adminapi.Options{Proxy: newProxyOn(f, st)})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"resource=item/1", "resource=item/1&after=1.1&limit=5", "resource=item/1&op=r/1", "after=%zz", "resource=" + strings.Repeat("a", 300)} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, byID bool) {
		for i := 0; i < len(raw); i++ {
			if raw[i] <= ' ' || raw[i] >= 0x7f || raw[i] == '#' {
				return // not a request target
			}
		}
		path := "/v1/receipts?" + raw
		if byID {
			path = "/v1/receipts/rcpt-00000000000000000000000000000000?" + raw
		}
		rec := local(h, "GET", path, "")
		if rec.Code >= 500 {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" && ct != fencegate.ProblemContentType {
			t.Fatalf("GET %s: content type %q", path, ct)
		}
	})
}
