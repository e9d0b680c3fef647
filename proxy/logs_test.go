package proxy_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestOneLogLinePerDecision: every decision is logged once with resource,
// fence, seq, code and grant digest, and the raw grant never appears.
func TestOneLogLinePerDecision(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "1"}).expect(t, 201, "")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: "3", body: "3"}).expect(t, 409, "SEGMENT_GAP")

	entries := f.logs.FilterMessage("mutation").All()
	if len(entries) != 2 {
		t.Fatalf("%d decision lines, want 2", len(entries))
	}
	for i, want := range []struct{ decision, code string }{{"forwarded", ""}, {"rejected", "SEGMENT_GAP"}} {
		m := entries[i].ContextMap()
		if m["decision"] != want.decision || m["code"] != want.code || m["resource"] != "item/1" ||
			m["fence"] != uint64(1) || m["grantDigest"] != l.View.Lease.Digest || m["seq"] == nil {
			t.Errorf("line %d: %v", i, m)
		}
	}
	for _, e := range f.logs.All() {
		if strings.Contains(e.Message+fmt.Sprint(e.ContextMap()), string(l.Grant)) {
			t.Fatalf("the raw grant was logged: %v", e.ContextMap())
		}
	}
}
