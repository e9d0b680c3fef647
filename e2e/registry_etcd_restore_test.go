package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/internal/redistest"
)

// TestRegistryOnEtcdRestoredFromSnapshot: the registry runs on etcd, a
// sidecar in registry mode keeps its fenced store on Redis. etcd is
// restored (etcdutl snapshot restore) from a snapshot taken before the
// last fences were issued, twice:
//
//  1. without --bump-revision, under the running registry process: it
//     meets the old state with an epoch bump and a fence floor before it
//     issues anything; the next owner's fence is above every fence issued
//     before, its write is accepted, the previous owner's is STALE_OWNER;
//  2. with --bump-revision --mark-compacted, together with a registry
//     process killed (-9) and restarted on its data dir with its
//     etcd-state.json lost: the documented limit (design §10). The new
//     process cannot tell, and issues the last fence again under a new
//     lease; the sidecar, which accepted that fence under the first lease,
//     answers FENCE_REGRESSION and pauses the resource: nothing more
//     reaches the backend.
func TestRegistryOnEtcdRestoredFromSnapshot(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	storeRedis := redistest.Start(t)
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, cfg, "backend: etcd\netcd: {endpoints: [\""+cl.Member(0).Endpoint()+"\"], prefix: e2ereg}\n")
	addr := freePort(t) // the registry keeps its address across restarts
	reg := startRegistry(t, dataDir, "--config", cfg, "--listen", addr)

	back := startLedgerBackend(t)
	sc := startSidecar(t, matrixSidecarConfig(reg, back.URL(), sidecarOpts{status: "registry",
		redisAddr: storeRedis.Addr(), redisPrefix: "etcdrestore", dataDir: t.TempDir()}, "unused"))
	const id = "1"
	path := accountsPath(id)
	ctx := context.Background()
	release := func(owner string, l *client.Lease) {
		t.Helper()
		if _, err := registryClient(t, reg.url, owner).Release(ctx, l.Lease); err != nil {
			t.Fatalf("%s releasing: %v", owner, err)
		}
	}
	take := func(owner, body string) *client.Lease {
		t.Helper()
		l := acquireAt(t, reg.url, owner, id, 30*time.Second, 5*time.Second)
		wantAccepted(t, owner+"'s write", send(sc.url, of(owner, l, path, "1", body)))
		return l
	}

	a := take("worker-a", "A")
	old := cl.Snapshot(t) // knows fence a only
	release("worker-a", a)
	b := take("worker-b", "B")

	// 1. Restored without --bump-revision under the running registry.
	cl.Restore(t, old, etcdtest.RestoreOptions{})
	c := take("worker-c", "C")
	if c.FenceToken <= b.FenceToken || c.IssuerEpoch <= b.IssuerEpoch {
		t.Fatalf("first grant after the restore: fence %d epoch %d; before it fence %d epoch %d were issued",
			c.FenceToken, c.IssuerEpoch, b.FenceToken, b.IssuerEpoch)
	}
	wantProblem(t, "the previous owner's write after the restore", send(sc.url, of("worker-b", b, path, "2", "B late")), fencegate.CodeStaleOwner)
	release("worker-c", c)
	older := cl.Snapshot(t) // knows fences a, b, c and the bumped epoch
	d := take("worker-d", "D")

	// 2. Restored with --bump-revision --mark-compacted, the registry
	// process killed and restarted with its state file lost.
	reg.kill()
	if err := os.Remove(filepath.Join(dataDir, "etcd-state.json")); err != nil {
		t.Fatalf("the registry's state file: %v", err)
	}
	cl.Restore(t, older, etcdtest.RestoreOptions{BumpRevision: 1000})
	reg = startRegistry(t, dataDir, "--config", cfg, "--listen", addr)
	e := acquireAt(t, reg.url, "worker-e", id, 30*time.Second, 5*time.Second)
	if e.FenceToken != d.FenceToken {
		t.Fatalf("the restarted registry issued fence %d; the documented limit is fence %d issued again", e.FenceToken, d.FenceToken)
	}
	wantProblem(t, "the reissued fence's write", send(sc.url, of("worker-e", e, path, "1", "E")), fencegate.CodeFenceRegression)
	resp, err := http.Get(sc.admin + "/v1/paused")
	if err != nil {
		t.Fatal(err)
	}
	var paused []struct {
		Resource string `json:"resource"`
		Pause    struct {
			Reason string `json:"reason"`
		} `json:"pause"`
	}
	err = json.NewDecoder(resp.Body).Decode(&paused)
	resp.Body.Close()
	if err != nil || len(paused) != 1 || paused[0].Pause.Reason != "FENCE_REGRESSION" {
		t.Fatalf("/v1/paused = %+v (%v), want the resource paused for FENCE_REGRESSION", paused, err)
	}
	back.wantBodies(t, path, "A", "B", "C", "D")
}
