package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
)

const (
	sidecar = "spiffe://test/sidecar"
	payA    = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

var admin = []string{"Authorization", "Bearer s3cret"}

func decodeAs[T any](t *testing.T, resp *http.Response, status int) T {
	t.Helper()
	var v T
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func body(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func begin(resource string, fence uint64) fencegate.AnchorItem {
	root := fmt.Sprintf("root-%d", fence)
	return fencegate.AnchorItem{Resource: resource, Op: fencegate.AnchorBegin,
		Next: fencegate.Progress{Fence: fence, Root: root, Pending: &fencegate.PendingOp{Seq: 1, PayloadDigest: payA}}}
}

// TestStoreAPI walks the store anchor API as a sidecar and an operator use
// it: register, anchor, page, ledger, a loss and its acknowledgement.
func TestStoreAPI(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	reg := f.do(t, "PUT", "/v1/stores/billing-api", sidecar, "application/json", `{"generation":"gen-1"}`)
	created := decodeAs[fencegate.StoreAnchor](t, reg, http.StatusCreated)
	if created.Store != "billing-api" || created.Generation != "gen-1" || fencegate.ValidateLineage(created.Lineage) != nil || created.RegisteredAt == 0 {
		t.Fatalf("registration: %+v", created)
	}
	again := decodeAs[fencegate.StoreAnchor](t, f.do(t, "PUT", "/v1/stores/billing-api", sidecar, "application/json", `{"generation":"gen-1"}`), http.StatusOK)
	if !reflect.DeepEqual(again, created) {
		t.Fatalf("registration again %+v, first %+v", again, created)
	}
	var items []fencegate.AnchorItem
	for i := range 5 {
		items = append(items, begin(fmt.Sprintf("inv/%d", i), uint64(i+1)))
	}
	resp := decodeAs[fencegate.AnchorResponse](t, f.do(t, "POST", "/v1/stores/billing-api/progress", sidecar, "application/json",
		body(fencegate.AnchorRequest{Generation: "gen-1", Items: items})), http.StatusOK)
	if resp.Lineage != created.Lineage || len(resp.Results) != 5 || resp.Results[4].Outcome != fencegate.AnchorAnchored || resp.Results[4].Anchored.Fence != 5 {
		t.Fatalf("anchor: %+v", resp)
	}
	// Page through with limit 2: inv/0 inv/1 | inv/2 inv/3 | inv/4.
	var got []string
	for after, pages := "", 0; ; pages++ {
		path := "/v1/stores/billing-api/anchors?limit=2"
		if after != "" {
			path += "&after=" + after
		}
		page := decodeAs[fencegate.AnchorPage](t, f.do(t, "GET", path, sidecar, "", ""), http.StatusOK)
		for _, a := range page.Anchors {
			got = append(got, a.Resource)
		}
		if page.Next == "" {
			if pages != 2 {
				t.Fatalf("%d pages", pages+1)
			}
			break
		}
		after = page.Next
	}
	if strings.Join(got, " ") != "inv/0 inv/1 inv/2 inv/3 inv/4" {
		t.Fatalf("paged %v", got)
	}
	led := decodeAs[fencegate.StoreAnchor](t, f.do(t, "POST", "/v1/stores/billing-api/ledger", sidecar, "application/json",
		`{"shape":"PUT /v1/items/{}","kind":"ENFORCE"}`), http.StatusOK)
	if len(led.Ledger) != 1 || led.Ledger[0].EnforcedSince == 0 || led.Resources != 5 {
		t.Fatalf("ledger: %+v", led)
	}
	// The store comes back as another data set.
	lostResp := f.do(t, "PUT", "/v1/stores/billing-api", sidecar, "application/json", `{"generation":"gen-2"}`)
	p, err := fencegate.ReadProblem(lostResp)
	if err != nil || lostResp.StatusCode != http.StatusConflict || p.Code != fencegate.CodeStoreLost ||
		p.Extra["anchored"] != "gen-1" || p.Extra["presented"] != "gen-2" || p.Extra["store"] != "billing-api" {
		t.Fatalf("another generation: %d %+v %v", lostResp.StatusCode, p, err)
	}
	p, _ = fencegate.ReadProblem(f.do(t, "POST", "/v1/stores/billing-api/progress", sidecar, "application/json",
		body(fencegate.AnchorRequest{Generation: "gen-2", Items: items[:1]})))
	if p.Code != fencegate.CodeStoreLost {
		t.Fatalf("anchor with the lost generation: %+v", p)
	}
	st := decodeAs[fencegate.StoreAnchor](t, f.do(t, "GET", "/v1/stores/billing-api", sidecar, "", ""), http.StatusOK)
	if st.Generation != "gen-1" || st.Presented != "gen-2" || st.Losses != 1 || st.LastLossAt == 0 {
		t.Fatalf("store after the loss: %+v", st)
	}
	// Only an admin acknowledges.
	p, _ = fencegate.ReadProblem(f.do(t, "POST", "/v1/stores/billing-api/acknowledge", sidecar, "application/json", `{"generation":"gen-2"}`))
	if p.Code != fencegate.CodeAdminRequired {
		t.Fatalf("acknowledge by the sidecar: %+v", p)
	}
	// A generation the store did not present: 409 CONFLICT, nothing changed.
	npResp := f.do(t, "POST", "/v1/stores/billing-api/acknowledge", "", "application/json", `{"generation":"gen-3"}`, admin...)
	p, err = fencegate.ReadProblem(npResp)
	if err != nil || npResp.StatusCode != http.StatusConflict || p.Code != fencegate.CodeConflict ||
		p.Extra["generation"] != "gen-3" || p.Extra["anchored"] != "gen-1" || p.Extra["presented"] != "gen-2" {
		t.Fatalf("acknowledge a generation not presented: %d %+v %v", npResp.StatusCode, p, err)
	}
	ack := decodeAs[fencegate.StoreAnchor](t, f.do(t, "POST", "/v1/stores/billing-api/acknowledge", "", "application/json", `{"generation":"gen-2"}`, admin...), http.StatusOK)
	if ack.Generation != "gen-2" || ack.Acknowledged != 1 || ack.Presented != "" || ack.Resources != 5 || len(ack.Ledger) != 1 {
		t.Fatalf("acknowledged: %+v", ack)
	}
	decodeAs[fencegate.StoreAnchor](t, f.do(t, "PUT", "/v1/stores/billing-api", sidecar, "application/json", `{"generation":"gen-2"}`), http.StatusOK)
	// The meta states the lineage.
	m := decodeAs[fencegate.Meta](t, f.do(t, "GET", "/v1/admin/meta", "", "", "", admin...), http.StatusOK)
	if m.Lineage != created.Lineage {
		t.Fatalf("meta lineage %q, the store's answers %q", m.Lineage, created.Lineage)
	}
}

// TestMaxAnchorBatchOverHTTP: a batch of MaxAnchorBatch items is one
// request (its body above the 64 KiB of the other routes).
func TestMaxAnchorBatchOverHTTP(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	decodeAs[fencegate.StoreAnchor](t, f.do(t, "PUT", "/v1/stores/s", sidecar, "application/json", `{"generation":"g"}`), http.StatusCreated)
	items := make([]fencegate.AnchorItem, fencegate.MaxAnchorBatch)
	for i := range items {
		items[i] = begin(fmt.Sprintf("batch/%s/%04d", strings.Repeat("x", 100), i), 1)
	}
	b := body(fencegate.AnchorRequest{Generation: "g", Items: items})
	if len(b) <= httpapi.MaxBodyBytes {
		t.Fatalf("the batch is %d bytes, not above the usual limit", len(b))
	}
	resp := decodeAs[fencegate.AnchorResponse](t, f.do(t, "POST", "/v1/stores/s/progress", sidecar, "application/json", b), http.StatusOK)
	if len(resp.Results) != fencegate.MaxAnchorBatch {
		t.Fatalf("%d results", len(resp.Results))
	}
}

// storeState is everything a store route may change.
type storeState struct {
	Meta    registry.Meta
	Store   registry.StoreView
	Anchors fencegate.AnchorPage
}

func (f *fixture) storeState(t *testing.T, store string) storeState {
	t.Helper()
	ctx := context.Background()
	v, err := f.reg.Store(ctx, sidecar, store)
	if err != nil {
		t.Fatal(err)
	}
	page, err := f.reg.Anchors(ctx, sidecar, store, "", fencegate.MaxAnchorPage)
	if err != nil {
		t.Fatal(err)
	}
	return storeState{Meta: meta(t, f.backend), Store: v, Anchors: page}
}

// TestStoreProblems: every refusal of the store routes is a problem with
// its stable code, and changes nothing.
func TestStoreProblems(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	decodeAs[fencegate.StoreAnchor](t, f.do(t, "PUT", "/v1/stores/billing", sidecar, "application/json", `{"generation":"gen-1"}`), http.StatusCreated)
	ok := body(fencegate.AnchorRequest{Generation: "gen-1", Items: []fencegate.AnchorItem{begin("inv/1", 3)}})
	decodeAs[fencegate.AnchorResponse](t, f.do(t, "POST", "/v1/stores/billing/progress", sidecar, "application/json", ok), http.StatusOK)
	if _, err := f.reg.PutPolicy(context.Background(), fencegate.Policy{Pattern: "fencegate-store/guarded", AllowedOwners: []string{"spiffe://test/other"}}); err != nil {
		t.Fatal(err)
	}
	huge := `{"generation":"gen-1","items":[` + strings.Repeat(`{"resource":"a","op":"SEED","prior":{"fence":0,"lastSeq":0},"next":{"fence":0,"lastSeq":0}},`, fencegate.MaxAnchorBodyBytes/80) + `]}`
	bigLedger := `{"shape":"` + strings.Repeat("s", httpapi.MaxBodyBytes) + `","kind":"ENFORCE"}`
	cases := []struct {
		name, method, path, owner, ctype, body string
		hdr                                    []string
		status                                 int
		code                                   fencegate.Code
	}{
		{"no identity", "PUT", "/v1/stores/billing", "", "application/json", `{"generation":"gen-2"}`, nil, 401, fencegate.CodeIdentityRequired},
		{"no identity to read", "GET", "/v1/stores/billing", "", "", "", nil, 401, fencegate.CodeIdentityRequired},
		{"no identity to anchor", "POST", "/v1/stores/billing/progress", "", "application/json", ok, nil, 401, fencegate.CodeIdentityRequired},
		{"no identity to list", "GET", "/v1/stores/billing/anchors", "", "", "", nil, 401, fencegate.CodeIdentityRequired},
		{"policy denies", "PUT", "/v1/stores/guarded", sidecar, "application/json", `{"generation":"g"}`, nil, 403, fencegate.CodePolicyDenied},
		{"policy denies a read", "GET", "/v1/stores/guarded", sidecar, "", "", nil, 403, fencegate.CodePolicyDenied},
		{"policy denies the list", "GET", "/v1/stores/guarded/anchors", sidecar, "", "", nil, 403, fencegate.CodePolicyDenied},
		{"policy denies the ledger", "POST", "/v1/stores/guarded/ledger", sidecar, "application/json", `{"shape":"PUT /x","kind":"ENFORCE"}`, nil, 403, fencegate.CodePolicyDenied},
		{"not registered", "POST", "/v1/stores/other/progress", sidecar, "application/json", ok, nil, 404, fencegate.CodeNotFound},
		{"ledger not registered", "POST", "/v1/stores/other/ledger", sidecar, "application/json", `{"shape":"PUT /x","kind":"ENFORCE"}`, nil, 404, fencegate.CodeNotFound},
		{"acknowledge not registered", "POST", "/v1/stores/other/acknowledge", "", "application/json", `{"generation":"g"}`, admin, 404, fencegate.CodeNotFound},
		{"lost generation", "POST", "/v1/stores/billing/progress", sidecar, "application/json", strings.Replace(ok, "gen-1", "gen-9", 1), nil, 409, fencegate.CodeStoreLost},
		{"no generation", "PUT", "/v1/stores/billing", sidecar, "application/json", `{}`, nil, 400, fencegate.CodeInvalidRequest},
		{"no body", "PUT", "/v1/stores/billing", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"unknown field", "PUT", "/v1/stores/billing", sidecar, "application/json", `{"generation":"gen-1","force":true}`, nil, 400, fencegate.CodeInvalidRequest},
		{"malformed JSON", "POST", "/v1/stores/billing/progress", sidecar, "application/json", `{"generation":`, nil, 400, fencegate.CodeInvalidRequest},
		{"two JSON values", "POST", "/v1/stores/billing/progress", sidecar, "application/json", ok + ok, nil, 400, fencegate.CodeInvalidRequest},
		{"wrong content type", "POST", "/v1/stores/billing/progress", sidecar, "text/plain", ok, nil, 415, fencegate.CodeUnsupportedMedia},
		{"body over the anchor limit", "POST", "/v1/stores/billing/progress", sidecar, "application/json", huge, nil, 413, fencegate.CodeBodyTooLarge},
		{"ledger body over 64 KiB", "POST", "/v1/stores/billing/ledger", sidecar, "application/json", bigLedger, nil, 413, fencegate.CodeBodyTooLarge},
		{"no items", "POST", "/v1/stores/billing/progress", sidecar, "application/json", `{"generation":"gen-1","items":[]}`, nil, 400, fencegate.CodeInvalidRequest},
		{"unknown op", "POST", "/v1/stores/billing/progress", sidecar, "application/json", strings.Replace(ok, "BEGIN", "begin", 1), nil, 400, fencegate.CodeInvalidRequest},
		{"fence as a float", "POST", "/v1/stores/billing/progress", sidecar, "application/json", strings.Replace(ok, `"fence":3`, `"fence":3.0`, 1), nil, 400, fencegate.CodeInvalidRequest},
		{"fence over 2^64", "POST", "/v1/stores/billing/progress", sidecar, "application/json", strings.Replace(ok, `"fence":3`, `"fence":18446744073709551616`, 1), nil, 400, fencegate.CodeInvalidRequest},
		{"unknown progress field", "POST", "/v1/stores/billing/progress", sidecar, "application/json", strings.Replace(ok, `"fence":3`, `"fence":3,"x":1`, 1), nil, 400, fencegate.CodeInvalidRequest},
		{"bad ledger kind", "POST", "/v1/stores/billing/ledger", sidecar, "application/json", `{"shape":"PUT /x","kind":"SHADOW"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"acknowledge without a generation", "POST", "/v1/stores/billing/acknowledge", "", "application/json", `{}`, admin, 400, fencegate.CodeInvalidRequest},
		{"acknowledge without admin", "POST", "/v1/stores/billing/acknowledge", sidecar, "application/json", `{"generation":"gen-2"}`, nil, 403, fencegate.CodeAdminRequired},
		{"acknowledge with a wrong token", "POST", "/v1/stores/billing/acknowledge", "", "application/json", `{"generation":"gen-2"}`, []string{"Authorization", "Bearer nope"}, 403, fencegate.CodeAdminRequired},
		{"limit 0", "GET", "/v1/stores/billing/anchors?limit=0", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"limit -1", "GET", "/v1/stores/billing/anchors?limit=-1", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"limit over max", "GET", "/v1/stores/billing/anchors?limit=1001", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"limit 1e2", "GET", "/v1/stores/billing/anchors?limit=1e2", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"limit 010", "GET", "/v1/stores/billing/anchors?limit=010", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"limit +5", "GET", "/v1/stores/billing/anchors?limit=%2B5", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"limit twice", "GET", "/v1/stores/billing/anchors?limit=1&limit=2", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"after twice", "GET", "/v1/stores/billing/anchors?after=a&after=b", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"unknown parameter", "GET", "/v1/stores/billing/anchors?cursor=x", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"malformed after", "GET", "/v1/stores/billing/anchors?after=a//b", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"store ..", "GET", "/v1/stores/../anchors", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"store .", "PUT", "/v1/stores/.", sidecar, "application/json", `{"generation":"g"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"store percent-encoded letter", "PUT", "/v1/stores/b%69lling", sidecar, "application/json", `{"generation":"g"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"store percent-encoded dots", "GET", "/v1/stores/%2E%2E/anchors", sidecar, "", "", nil, 400, fencegate.CodeInvalidRequest},
		{"store with NUL", "PUT", "/v1/stores/bill%00ing", sidecar, "application/json", `{"generation":"g"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"store with a colon", "PUT", "/v1/stores/a:b", sidecar, "application/json", `{"generation":"g"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"store too long", "PUT", "/v1/stores/" + strings.Repeat("s", fencegate.MaxStoreNameLen+1), sidecar, "application/json", `{"generation":"g"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"store with a slash", "PUT", "/v1/stores/bill%2Fing", sidecar, "application/json", `{"generation":"g"}`, nil, 400, fencegate.CodeInvalidRequest},
		{"wrong method", "DELETE", "/v1/stores/billing", sidecar, "", "", nil, 405, fencegate.CodeMethodNotAllowed},
		{"wrong method on progress", "GET", "/v1/stores/billing/progress", sidecar, "", "", nil, 405, fencegate.CodeMethodNotAllowed},
		{"method in lower case", "put", "/v1/stores/billing", sidecar, "application/json", `{"generation":"gen-2"}`, nil, 405, fencegate.CodeMethodNotAllowed},
		{"unknown sub-route", "POST", "/v1/stores/billing/reset", sidecar, "application/json", `{}`, nil, 404, fencegate.CodeNotFound},
		{"nested path", "PUT", "/v1/stores/billing/x", sidecar, "application/json", `{"generation":"g"}`, nil, 404, fencegate.CodeNotFound},
		{"trailing slash", "PUT", "/v1/stores/other/", sidecar, "application/json", `{"generation":"g"}`, nil, 404, fencegate.CodeNotFound},
		{"trailing slash on progress", "POST", "/v1/stores/billing/progress/", sidecar, "application/json", ok, nil, 404, fencegate.CodeNotFound},
		{"double slash", "PUT", "/v1/stores//other", sidecar, "application/json", `{"generation":"g"}`, nil, 404, fencegate.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := []storeState{f.storeState(t, "billing"), f.storeState(t, "other")}
			resp := f.do(t, tc.method, tc.path, tc.owner, tc.ctype, tc.body, tc.hdr...)
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			d, err := fencegate.ReadProblem(resp)
			if err != nil {
				t.Fatal(err)
			}
			if d.Code != tc.code || d.Status != tc.status {
				t.Fatalf("problem %+v, want code %s", d, tc.code)
			}
			after := []storeState{f.storeState(t, "billing"), f.storeState(t, "other")}
			// A registration presenting another generation is recorded (its
			// loss counted): the one refusal that writes, tested apart.
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused request changed the registry:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}
