package proxy_test

import (
	"time"

	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// TestOnePassFunctions: ReconcileOnce, CompactOnce and TrustOnce do, when
// called, what one tick of Run's loops does (Run is not started here): a
// pass settles an unknown mutation through the route's effect query, a
// compaction pass deletes the receipts past the retention's age (the
// count bound is kept by the Commits themselves), keeping the last
// segment's, and a trust tick reads a changed bundle file (a key it gained
// is listed, not trusted: nothing pinned it).
func TestOnePassFunctions(t *testing.T) {
	eff := newRCEffectServer(t)
	f := newFixture(t, func(c *proxy.Config) {
		c.Routes[1].EffectQuery = eff.srv.URL + "/effects/{operationId}"
		c.Retention = proxy.RetentionConfig{MaxAge: time.Nanosecond}
	})
	ctx := context.Background()
	op := rcUnknownOn(t, f)
	eff.set(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("applied")) })
	if n := f.proxy.ReconcileOnce(ctx); n != 1 {
		t.Fatalf("ReconcileOnce settled %d mutations, want 1", n)
	}
	if ops := rcUnknownOps(f); len(ops) != 0 || eff.count() != 1 {
		t.Fatalf("after one pass: unknown %q, %d effect queries", ops, eff.count())
	}
	if rs := rcReceipts(f, "doc/1", op); len(rs) != 1 || rs[0].Source != store.SourceReconciled {
		t.Fatalf("receipts of %s: %+v", op, rs)
	}

	a := f.acquire("worker-a", "item/keep")
	for seg := 1; seg <= 4; seg++ {
		f.do(call{path: "/v1/items/keep", owner: "worker-a", grant: string(a.Grant), seg: strconv.Itoa(seg), body: "v" + strconv.Itoa(seg)}).expect(t, 201, "")
	}
	res, err := f.proxy.CompactOnce(ctx)
	if err != nil || res.Receipts != 3 {
		t.Fatalf("CompactOnce deleted %d receipts (%v), want 3", res.Receipts, err)
	}
	if _, err := f.store.Receipt(ctx, store.ReceiptKey{Resource: "item/keep", Fence: a.View.Lease.Fence, Seq: 4}); err != nil {
		t.Fatalf("the last segment's receipt is gone: %v", err)
	}

	added := newIssuerKey(t)
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key(), added)
	f.proxy.TrustOnce(ctx)
	list, err := f.proxy.TrustList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := ""
	for _, k := range list.Keys {
		if k.Kid == added.KeyID() {
			state = k.State
		}
	}
	if state != authn.KeyUnpinned || slices.Contains(f.proxy.TrustKeyIDs(), added.KeyID()) {
		t.Fatalf("after a trust tick the added key is %q (trusted: %v), want %s and not trusted", state, f.proxy.TrustKeyIDs(), authn.KeyUnpinned)
	}
}
