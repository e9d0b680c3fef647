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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := rawClient(t, c)
	// The proxy drops the next answer it sees after the switch; on gRPC's
	// one connection that is the commit's, or a frame of the server's own
	// (a ping) just before it, whose drop closes the connection all the
	// same, the commit on it or already past it. The scenario runs on new
	// keys until a commit applied and its answer was lost (a later run
	// found its write), every round checked.
	applied := 0
	for round := 0; round < 10 && applied == 0; round++ {
		key := fmt.Sprintf("amb/r%d", round)
		runs := ambiguousRound(ctx, t, s, px, key)
		// Each run finds the key absent until one finds the write that
		// applied: the first run's, when its commit applied although its
		// answer was lost (then nothing more is written), or none when it
		// did not apply (then a later run writes it). Written once.
		for i, f := range runs {
			if f != 0 && (f != 1 || i != len(runs)-1) {
				t.Fatalf("%s: runs found fences %v, want zeros, then possibly the one write", key, runs)
			}
		}
		if len(runs) > 1 && runs[len(runs)-1] == 1 {
			applied++
		}
		resp, err := cli.Get(ctx, "fgreg/res/"+key)
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
			t.Fatalf("%s after the step: %v %v, want written once", key, resp, err)
		}
	}
	if applied == 0 {
		t.Fatal("in 10 rounds no commit applied with its answer lost: the scenario did not run")
	}
}

// ambiguousRound runs one step writing key, the proxy set to drop the
// next answer just before the step's commit; it returns the fence each run
// of the step found. The step must succeed.
func ambiguousRound(ctx context.Context, t *testing.T, s *etcd.Store, px *faultproxy.Proxy, key string) []uint64 {
	t.Helper()
	var runs []uint64
	err := s.Update(ctx, func(tx registry.Tx) error {
		r, found, err := tx.Resource(key)
		if err != nil {
			return err
		}
		runs = append(runs, r.LastFence)
		if found {
			return nil // the earlier run's write: nothing to do
		}
		if len(runs) == 1 {
			px.SetModeN(faultproxy.DropResponse, 1)
		}
		return tx.PutResource(registry.ResourceRecord{Resource: key, LastFence: 1})
	})
	px.SetMode(faultproxy.Pass)
	if err != nil {
		t.Fatalf("%s: a step whose commit's answer was lost: %v, want it run again and succeed", key, err)
	}
	return runs
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
