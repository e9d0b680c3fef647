package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// raw is a plain go-redis client on srv, to look at and tamper with keys.
func raw(t *testing.T, srv *redistest.Server) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConflictRetried makes the first attempt of a step conflict: the step
// runs again on fresh reads and its write lands, once.
func TestConflictRetried(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	s, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	rc := raw(t, srv)
	runs := 0
	err = s.Update(ctx, func(tx registry.Tx) error {
		runs++
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		if runs == 1 {
			if err := rc.Set(ctx, "{fgreg}:meta", `{"issuerEpoch":1,"revision":41}`, 0).Err(); err != nil {
				t.Fatalf("interfering write: %v", err)
			}
		}
		m.Revision++
		return tx.PutMeta(m)
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if runs != 2 {
		t.Errorf("the step ran %d times, want 2", runs)
	}
	m, err := registry.NewTxBackend(s).Meta(ctx)
	if err != nil || m.Revision != 42 {
		t.Errorf("meta after the retried step: %+v %v, want revision 42 (41 written by the other client, +1)", m, err)
	}
}

// TestSchemaMismatch checks that a keyspace of another schema version is
// refused with ErrSchema and left as it was.
func TestSchemaMismatch(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rc := raw(t, srv)
	for _, v := range []string{"2", "0", "", "1 "} {
		rc.Set(ctx, "{fgreg}:schema", v, 0)
		if _, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()}); !errors.Is(err, redis.ErrSchema) {
			t.Errorf("schema %q: Open error %v, want ErrSchema", v, err)
		}
		if got := rc.Get(ctx, "{fgreg}:schema").Val(); got != v {
			t.Errorf("a refused open rewrote the schema %q as %q", v, got)
		}
	}
}

// TestPrefixes checks that two prefixes are two registries, and that a
// prefix that would break the hash tag is refused.
func TestPrefixes(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	k := registrytest.NewKeys(t)
	open := func(prefix string) registry.Backend {
		be, err := redis.OpenBackend(ctx, redis.Options{Addr: srv.Addr(), Prefix: prefix})
		if err != nil {
			t.Fatalf("open %q: %v", prefix, err)
		}
		t.Cleanup(func() { be.Close() })
		return be
	}
	a, b := open("a"), open("b")
	if _, err := newRegistry(t, a, k, nil).Acquire(ctx, registry.AcquireRequest{Resource: "p/r", Owner: "o", RequestID: "q", TTL: time.Minute}); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if v, err := b.Resource(ctx, "p/r", time.Now()); err != nil || v.Record.LastFence != 0 {
		t.Errorf("prefix b sees prefix a's resource: %+v %v", v.Record, err)
	}
	if n := raw(t, srv).Exists(ctx, "{a}:res:p/r").Val(); n != 1 {
		t.Errorf("the record is not under {a}:res:p/r")
	}
	for _, bad := range []string{"a{b", "x}"} {
		if _, err := redis.Open(ctx, redis.Options{Addr: srv.Addr(), Prefix: bad}); err == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
}

// TestCorruptRecord checks that an undecodable record is reported as
// ErrBackend, never read as an empty (fence 0) record.
func TestCorruptRecord(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	be := open(t, srv.Addr())
	defer be.Close()
	clk := clocktest.New(time.Time{})
	reg := newRegistry(t, be, registrytest.NewKeys(t), clk)
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "corrupt/r1", Owner: "o", RequestID: "c-1"}); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	raw(t, srv).Set(ctx, "{fgreg}:res:corrupt/r1", "{not json", 0)
	clk.Advance(time.Hour)
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "corrupt/r1", Owner: "o2", RequestID: "c-2"}); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("acquire over a corrupt record: %v, want ErrBackend", err)
	}
	if _, err := be.Resource(ctx, "corrupt/r1", clk.Now()); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("read of a corrupt record: %v, want ErrBackend", err)
	}
}

// TestCompactScanBounded checks that one compaction examines at most
// ScanLimit leases, and that successive compactions resume the scan and
// delete every ended lease in the end, even though half the leases are
// never compactable (still stored HELD): a scan restarting from the start
// each time would get stuck on them.
func TestCompactScanBounded(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const leases, scanLimit = 20, 5
	be, err := redis.OpenBackend(ctx, redis.Options{Addr: srv.Addr(), ScanLimit: scanLimit, ScanBatch: 2})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer be.Close()
	clk := clocktest.New(time.Time{})
	reg := newRegistry(t, be, registrytest.NewKeys(t), clk)
	var ids []string
	for i := range leases {
		res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: fmt.Sprintf("compact/r%d", i), Owner: "o", RequestID: fmt.Sprintf("q%d", i), TTL: time.Minute})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if i%2 == 1 {
			continue // never released: stored HELD, never compactable
		}
		if _, err := reg.Release(ctx, "o", res.View.Lease.Lease); err != nil {
			t.Fatalf("release: %v", err)
		}
		ids = append(ids, res.View.Lease.Lease)
	}
	clk.Advance(time.Hour)
	total, calls := 0, 0
	for total < leases/2 && calls < 4*leases/scanLimit {
		n, err := be.Compact(ctx, clk.Now(), 1000)
		if err != nil {
			t.Fatalf("compact: %v", err)
		}
		if n > scanLimit {
			t.Errorf("one compaction deleted %d leases, more than ScanLimit %d examines", n, scanLimit)
		}
		total += n
		calls++
	}
	if total != leases/2 {
		t.Fatalf("%d compactions deleted %d leases, want %d", calls, total, leases/2)
	}
	for _, id := range ids {
		if _, err := be.Lease(ctx, registry.LeaseQuery{Lease: id, Now: clk.Now()}); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("lease %s after compaction: %v, want ErrNotFound", id, err)
		}
	}
	for i := range leases {
		if v, err := be.Resource(ctx, fmt.Sprintf("compact/r%d", i), clk.Now()); err != nil || v.Record.LastFence != 1 {
			t.Errorf("compaction touched a record: %+v %v", v.Record, err)
		}
	}
}
