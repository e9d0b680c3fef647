package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

const (
	lineageA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	lineageB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// fencesStore is a memory store with n resources item/r000.. whose
// highest fences are 3*i+1 under lineage A, the first segment of each
// committed; with n > 7, item/r007 is then continued above by lineage B (fence 1000)
// and item/r004 paused by a fence of lineage B below its highest (the
// store's own decision: FENCE_REGRESSION).
func fencesStore(t testing.TB, n int) store.Store {
	t.Helper()
	ctx := context.Background()
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	begin := func(in store.BeginInput) store.BeginResult {
		t.Helper()
		res, err := st.Begin(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range n {
		in := storetest.Attempt(fmt.Sprintf("item/r%03d", i), uint64(3*i+1), 1, "p")
		in.Evidence.Lineage = lineageA
		if res := begin(in); res.Decision != store.DecisionProceed {
			t.Fatalf("seeding %s: %s", in.Resource, res.Decision)
		}
		if _, err := st.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
			t.Fatal(err)
		}
	}
	if n <= 7 {
		return st
	}
	up := storetest.Attempt("item/r007", 1000, 1, "p")
	up.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 1, Lineage: lineageB}
	if res := begin(up); res.Decision != store.DecisionProceed {
		t.Fatalf("lineage B above: %s", res.Decision)
	}
	low := storetest.Attempt("item/r004", 2, 1, "p")
	low.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 1, Lineage: lineageB}
	if res := begin(low); res.Decision != store.DecisionFenceRegression {
		t.Fatalf("lineage B below: %s, want FENCE_REGRESSION", res.Decision)
	}
	return st
}

// getFences serves GET /v1/fences?rawQuery from loopback.
func getFences(t *testing.T, h http.Handler, rawQuery string) (*httptest.ResponseRecorder, adminapi.FencesPage) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/fences", nil)
	req.URL.RawQuery = rawQuery
	req.RemoteAddr = "127.0.0.1:4000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var page adminapi.FencesPage
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatalf("GET /v1/fences?%s: %v: %s", rawQuery, err, rec.Body)
		}
	}
	return rec, page
}

// TestFencesPages: GET /v1/fences pages through every record in resource
// order; each entry is the record's highest fence with its lineage, prior
// lineages, epoch, last segment and pause; every page says its highest
// fence and the next page's after=, the last page none.
func TestFencesPages(t *testing.T) {
	const n = 250
	h, err := adminapi.New(adminapi.Options{Proxy: newProxyOn(t, fencesStore(t, n))})
	if err != nil {
		t.Fatal(err)
	}
	var all []adminapi.FenceEntry
	after, pages := "", 0
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		rec, page := getFences(t, h, q.Encode())
		if rec.Code != 200 {
			t.Fatalf("page %d: %d %s", pages, rec.Code, rec.Body)
		}
		pages++
		var pageMax uint64
		for _, e := range page.Fences {
			pageMax = max(pageMax, e.HighestFence)
		}
		if page.MaxFence != pageMax {
			t.Fatalf("page %d: maxFence %d, its entries' highest %d", pages, page.MaxFence, pageMax)
		}
		all = append(all, page.Fences...)
		if page.Next == "" {
			break
		}
		if page.Next != page.Fences[len(page.Fences)-1].Resource {
			t.Fatalf("page %d: next %q is not its last resource", pages, page.Next)
		}
		after = page.Next
	}
	if pages != 3 || len(all) != n {
		t.Fatalf("%d pages, %d entries; want 3 pages of %d entries", pages, len(all), n)
	}
	if !slices.IsSortedFunc(all, func(a, b adminapi.FenceEntry) int {
		if a.Resource < b.Resource {
			return -1
		}
		return 1
	}) {
		t.Fatal("entries are not in resource order, or a resource repeats")
	}
	for i, e := range all {
		want := adminapi.FenceEntry{Resource: fmt.Sprintf("item/r%03d", i), HighestFence: uint64(3*i + 1), Lineage: lineageA, IssuerEpoch: 1, LastSeq: 1}
		switch i {
		case 4:
			want.Paused = store.PauseFenceRegression
		case 7:
			want.HighestFence, want.Lineage, want.PriorLineages, want.LastSeq, want.Unknown = 1000, lineageB, []store.PriorLineage{{Lineage: lineageA, Fence: 22}}, 0, false
		}
		if fmt.Sprint(e) != fmt.Sprint(want) {
			t.Errorf("entry %d: %+v, want %+v", i, e, want)
		}
	}
	// A page of exactly limit records names its last; the next is empty.
	rec, page := getFences(t, h, "after=item/r149&limit=100")
	if rec.Code != 200 || len(page.Fences) != 100 || page.Next != "item/r249" || page.MaxFence != 3*249+1 {
		t.Fatalf("the last full page: %d, %d entries, next %q, max %d", rec.Code, len(page.Fences), page.Next, page.MaxFence)
	}
	if rec, page := getFences(t, h, "after=item/r249"); rec.Code != 200 || len(page.Fences) != 0 || page.Next != "" || page.MaxFence != 0 {
		t.Fatalf("after the last resource: %d %+v", rec.Code, page)
	}
	// Without limit: DefaultFencesLimit; after= empty is the first page.
	if rec, page := getFences(t, h, "after="); rec.Code != 200 || len(page.Fences) != adminapi.DefaultFencesLimit || page.Fences[0].Resource != "item/r000" {
		t.Fatalf("default page: %d, %d entries", rec.Code, len(page.Fences))
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
}

