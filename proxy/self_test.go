package proxy_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// TestWorkerReadsOnlyItsOwnReceipts: GET /.fencegate/v1/receipts on the
// main listener shows a receipt only to the owner of the grant that
// produced it; to anyone else it answers as if there were none.
func TestWorkerReadsOnlyItsOwnReceipts(t *testing.T) {
	f := newFixture(t)
	a := f.acquire("worker-a", "item/own")
	ans := f.do(call{path: "/v1/items/own", owner: "worker-a", grant: string(a.Grant), body: "mine"})
	ans.expect(t, 201, "")
	op := registry.OperationRoot("item/own", a.View.Lease.Fence, a.View.Lease.GrantID) + "/1"
	get := func(owner string) (int, []map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+"/.fencegate/v1/receipts?resource=item/own&op="+url.QueryEscape(op), nil)
		req.Header.Set(idHeader, owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []map[string]any
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, out
	}
	if code, list := get("worker-a"); code != 200 || len(list) != 1 || list[0]["id"] != ans.header.Get("Fence-Receipt") {
		t.Fatalf("owner: %d %v", code, list)
	}
	if code, list := get("worker-b"); code != 404 || list != nil {
		t.Fatalf("another identity read the receipt: %d %v", code, list)
	}
	// Same answer as for an operation that has no receipt at all.
	req, _ := http.NewRequest("GET", f.srv.URL+"/.fencegate/v1/receipts?resource=item/own&op=sha256:00/1", nil)
	req.Header.Set(idHeader, "worker-b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("no receipt: %d", resp.StatusCode)
	}
}
