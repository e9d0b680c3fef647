package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redistest"
)

// TestRegistryOnRedisRestoredFromOldRDB: the registry runs on Redis (RDB
// persistence), a sidecar in registry mode keeps its fenced store on
// another Redis. After fences were issued and accepted, the registry's
// Redis is restored from an RDB saved before the last of them, twice:
// once under the running registry process, once together with a registry
// process killed (-9) and restarted on its data dir. Each time the
// registry meets the old state with an epoch bump and a fence floor before
// it issues anything: the next owner's fence is above every fence issued
// before, its write is accepted (no FENCE_REGRESSION pause, no reissued
// fence), the previous owner's write is refused, and the backend holds
// exactly the accepted writes in fence order.
func TestRegistryOnRedisRestoredFromOldRDB(t *testing.T) {
	regRedis := redistest.Start(t, "--appendonly", "no", "--save", "")
	storeRedis := redistest.Start(t)
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, cfg, "backend: redis\nredis: {addr: \""+regRedis.Addr()+"\", prefix: e2ereg, allowNonDurable: true}\n")
	addr := freePort(t) // the registry keeps its address across restarts
	reg := startRegistry(t, dataDir, "--config", cfg, "--listen", addr)

	back := startLedgerBackend(t)
	sc := startSidecar(t, matrixSidecarConfig(reg, back.URL(), sidecarOpts{status: "registry",
		redisAddr: storeRedis.Addr(), redisPrefix: "restore", dataDir: t.TempDir()}, "unused"))
	const id = "1"
	path := accountsPath(id)
	ctx := context.Background()
	rc := goredis.NewClient(&goredis.Options{Addr: regRedis.Addr()})
	defer rc.Close()
	save := func() {
		t.Helper()
		if err := rc.Save(ctx).Err(); err != nil {
			t.Fatalf("SAVE: %v", err)
		}
	}
	release := func(owner string, l *client.Lease) {
		t.Helper()
		if _, err := registryClient(t, reg.url, owner).Release(ctx, l.Lease); err != nil {
			t.Fatalf("%s releasing: %v", owner, err)
		}
	}
	var grants []string
	take := func(owner, body string) *client.Lease {
		t.Helper()
		l := acquireAt(t, reg.url, owner, id, 30*time.Second, 5*time.Second)
		grants = append(grants, l.Grant)
		wantAccepted(t, owner+"'s write", send(sc.url, of(owner, l, path, "1", body)))
		return l
	}

	a := take("worker-a", "A")
	save()
	old := regRedis.Snapshot() // knows fence a only
	release("worker-a", a)
	b := take("worker-b", "B")
	save()

	// 1. Restored under the running registry process.
	regRedis.RestoreSnapshot(old)
	c := take("worker-c", "C")
	if c.FenceToken <= b.FenceToken || c.IssuerEpoch <= b.IssuerEpoch {
		t.Fatalf("first grant after the restore: fence %d epoch %d; before it fence %d epoch %d were issued",
			c.FenceToken, c.IssuerEpoch, b.FenceToken, b.IssuerEpoch)
	}
	r := send(sc.url, of("worker-b", b, path, "2", "B late"))
	wantProblem(t, "the previous owner's write after the restore", r, fencegate.CodeStaleOwner)
	save()
	older := regRedis.Snapshot() // knows fences a, b, c and the bumped epoch
	release("worker-c", c)
	d := take("worker-d", "D")
	save()

	// 2. Restored together with a registry process killed and restarted
	// on its data dir: its redis-state.json, saved within a second of a
	// change, is what the new process compares the restored state with.
	waitStateSaved(t, rc, filepath.Join(dataDir, "redis-state.json"), "{e2ereg}:meta")
	reg.kill()
	regRedis.RestoreSnapshot(older)
	reg = startRegistry(t, dataDir, "--config", cfg, "--listen", addr)
	e := take("worker-e", "E")
	if e.FenceToken <= d.FenceToken {
		t.Fatalf("first grant after the second restore: fence %d; fence %d was issued before it", e.FenceToken, d.FenceToken)
	}
	back.wantBodies(t, path, "A", "B", "C", "D", "E")
	checkFinalData(t, sc.admin, back, id, grants...)
}

// waitStateSaved waits (10s at most) until the registry process's state
// file records the revision the registry's meta key holds now.
func waitStateSaved(t *testing.T, rc *goredis.Client, stateFile, metaKey string) {
	t.Helper()
	var meta, state struct {
		Revision uint64 `json:"revision"`
	}
	raw, err := rc.Get(context.Background(), metaKey).Bytes()
	if err != nil || json.Unmarshal(raw, &meta) != nil {
		t.Fatalf("reading the registry's meta: %v %q", err, raw)
	}
	clk := clock.Real()
	for deadline := clk.Now().Add(10 * time.Second); ; {
		if b, err := os.ReadFile(stateFile); err == nil && json.Unmarshal(b, &state) == nil && state.Revision >= meta.Revision {
			return
		}
		if clk.Now().After(deadline) {
			t.Fatalf("the registry's state file never reached revision %d (has %d)", meta.Revision, state.Revision)
		}
		clock.Sleep(clk, 50*time.Millisecond, nil)
	}
}
