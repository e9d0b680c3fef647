package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
)

func openStore(t *testing.T, o etcd.Options) *etcd.Store {
	t.Helper()
	s, err := etcd.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rawClient(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestOlderMetaIsRecovered: once a Store has written the meta at
// revision 3, a meta at revision 1 (what a restore of an older snapshot
// would bring back, put here behind its back) is recovered before the
// next step decides: the epoch is bumped above 2, the revision set above
// 3, one restore counted, and the step then runs on the recovered meta.
func TestOlderMetaIsRecovered(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openStore(t, etcd.Options{Endpoints: c.Endpoints()})
	ctx := context.Background()
	err := s.Update(ctx, func(tx registry.Tx) error {
		return tx.PutMeta(registry.Meta{IssuerEpoch: 2, Revision: 3, Lineage: "L"})
	})
	if err != nil {
		t.Fatalf("write the meta: %v", err)
	}
	old, _ := json.Marshal(registry.Meta{IssuerEpoch: 2, Revision: 1, Lineage: "L"})
	if _, err := rawClient(t, c).Put(ctx, "fgreg/meta", string(old)); err != nil {
		t.Fatal(err)
	}
	var decidedOn registry.Meta
	err = s.Update(ctx, func(tx registry.Tx) error {
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		decidedOn = m
		return tx.PutResource(registry.ResourceRecord{Resource: "rb/r", LastFence: 1})
	})
	if err != nil {
		t.Fatalf("step over an older meta: %v", err)
	}
	if decidedOn.IssuerEpoch <= 2 || decidedOn.Revision <= 3 || decidedOn.Lineage != "L" {
		t.Fatalf("the step decided on %+v, want an epoch above 2, a revision above 3 and the lineage kept", decidedOn)
	}
	if n := s.Restores(); n != 1 {
		t.Fatalf("%d restores counted, want 1", n)
	}
}

// TestRolledBackAgainFailsClosed: a meta that goes back again right
// after the recovery (here put back before the step's rerun reads it)
// fails the step with ErrRolledBack and registry.ErrBackend, and the step
// writes nothing.
func TestRolledBackAgainFailsClosed(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openStore(t, etcd.Options{Endpoints: c.Endpoints()})
	cli := rawClient(t, c)
	ctx := context.Background()
	err := s.Update(ctx, func(tx registry.Tx) error {
		return tx.PutMeta(registry.Meta{IssuerEpoch: 2, Revision: 3})
	})
	if err != nil {
		t.Fatalf("write the meta: %v", err)
	}
	old, _ := json.Marshal(registry.Meta{IssuerEpoch: 2, Revision: 1})
	err = s.Update(ctx, func(tx registry.Tx) error {
		if _, err := cli.Put(ctx, "fgreg/meta", string(old)); err != nil {
			return err
		}
		if _, err := tx.Meta(); err != nil {
			return err
		}
		return tx.PutResource(registry.ResourceRecord{Resource: "rb/r", LastFence: 1})
	})
	if !errors.Is(err, etcd.ErrRolledBack) || !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("step over a meta that went back twice: %v, want ErrRolledBack and ErrBackend", err)
	}
	err = s.View(ctx, func(tx registry.Tx) error {
		_, found, err := tx.Resource("rb/r")
		if found {
			return fmt.Errorf("the refused step wrote its resource")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConflictRetriesOnFreshReads: a key read by a step changes before its
// commit (another process's write); the commit writes nothing and the
// step runs again, on the new value.
func TestConflictRetriesOnFreshReads(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openStore(t, etcd.Options{Endpoints: c.Endpoints()})
	cli := rawClient(t, c)
	ctx := context.Background()
	seen := []uint64{}
	err := s.Update(ctx, func(tx registry.Tx) error {
		r, _, err := tx.Resource("cf/r")
		if err != nil {
			return err
		}
		seen = append(seen, r.LastFence)
		if len(seen) == 1 {
			other, _ := json.Marshal(registry.ResourceRecord{Resource: "cf/r", LastFence: 7})
			if _, err := cli.Put(ctx, "fgreg/res/cf/r", string(other)); err != nil {
				return err
			}
		}
		r.Resource, r.LastFence = "cf/r", r.LastFence+1
		return tx.PutResource(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 0 || seen[1] != 7 {
		t.Fatalf("runs saw fences %v, want [0 7]", seen)
	}
	err = s.View(ctx, func(tx registry.Tx) error {
		r, _, err := tx.Resource("cf/r")
		if err == nil && r.LastFence != 8 {
			err = fmt.Errorf("fence %d after the retried step, want 8", r.LastFence)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestContentionIsBounded: a step whose read key changes before every
// commit fails after MaxAttempts runs with ErrContention, writing nothing.
func TestContentionIsBounded(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openStore(t, etcd.Options{Endpoints: c.Endpoints(), MaxAttempts: 3})
	cli := rawClient(t, c)
	ctx := context.Background()
	runs := 0
	err := s.Update(ctx, func(tx registry.Tx) error {
		runs++
		if _, _, err := tx.Resource("ct/r"); err != nil {
			return err
		}
		if _, err := cli.Put(ctx, "fgreg/res/ct/r", fmt.Sprintf(`{"resource":"ct/r","lastFence":%d}`, runs)); err != nil {
			return err
		}
		return tx.PutLease(registry.LeaseRecord{Lease: "ct-lease", Resource: "ct/r"})
	})
	if !errors.Is(err, etcd.ErrContention) || !errors.Is(err, registry.ErrBackend) || runs != 3 {
		t.Fatalf("after %d runs: %v, want ErrContention after 3", runs, err)
	}
	if resp, err := cli.Get(ctx, "fgreg/lease/ct-lease"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a conflicting step wrote its lease: %v %v", resp, err)
	}
}

// TestTooManyOpsFailsClosed: on an etcd with its default --max-txn-ops
// (128), a step writing more keys fails with ErrTxnTooLarge and
// registry.ErrBackend, and writes none of them.
func TestTooManyOpsFailsClosed(t *testing.T) {
	c := etcdtest.Start(t, 1, "-max-txn-ops", "128")
	s := openStore(t, etcd.Options{Endpoints: c.Endpoints()})
	ctx := context.Background()
	err := s.Update(ctx, func(tx registry.Tx) error {
		for i := range 200 {
			if err := tx.PutAnchor(registry.AnchorRecord{Store: "st", Resource: fmt.Sprintf("r%03d", i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, etcd.ErrTxnTooLarge) || !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("a 200-key step on max-txn-ops 128: %v, want ErrTxnTooLarge", err)
	}
	if resp, err := rawClient(t, c).Get(ctx, "fgreg/anc/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("anchors written by the refused step: %v %v", resp, err)
	}
}

// TestOpenUnreachableFails: Open fails (registry.ErrBackend) when no
// endpoint answers, rather than returning a store that fails later.
func TestOpenUnreachableFails(t *testing.T) {
	c := etcdtest.Start(t, 1)
	c.Member(0).Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := etcd.Open(ctx, etcd.Options{Endpoints: c.Endpoints(), DialTimeout: 500 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open on a dead cluster succeeded")
	}
	if !errors.Is(err, registry.ErrBackend) {
		t.Errorf("Open on a dead cluster: %v, want ErrBackend", err)
	}
	if _, err := etcd.Open(ctx, etcd.Options{}); !errors.Is(err, etcd.ErrOptions) {
		t.Fatalf("Open without endpoints: %v, want ErrOptions", err)
	}
}
