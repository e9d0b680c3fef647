package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/internal/etcdtest"
)

// The simulation with its registry on registry/etcd (Options.Etcd): the
// same rounds, each round's registry in a keyspace of its own on a real
// etcd cluster (internal/etcdtest: member processes on loopback ports),
// opened with registry/etcd's OpenBackend as the registry server opens
// it. A registry restore puts the keyspace back to a save; the running
// registry meets a state below what it saw by itself (its watermark: an
// epoch bump and a fence floor before anything else is decided), and the
// operator's epoch bump and fence floor follow. The cluster's members are real processes on the wall
// clock, so the leader is lost between runs, not inside a round: see
// doc.go, "What the model does not model".

// registryEnv selects the registry of the package's other tests:
// FENCEGATE_SIM_REGISTRY=etcd runs them all on registry/etcd (a
// one-member cluster of the test's own), unset or memory on
// registry/memory.
const registryEnv = "FENCEGATE_SIM_REGISTRY"

// withRegistry puts o's registries where registryEnv says.
func withRegistry(t *testing.T, o Options) Options {
	t.Helper()
	switch v := os.Getenv(registryEnv); v {
	case "", "memory":
	case "etcd":
		if len(o.Etcd) == 0 {
			o.Etcd = etcdtest.Start(t, 1).Endpoints()
		}
	default:
		t.Fatalf("%s=%q: want memory or etcd", registryEnv, v)
	}
	return o
}

// etcdGateRounds: a round on etcd costs a few hundred etcd round trips.
const etcdGateRounds = 60

// TestEtcdRegistryGate runs the gate with every fault on a three-member
// etcd cluster, kills its leader (SIGKILL) and runs the rounds without a
// registry restore again on the two members left: the gate passes both
// times, and every round has the same history as on registry/memory (the
// decisions are registry's; registry/etcd adds the transactions and the
// watermark, which a round without a restore never meets). Restores
// happened, and the registry met them.
func TestEtcdRegistryGate(t *testing.T) {
	c := etcdtest.Start(t, 3)
	o := Options{Rounds: etcdGateRounds, Seed: 24, Faults: AllFaults(), Replicas: 2, MaxShrinkRuns: 20, History: true, Etcd: c.Endpoints()}
	rep, out := run(t, o)
	if g := rep.Gate(); g != "" {
		t.Fatalf("gate failed on registry/etcd: %s\n%s", g, out)
	}
	if rep.Codes["EPOCH_REVOKED"] == 0 && rep.Codes["FENCE_REGRESSION"] == 0 {
		t.Errorf("no restore was met in %d rounds (codes %v)", rep.Rounds, rep.Codes)
	}

	killed := leaderOf(t, c)
	c.Member(killed).Kill()
	var left []string
	for i, m := range c.Members() {
		if i != killed {
			left = append(left, m.Endpoint())
		}
	}
	waitLeader(t, left)
	noRestore := Options{Rounds: etcdGateRounds, Seed: 25, Faults: withoutFault(AllFaults(), FaultRestore), Replicas: 2,
		MaxShrinkRuns: 20, History: true, Etcd: left}
	rep, out = run(t, noRestore)
	if g := rep.Gate(); g != "" {
		t.Fatalf("gate failed on registry/etcd after the leader's loss: %s\n%s", g, out)
	}
	mem := noRestore
	mem.Etcd = nil
	m, outM := run(t, mem)
	if outM != out || m.HistoryHash != rep.HistoryHash {
		t.Errorf("seed 25 on registry/memory and on registry/etcd differ:\n%s\n---\n%s", outM, out)
	}
	if !strings.HasSuffix(out, "gate: PASS\n") {
		t.Errorf("last line is not gate: PASS:\n%s", out)
	}
	t.Logf("\n%s", out)
}

// TestEtcdRegistryMeetsRestoreItself replays the rounds with a registry
// restore on etcd that set the registry back (a grant issued between the
// save and the restore): in each, the running registry met the restore by
// itself (registry/etcd's watermark: an epoch bump and a fence floor
// before anything else was decided) before the operator came, and the
// operator's own steps (epoch bump, fence floor) then succeeded. Shown
// failing with the recovery made a no-op in registry/etcd (every call
// after the restore fails closed: "operator: bump: ... went back").
func TestEtcdRegistryMeetsRestoreItself(t *testing.T) {
	c := etcdtest.Start(t, 1)
	o := Options{Rounds: 60, Seed: 26, Faults: []Fault{FaultRestore}, Replicas: 1, History: true, Etcd: c.Endpoints()}
	rep, out := run(t, o)
	if g := rep.Gate(); g != "" {
		t.Fatalf("gate failed: %s\n%s", g, out)
	}
	setBack, met := 0, 0
	for i := range o.Rounds {
		h, _, err := Replay(o, i)
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(h, "\n")
		saved := strings.Index(all, "registry state saved")
		restored := strings.Index(all, "registry restored to its snapshot")
		if saved < 0 || restored < saved || !strings.Contains(all[saved:restored], " fence ") {
			continue
		}
		if !strings.Contains(all[restored:], "operator: epoch") {
			continue // the round ended before the operator came
		}
		setBack++
		if strings.Contains(all[restored:], "registry: met the restore by itself") {
			met++
		}
		if strings.Contains(all, "operator: bump:") || strings.Contains(all, "operator: floor:") {
			t.Fatalf("round %d: the operator's recovery failed:\n%s", i, all)
		}
	}
	if setBack == 0 || met == 0 {
		t.Fatalf("of %d rounds, %d set the registry back, and the registry met %d by itself", o.Rounds, setBack, met)
	}
	t.Logf("%d rounds set the registry back; the registry met %d by itself before the operator came (the others had no registry call in between)", setBack, met)
}

func withoutFault(fs []Fault, drop Fault) []Fault {
	var out []Fault
	for _, f := range fs {
		if f != drop {
			out = append(out, f)
		}
	}
	return out
}

// leaderOf is the index of c's leader.
func leaderOf(t *testing.T, c *etcdtest.Cluster) int {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, m := range c.Members() {
		if st, err := cli.Status(ctx, m.Endpoint()); err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	t.Fatal("no member says it is the leader")
	return -1
}

// waitLeader waits until one of the members at endpoints says it leads
// (the two left after the leader's kill elect one) and a write commits:
// an operator waits for the cluster's health, too.
func waitLeader(t *testing.T, endpoints []string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for range 300 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cli.Put(ctx, "fgsim-health", "ok")
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader among %v: %v", endpoints, err)
}
