package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/etcdtest"
)

// TestRegistryReplicaPausedOnEtcd: two real `fencegate registry`
// replicas (A and B, one signing key) on one etcd. Worker A holds a 1 s
// lease through replica A and writes segment 1 through a sidecar. Replica
// A is frozen with SIGSTOP past the TTL; worker B acquires the resource
// through replica B (a higher fence) and writes. Replica A, resumed with
// SIGCONT, answers from etcd, not from what it knew before the pause:
// worker A's renewal is refused (LEASE_NOT_HELD), its lease's status is
// not HELD, its release does not end B's lease; and the sidecar refuses
// worker A's segment 2 (STALE_OWNER: B's write was accepted).
func TestRegistryReplicaPausedOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("an etcd process and two registries")
	}
	cl := etcdtest.Start(t, 1)
	conf := func(name, extra string) string {
		cfg := filepath.Join(t.TempDir(), name+".yaml")
		writeFile(t, cfg, "backend: etcd\netcd: {endpoints: [\""+cl.Member(0).Endpoint()+"\"], prefix: e2epause}\n"+extra)
		return cfg
	}
	regA := startRegistry(t, "", "--config", conf("a", ""))
	key := filepath.Join(regA.dataDir, "keys", "signing.jwk")
	regB := startRegistry(t, "", "--config", conf("b", "signingKey: \""+key+"\"\n"))
	back := startLedgerBackend(t)
	// The sidecar trusts the one key and asks replica B for statuses.
	trust := &registry{proc: regB.proc, dataDir: regA.dataDir, url: regB.url}
	sc := startSidecar(t, matrixSidecarConfig(trust, back.URL(), sidecarOpts{dataDir: t.TempDir()}, fmt.Sprintf("e2e-pause-%d", serviceSeq.Add(1))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "etcd-pause"
	path := accountsPath(id)

	a := acquireAt(t, regA.url, "worker-a", id, time.Second, 0)
	wantAccepted(t, "A's segment 1", send(sc.url, of("worker-a", a, path, "1", "A1")))

	if err := regA.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = regA.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume() // a failing test still lets replica A be stopped
	// B waits on replica B for A's lease to end (its TTL, replica A frozen).
	b := acquireAt(t, regB.url, "worker-b", id, 30*time.Second, 10*time.Second)
	if b.FenceToken <= a.FenceToken {
		t.Fatalf("B's fence %d, not above A's %d", b.FenceToken, a.FenceToken)
	}
	wantAccepted(t, "B's segment 1", send(sc.url, of("worker-b", b, path, "1", "B1")))
	resume()

	onA := registryClient(t, regA.url, "worker-a")
	if _, err := onA.Renew(ctx, a.Lease, 0); !errors.Is(err, client.ErrLeaseNotHeld) {
		t.Fatalf("A's renewal on the resumed replica: %v, want LEASE_NOT_HELD", err)
	}
	st, err := onA.Status(ctx, a.Lease)
	if err != nil || st.State == string(fencegate.StateHeld) {
		t.Fatalf("A's status on the resumed replica: %s %v, want not HELD", stateOf(st), err)
	}
	if rel, err := onA.Release(ctx, a.Lease); err != nil || rel.State == string(fencegate.StateHeld) {
		t.Fatalf("A's release on the resumed replica: %s %v, want its lease not HELD", stateOf(rel), err)
	}
	bNow, err := registryClient(t, regA.url, "worker-b").Status(ctx, b.Lease)
	if err != nil || bNow.State != string(fencegate.StateHeld) || bNow.FenceToken != b.FenceToken {
		t.Fatalf("B's lease seen from the resumed replica: %s %v, want HELD fence %d", stateOf(bNow), err, b.FenceToken)
	}
	wantProblem(t, "A's segment 2 after B's write", send(sc.url, of("worker-a", a, path, "2", "A2")), fencegate.CodeStaleOwner)
	back.wantBodies(t, path, "A1", "B1")
	checkFinalData(t, sc.admin, back, id, a.Grant, b.Grant)
}

// stateOf is a lease's state and fence, for messages (nil: none).
func stateOf(l *client.Lease) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%s fence %d", l.State, l.FenceToken)
}
