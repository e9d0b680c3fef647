package bolt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bbolt "go.etcd.io/bbolt"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/bolt"
	"github.com/fencegate/fencegate/registry/registrytest"
)

func TestConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T) registrytest.Opener {
		path := filepath.Join(t.TempDir(), "registry.db")
		return registrytest.Opener{Open: func() (registry.Backend, error) {
			return bolt.OpenBackend(path, time.Second)
		}}
	})
}

// newRegistry returns a Registry over be with a fresh key and metrics.
func newRegistry(t testing.TB, be registry.Backend, k registrytest.Keys, clk clock.Clock) *registry.Registry {
	t.Helper()
	reg, err := registry.New(registry.Options{Backend: be, Signer: k.Signer, Clock: clk, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	registrytest.Start(t, reg)
	return reg
}

// TestReopenKeepsEveryFence issues fences on many resources, reopens the
// file and checks that every resource's LastFence is the last fence issued
// and that new fences continue above it.
func TestReopenKeepsEveryFence(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "registry.db")
	k := registrytest.NewKeys(t)
	clock := clocktest.New(time.Time{})
	const resources, rounds = 20, 5

	last := map[string]uint64{}
	for round := range 2 {
		be, err := bolt.OpenBackend(path, time.Second)
		if err != nil {
			t.Fatalf("open (round %d): %v", round, err)
		}
		for r := range resources {
			name := fmt.Sprintf("reopen/r%02d", r)
			v, err := be.Resource(ctx, name, clock.Now())
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			if v.Record.LastFence != last[name] {
				t.Errorf("round %d: %s LastFence %d, last issued %d", round, name, v.Record.LastFence, last[name])
			}
		}
		reg := newRegistry(t, be, k, clock)
		for i := range rounds {
			for r := range resources {
				name := fmt.Sprintf("reopen/r%02d", r)
				res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: name, Owner: "owner", RequestID: fmt.Sprintf("ro-%d-%d-%d", round, i, r), TTL: time.Minute})
				if err != nil {
					t.Fatalf("acquire %s: %v", name, err)
				}
				if f := res.View.Lease.Fence; f <= last[name] {
					t.Errorf("%s: fence %d after %d", name, f, last[name])
				}
				last[name] = res.View.Lease.Fence
				if i%2 == 0 || i == rounds-1 && r%2 == 0 {
					if _, err := reg.Release(ctx, "owner", res.View.Lease.Lease); err != nil {
						t.Fatalf("release: %v", err)
					}
				} else {
					clock.Advance(time.Minute)
				}
			}
		}
		if err := be.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
}

// TestSchemaMismatch checks that a file written with another schema
// version is refused with ErrSchema and left as it was.
func TestSchemaMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := bolt.Open(path, time.Second)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, v := range []string{"3", "0", "", "2 "} {
		setSchema(t, path, v)
		if _, err := bolt.Open(path, time.Second); !errors.Is(err, bolt.ErrSchema) {
			t.Errorf("schema %q: Open error %v, want ErrSchema", v, err)
		}
		if _, err := bolt.OpenBackend(path, time.Second); !errors.Is(err, bolt.ErrSchema) {
			t.Errorf("schema %q: OpenBackend error %v, want ErrSchema", v, err)
		}
		if got := getSchema(t, path); got != v {
			t.Errorf("a refused open rewrote the schema %q as %q", v, got)
		}
	}
	setSchema(t, path, fmt.Sprint(bolt.SchemaVersion))
	s, err = bolt.Open(path, time.Second)
	if err != nil {
		t.Fatalf("open with the right schema: %v", err)
	}
	s.Close()
}

func setSchema(t *testing.T, path, v string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bbolt open: %v", err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte(v)) }); err != nil {
		t.Fatalf("write schema: %v", err)
	}
}

func getSchema(t *testing.T, path string) string {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("bbolt open: %v", err)
	}
	defer db.Close()
	var v string
	db.View(func(tx *bbolt.Tx) error {
		v = string(tx.Bucket([]byte("meta")).Get([]byte("schema")))
		return nil
	})
	return v
}

// TestCorruptRecord checks that an undecodable record is reported as
// ErrBackend, never read as an empty (fence 0) record.
func TestCorruptRecord(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "registry.db")
	be, err := bolt.OpenBackend(path, time.Second)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	k := registrytest.NewKeys(t)
	clock := clocktest.New(time.Time{})
	reg := newRegistry(t, be, k, clock)
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "corrupt/r1", Owner: "o", RequestID: "c-1"}); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	be.Close()

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bbolt open: %v", err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("resources")).Put([]byte("corrupt/r1"), []byte("{not json"))
	}); err != nil {
		t.Fatalf("corrupt: %v", err)
	}
	db.Close()

	be, err = bolt.OpenBackend(path, time.Second)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer be.Close()
	reg = newRegistry(t, be, k, clock)
	clock.Advance(time.Hour)
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "corrupt/r1", Owner: "o2", RequestID: "c-2"}); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("acquire over a corrupt record: %v, want ErrBackend", err)
	}
	if _, err := be.Resource(ctx, "corrupt/r1", clock.Now()); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("read of a corrupt record: %v, want ErrBackend", err)
	}
}