// TestFencesBadParameters: every malformed query is a 400 INVALID_REQUEST
// problem, never a page.
func TestFencesBadParameters(t *testing.T) {
	h, err := adminapi.New(adminapi.Options{Proxy: newProxyOn(t, fencesStore(t, 3))})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"limit=0", "limit=1001", "limit=-1", "limit=01", "limit=+5", "limit=5.0", "limit=abc", "limit=", "limit=99999999999999999999",
		"limit=5&limit=5", "after=item/r000&after=item/r001", "foo=1", "Limit=5", "after=item/r000&x=",
		"after=/item", "after=item//r000", "after=item/../r000", "after=item/%00", "after=" + url.QueryEscape("item/ r"),
		"after=%zz", "limit=5;after=item", "after=" + url.QueryEscape(string(make([]byte, 300))),
	} {
		rec, _ := getFences(t, h, q)
		if rec.Code != 400 || rec.Header().Get("Content-Type") != fencegate.ProblemContentType {
			t.Errorf("?%s: %d %s, want 400 problem", q, rec.Code, rec.Body)
			continue
		}
		p, err := fencegate.ReadProblem(rec.Result())
		if err != nil || p.Code != fencegate.CodeInvalidRequest {
			t.Errorf("?%s: %v %v", q, p, err)
		}
	}
	// Refused outside loopback without the token, like every admin route.
	req := httptest.NewRequest(http.MethodGet, "/v1/fences", nil)
	req.RemoteAddr = "10.0.0.9:5000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Fatalf("outside caller: %d", rec.Code)
	}
}

// FuzzFencesQuery: any query answers a page or a 400 problem, never
// panics, and a page never holds more than the limit it was asked for.
func FuzzFencesQuery(f *testing.F) {
	for _, s := range []string{"", "limit=1", "after=item/r001&limit=2", "after=%zz", "limit=1001", "after=item/../x", "limit=5;x", "after=item/r0%2F1"} {
		f.Add(s)
	}
	h, err := adminapi.New(adminapi.Options{Proxy: newProxyOn(f, fencesStore(f, 3))})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		req := httptest.NewRequest(http.MethodGet, "/v1/fences", nil)
		req.URL.RawQuery = q
		req.RemoteAddr = "127.0.0.1:4000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			var page adminapi.FencesPage
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatalf("?%q: %v", q, err)
			}
			if len(page.Fences) > 3 {
				t.Fatalf("?%q: %d entries of 3 records", q, len(page.Fences))
			}
		case 400:
			if rec.Header().Get("Content-Type") != fencegate.ProblemContentType {
				t.Fatalf("?%q: 400 without a problem", q)
			}
		default:
			t.Fatalf("?%q: %d %s", q, rec.Code, rec.Body)
		}
	})
}
