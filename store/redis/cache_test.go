package redis

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestCacheBounds: however many keys go in, the cache holds at most
// cacheEntries of them and cacheBytes of keys and values; what was used
// last stays; a value too long is not kept (and drops what the key held);
// absent is an entry of its own.
func TestCacheBounds(t *testing.T) {
	c := newCache()
	val := []byte(strings.Repeat("v", 100))
	for i := range 3 * cacheEntries {
		c.put("k"+strconv.Itoa(i), val)
		if i%1000 == 0 {
			// keep k0 in use: a hit moves it to the newer generation
			if _, ok := c.get("k0"); !ok {
				t.Fatalf("k0, in use, evicted after %d puts", i)
			}
		}
	}
	n, bytes := c.size()
	if n > cacheEntries || bytes > cacheBytes {
		t.Errorf("cache holds %d entries, %d bytes; bound %d, %d", n, bytes, cacheEntries, cacheBytes)
	}
	if _, ok := c.get("k" + strconv.Itoa(3*cacheEntries-1)); !ok {
		t.Error("the last key put is not cached")
	}
	if _, ok := c.get("k1"); ok {
		t.Error("an early key never used again is still cached")
	}

	big := make([]byte, cacheMaxValue+1)
	c.put("big", val)
	c.put("big", big)
	if _, ok := c.get("big"); ok {
		t.Error("a value over cacheMaxValue is cached (or the older value kept)")
	}
	c.put("gone", nil)
	if e, ok := c.get("gone"); !ok || e.present {
		t.Errorf("absent: %+v %v, want an entry saying absent", e, ok)
	}
	c.drop("gone")
	if _, ok := c.get("gone"); ok {
		t.Error("dropped key still cached")
	}

	// The byte bound binds for long values.
	c = newCache()
	long := make([]byte, cacheMaxValue)
	for i := range 4 * cacheBytes / cacheMaxValue {
		c.put("l"+strconv.Itoa(i), long)
	}
	if n, bytes := c.size(); bytes > cacheBytes+cacheMaxValue {
		t.Errorf("cache of long values holds %d entries, %d bytes; bound %d bytes", n, bytes, cacheBytes)
	}
}

// BenchmarkCacheMemory measures the heap a full cache holds: cacheEntries
// entries, half records and half receipts, keyed and encoded as the
// store keys and encodes them (a receipt of a small JSON response).
func BenchmarkCacheMemory(b *testing.B) {
	k := keys{prefix: DefaultPrefix}
	in := storetest.Attempt("orders/0123456789", 7, 42, "payload")
	rec := store.Record{Resource: in.Resource, HighestFence: 7, Root: in.Root, Lease: in.Lease, GrantDigest: in.GrantDigest,
		Evidence: in.Evidence, AcceptedAt: storetest.T0, LastSeq: 41}
	recJSON, _ := encode(rec)
	ans := storetest.Answer(in.Ref())
	rc := store.Receipt{ID: "rcpt-0123456789abcdef0123456789abcdef", OpRef: in.Ref(),
		OperationID: in.Ref().OperationID(), PayloadDigest: in.PayloadDigest, GrantDigest: in.GrantDigest, Owner: in.Owner,
		BackendStatus: 201, Response: ans.Response, AcceptedAt: storetest.T0.Add(time.Second), Source: "COMMIT"}
	rcJSON, _ := encode(rc)
	var c *cache
	var before, after runtime.MemStats
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&before)
		c = newCache()
		for i := range cacheEntries / 2 {
			res := "orders/" + strconv.Itoa(1_000_000+i)
			c.put(k.record(res), append([]byte(nil), recJSON...))
			c.put(k.receipt(store.ReceiptKey{Resource: res, Fence: 7, Seq: 42}), append([]byte(nil), rcJSON...))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	n, bytes := c.size()
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(n), "entries")
	b.ReportMetric(float64(bytes)/(1<<20), "key+value-MiB")
	b.ReportMetric(float64(len(recJSON)), "record-B")
	b.ReportMetric(float64(len(rcJSON)), "receipt-B")
}
