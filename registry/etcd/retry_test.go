package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/internal/faultproxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
)

// TestAmbiguousCommitRunsAgain: a step's commit reaches etcd and applies,
// but its answer is lost (the connection closes: gRPC's Unavailable, an
// outcome the client cannot know). The Store runs the whole step again on
// fresh reads: a later run reads what the first committed (so a decision
// keyed on it, like an acquire's request ID, returns what was already
// granted) and writes nothing more; Update succeeds. (The first commit
// may apply after the second run's reads: that run's commit then fails
// its comparison, and a third run reads it.) Without the
// retry, Update fails with ErrBackend although its write applied.
func TestAmbiguousCommitRunsAgain(t *testing.T) {
	c := etcdtest.Start(t, 1)
	px, err := faultproxy.Start(strings.TrimPrefix(c.Member(0).Endpoint(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	s := openStore(t, etcd.Options{Endpoints: []string{px.URL()}, RetryFor: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var runs []uint64 // the fence each run found
	err = s.Update(ctx, func(tx registry.Tx) error {
		r, found, err := tx.Resource("amb/r")
		if err != nil {
			return err
		}
		runs = append(runs, r.LastFence)
		if found {
			return nil // the earlier run's write: nothing to do
		}
		if len(runs) == 1 {
			// The commit is this step's next request: its answer is lost.
			px.SetModeN(faultproxy.DropResponse, 1)
		}
		return tx.PutResource(registry.ResourceRecord{Resource: "amb/r", LastFence: 1})
	})
	if err != nil {
		t.Fatalf("a step whose commit's answer was lost: %v, want it run again and succeed", err)
	}
	if px.Stats().DroppedResponses != 1 {
		t.Fatalf("%d answers dropped, want 1 (the commit's)", px.Stats().DroppedResponses)
	}
	// The second run reads the first one's commit, or (the commit applied
	// after the second run's reads) the second run's commit fails its
	// comparison and a third reads it: [0 1] or [0 0 1], never a second
	// write.
	if n := len(runs); n < 2 || runs[0] != 0 || runs[n-1] != 1 {
		t.Fatalf("runs found fences %v, want [0 1] or [0 0 1]: a later run reads the first one's commit", runs)
	}
	resp, err := rawClient(t, c).Get(ctx, "fgreg/res/amb/r")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Fatalf("resource after the step: %v %v, want written once", resp, err)
	}
}

// TestNoQuorumRefusedThenRetried: with two of three members stopped the
// one left has no quorum. A step through it fails with ErrUnavailable and
// registry.ErrBackend once RetryFor is spent, writing nothing; a step
// still within RetryFor when a second member comes back succeeds on
// reads made after the quorum returned.
func TestNoQuorumRefusedThenRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes")
	}
	c := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	write := func(s *etcd.Store, fence uint64) error {
		return s.Update(ctx, func(tx registry.Tx) error {
			if _, _, err := tx.Resource("nq/r"); err != nil {
				return err
			}
			return tx.PutResource(registry.ResourceRecord{Resource: "nq/r", LastFence: fence})
		})
	}
	short := openStore(t, etcd.Options{Endpoints: []string{c.Member(0).Endpoint()}, RetryFor: 300 * time.Millisecond})
	long := openStore(t, etcd.Options{Endpoints: []string{c.Member(0).Endpoint()}, RetryFor: 40 * time.Second})
	if err := write(short, 1); err != nil {
		t.Fatal(err)
	}
	c.Member(1).Stop()
	c.Member(2).Stop()
	err := write(short, 2)
	if !errors.Is(err, etcd.ErrUnavailable) || !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("a step without quorum: %v, want ErrUnavailable and ErrBackend", err)
	}
	done := make(chan error, 1)
	go func() { done <- write(long, 3) }()
	// The long step is refused until a quorum is back: it cannot have
	// ended yet (its RetryFor is 40s), unless it decided without one.
	select {
	case err := <-done:
		t.Fatalf("a step ended with two of three members down: %v", err)
	default:
	}
	c.Member(1).Start()
	if err := <-done; err != nil {
		t.Fatalf("a step retried until the quorum came back: %v", err)
	}
	resp, err := rawClient(t, c).Get(ctx, "fgreg/res/nq/r")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("resource: %v %v", resp, err)
	}
	var r registry.ResourceRecord
	if err := json.Unmarshal(resp.Kvs[0].Value, &r); err != nil || r.LastFence != 3 {
		t.Fatal(fmt.Errorf("resource %s (%v), want the retried step's fence 3 (the refused one wrote nothing)", resp.Kvs[0].Value, err))
	}
}
