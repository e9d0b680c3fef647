package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/etcdtest"
)

// TestRegistryReplicasOnEtcd runs two real `fencegate registry` processes
// (replicas A and B) with backend: etcd on a three-member etcd cluster,
// each on another member. Alice holds a resource on A for a minute; Bob
// waits for it on B (up to 20s). Alice releases on A: B's waiter is woken
// by the etcd watch of the release and granted, with a fence above
// Alice's. Without the wake-up Bob would wait out his 20s and get no
// lease (the holder's TTL is a minute): the test would fail.
func TestRegistryReplicasOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes and two registries")
	}
	cl := etcdtest.Start(t, 3)
	replica := func(name string, endpoints ...string) *registry {
		cfg := filepath.Join(t.TempDir(), name+".yaml")
		writeFile(t, cfg, "backend: etcd\netcd: {endpoints: [\""+strings.Join(endpoints, "\", \"")+"\"], prefix: e2ereg}\n")
		return startRegistry(t, "", "--config", cfg)
	}
	regA := replica("a", cl.Member(0).Endpoint())
	regB := replica("b", cl.Member(1).Endpoint(), cl.Member(2).Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	alice, _ := client.New(regA.url, client.WithIdentityHeader("X-Fencegate-Identity", "alice"))
	bob, _ := client.New(regB.url, client.WithIdentityHeader("X-Fencegate-Identity", "bob"))

	held, err := alice.Acquire(ctx, client.AcquireRequest{Resource: "account/etcd", RequestID: "alice-1", TTL: time.Minute})
	if err != nil {
		t.Fatalf("alice's acquire on A: %v", err)
	}
	type outcome struct {
		l   *client.Lease
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		l, err := bob.Acquire(ctx, client.AcquireRequest{Resource: "account/etcd", RequestID: "bob-1", TTL: time.Minute, Wait: 20 * time.Second})
		done <- outcome{l, err}
	}()
	// B's gauge of waiting acquires shows Bob queued; his first attempt
	// (busy) follows at once. A release landing before that attempt would
	// let Bob in without a wake-up, so this test cannot fail for a
	// missing wake-up in that narrow window: the strict proof, with
	// timers that never fire, is registry/etcd's
	// TestReleaseWakesWaiterOnOtherReplica. This one shows the real
	// binaries wired to it.
	waitGauge(t, regB.url, "fencegate_registry_waiting_acquires", 1)
	if _, err := alice.Release(ctx, held.Lease); err != nil {
		t.Fatalf("alice's release on A: %v", err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("bob's waiting acquire on B: %v (not woken by the release on A)", o.err)
	}
	if o.l.FenceToken <= held.FenceToken {
		t.Fatalf("bob's fence %d, want above alice's %d", o.l.FenceToken, held.FenceToken)
	}
}

// waitGauge polls url's /metrics until the unlabelled gauge name reaches
// want (a liveness bound of 20s turns a hang into a failure).
func waitGauge(t *testing.T, url, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if gauge(url, name) >= want {
			return
		}
	}
	t.Fatalf("%s at %s never reached %v", name, url, want)
}

func gauge(url, name string) float64 {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f
			}
		}
	}
	return -1
}
