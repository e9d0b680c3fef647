package proxy_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

// TestRetentionCompactsReceipts: with maxPerResource 2, the Commits keep
// the two newest receipts of a resource (each Commit over the bound
// deletes the oldest in its own transaction, so the background pass finds
// nothing to delete: fencegate_proxy_store_compacted_total stays 0); the
// record and the last segment's receipt stay, a replay of a deleted
// segment is refused (never forwarded again), and the store-size gauges,
// set by the background pass, report it.
func TestRetentionCompactsReceipts(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) {
		c.Retention = proxy.RetentionConfig{MaxPerResource: 2, Interval: 10 * time.Millisecond}
	})
	a := f.acquire("worker-a", "item/keep")
	for seg := 1; seg <= 5; seg++ {
		f.do(call{path: "/v1/items/keep", owner: "worker-a", grant: string(a.Grant), seg: strconv.Itoa(seg), body: "v" + strconv.Itoa(seg)}).expect(t, 201, "")
	}
	f.run()
	deadline := time.Now().Add(10 * time.Second)
	for f.counter("fencegate_proxy_store_receipts") != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("receipts gauge %v, compacted %v: compaction did not run", f.counter("fencegate_proxy_store_receipts"),
				f.counter("fencegate_proxy_store_compacted_total", "kind", "receipt"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.counter("fencegate_proxy_store_compacted_total", "kind", "receipt"); n != 0 {
		t.Fatalf("the background pass deleted %v receipts, want 0 (the Commits trimmed them)", n)
	}
	if n := f.counter("fencegate_proxy_store_resources"); n != 1 {
		t.Fatalf("resources gauge %v", n)
	}
	if f.counter("fencegate_proxy_store_bytes") <= 0 {
		t.Fatal("store bytes gauge not set")
	}
	rec, _ := f.record("item/keep")
	if rec.HighestFence != a.View.Lease.Fence || rec.LastSeq != 5 {
		t.Fatalf("compaction changed the record: %+v", rec)
	}
	sent := f.back.count()
	// The last segment still replays; a compacted one is refused.
	ans := f.do(call{path: "/v1/items/keep", owner: "worker-a", grant: string(a.Grant), seg: "5", body: "v5"})
	ans.expect(t, 201, "")
	if ans.header.Get("Fence-Replayed") != "true" {
		t.Fatal("the last segment was not replayed")
	}
	f.do(call{path: "/v1/items/keep", owner: "worker-a", grant: string(a.Grant), seg: "1", body: "v1"}).expect(t, 409, fencegate.CodeSegmentGap)
	if f.back.count() != sent {
		t.Fatal("a replay after compaction reached the backend")
	}
}