// TestFileLocked checks that a second open of a file in use waits for the
// timeout and fails instead of sharing it.
func TestFileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := bolt.Open(path, time.Second)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if s2, err := bolt.Open(path, 50*time.Millisecond); err == nil {
		s2.Close()
		t.Fatal("a second open of a locked file succeeded")
	}
}

// TestSchemaOneFileUpgrades: a file of schema 1, whose meta, resources and
// leases are JSON, opens, is marked SchemaVersion, and serves its records
// as they were: the held lease is found by its grant digest with the same
// record, its release works, the next fence continues above the stored
// one, and what is written is then in the binary form.
func TestSchemaOneFileUpgrades(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "registry.db")
	k := registrytest.NewKeys(t)
	clk := clocktest.New(time.UnixMilli(1_800_000_000_000))
	be, err := bolt.OpenBackend(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, be, k, clk)
	for i := range 3 { // fence 3 on doc/1, held
		res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "doc/1", Owner: "o", RequestID: fmt.Sprint("r", i), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if _, err := reg.Release(ctx, "o", res.View.Lease.Lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	held, err := reg.Status(ctx, registry.LeaseQuery{Owner: "o", RequestID: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := reg.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := reg.Resource(ctx, "doc/1")
	if err != nil {
		t.Fatal(err)
	}
	be.Close()

	// Rewrite them as schema 1 wrote them.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		put := func(bucket, key string, v any) {
			raw, err := json.Marshal(v)
			if err == nil {
				err = tx.Bucket([]byte(bucket)).Put([]byte(key), raw)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		put("meta", "meta", meta)
		put("resources", "doc/1", rv.Record)
		put("leases", held.View.Lease.Lease, held.View.Lease)
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte("1"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	be, err = bolt.OpenBackend(path, time.Second)
	if err != nil {
		t.Fatalf("open a schema-1 file: %v", err)
	}
	defer be.Close()
	reg = newRegistry(t, be, k, clk)
	got, err := reg.GrantStatus(ctx, held.View.Lease.Digest)
	if err != nil {
		t.Fatalf("status of the JSON lease: %v", err)
	}
	if got.View.Lease != held.View.Lease || got.View.State != "HELD" || got.View.Meta.Revision != meta.Revision {
		t.Fatalf("JSON lease read as %+v, want %+v", got.View, held.View)
	}
	if _, err := reg.Release(ctx, "o", held.View.Lease.Lease); err != nil {
		t.Fatalf("release of the JSON lease: %v", err)
	}
	next, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "doc/1", Owner: "o", RequestID: "r3", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if next.View.Lease.Fence != 4 {
		t.Fatalf("fence after the upgrade: %d, want 4", next.View.Lease.Fence)
	}
	be.Close()
	if got := getSchema(t, path); got != fmt.Sprint(bolt.SchemaVersion) {
		t.Fatalf("schema after opening a schema-1 file: %q, want %d", got, bolt.SchemaVersion)
	}
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		for bucket, key := range map[string]string{"meta": "meta", "resources": "doc/1", "leases": held.View.Lease.Lease} {
			if v := tx.Bucket([]byte(bucket)).Get([]byte(key)); len(v) == 0 || v[0] == '{' {
				t.Errorf("%s/%s rewritten as %q, want the binary form", bucket, key, v)
			}
		}
		return nil
	})
}

// TestConcurrentSameRequest: acquires of one (owner, requestId) sent at
// once, so that they share group transactions with the grant they repeat
// before its seal is written (Finish), all answer the same lease with the
// same sealed grant, found HELD by its digest.
func TestConcurrentSameRequest(t *testing.T) {
	ctx := context.Background()
	be, err := bolt.OpenBackend(filepath.Join(t.TempDir(), "registry.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	reg := newRegistry(t, be, registrytest.NewKeys(t), nil)
	const callers = 16
	for round := range 10 {
		var wg sync.WaitGroup
		got := make([]registry.Result, callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = reg.Acquire(ctx, registry.AcquireRequest{Resource: fmt.Sprint("same/", round), Owner: "o", RequestID: fmt.Sprint("req-", round), TTL: time.Minute})
			}()
		}
		wg.Wait()
		for i := range callers {
			if errs[i] != nil {
				t.Fatalf("round %d caller %d: %v", round, i, errs[i])
			}
			if len(got[i].Grant) == 0 || string(got[i].Grant) != string(got[0].Grant) || got[i].View.Lease != got[0].View.Lease {
				t.Fatalf("round %d caller %d got grant %q of %+v, caller 0 %q of %+v", round, i, got[i].Grant, got[i].View.Lease, got[0].Grant, got[0].View.Lease)
			}
		}
		st, err := reg.GrantStatus(ctx, fencegate.Digest(got[0].Grant))
		if err != nil || st.View.State != fencegate.StateHeld || st.View.Lease != got[0].View.Lease {
			t.Fatalf("round %d: status by digest %+v, %v", round, st.View, err)
		}
	}
}
