package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/redistest"
)

// replicaSet is a registry, one redis-server and n sidecar processes that
// share it as their fenced store, in front of one recording backend.
type replicaSet struct {
	reg      *registry
	back     *legacy
	sidecars []*sidecar
}

func startReplicas(t *testing.T, n int, statusMode string) *replicaSet {
	t.Helper()
	redis := redistest.Start(t)
	return startReplicasOn(t, n, statusMode, `{backend: redis, service: e2e-replicas, claimIdentity: sidecar, redis: {addr: "`+redis.Addr()+`", prefix: "replicas"}}`)
}

// startReplicasOn is startReplicas on the store section given (YAML).
func startReplicasOn(t *testing.T, n int, statusMode, storeYAML string) *replicaSet {
	t.Helper()
	rs := &replicaSet{reg: startRegistry(t, ""), back: &legacy{stop: make(chan struct{})}}
	srv := httptest.NewServer(rs.back)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(rs.back.stop) })
	for i := range n {
		rs.sidecars = append(rs.sidecars, startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+srv.URL+`", timeout: 500ms}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", status: {mode: `+statusMode+`, maxAge: 5s}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(rs.reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+rs.reg.url+`"}
store: `+storeYAML+`
dataDir: "`+t.TempDir()+`"
log: {level: warn}
`))
		_ = i
	}
	return rs
}

func (rs *replicaSet) acquire(t *testing.T, owner, id string, ttl, wait time.Duration) *client.Lease {
	t.Helper()
	c, _ := client.New(rs.reg.url, client.WithIdentityHeader("X-Fencegate-Identity", owner))
	l, err := c.Acquire(context.Background(), client.AcquireRequest{Resource: "account/" + id, RequestID: owner + "-" + id, TTL: ttl, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// put sends a protected write through sidecar i.
func (rs *replicaSet) put(t *testing.T, i int, owner string, l *client.Lease, id, seg, body string) (int, fencegate.Code, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, rs.sidecars[i].url+"/v1/accounts/"+id, strings.NewReader(body))
	req.Header.Set("X-Fencegate-Identity", owner)
	req.Header.Set(fencegate.HeaderGrant, l.Grant)
	req.Header.Set(fencegate.HeaderStatus, l.Status)
	req.Header.Set(fencegate.HeaderSegment, seg)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		p, err := fencegate.ReadProblem(resp)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, p.Code, resp.Header
	}
	return resp.StatusCode, "", resp.Header
}

// TestReplicasRetryIsReplayed (R1): the same grant, segment and payload
// sent through sidecar 1 and retried through sidecar 2 is applied once; the
// retry is the replay of the first receipt.
func TestReplicasRetryIsReplayed(t *testing.T) {
	rs := startReplicas(t, 2, "registry")
	a := rs.acquire(t, "worker-a", "1", 10*time.Second, 0)
	st, code, h1 := rs.put(t, 0, "worker-a", a, "1", "1", "A1")
	if st != 200 {
		t.Fatalf("first write: %d %s", st, code)
	}
	st, code, h2 := rs.put(t, 1, "worker-a", a, "1", "1", "A1")
	if st != 200 || h2.Get(fencegate.HeaderReplayed) != "true" || h2.Get(fencegate.HeaderReceipt) != h1.Get(fencegate.HeaderReceipt) {
		t.Fatalf("retry through the other replica: %d %s replayed=%q receipt %q vs %q", st, code, h2.Get(fencegate.HeaderReplayed), h2.Get(fencegate.HeaderReceipt), h1.Get(fencegate.HeaderReceipt))
	}
	if v, writes := rs.back.get(); v != "A1" || writes != 1 {
		t.Fatalf("backend: %q after %d writes, want A1 once", v, writes)
	}
}

// TestReplicasStaleOwnerAcrossReplicas (R2, proof mode): A writes through
// sidecar 1; A's lease ends early (released) and B takes over, writing
// through sidecar 2; A's late segment 2 through sidecar 1, with its HELD
// proof still fresh, is STALE_OWNER: sidecar 1 sees the fence B's write
// raised through sidecar 2.
func TestReplicasStaleOwnerAcrossReplicas(t *testing.T) {
	rs := startReplicas(t, 2, "proof")
	a := rs.acquire(t, "worker-a", "2", 10*time.Second, 0)
	if st, code, _ := rs.put(t, 0, "worker-a", a, "2", "1", "A1"); st != 200 {
		t.Fatalf("A's segment 1: %d %s", st, code)
	}
	ca, _ := client.New(rs.reg.url, client.WithIdentityHeader("X-Fencegate-Identity", "worker-a"))
	if _, err := ca.Release(context.Background(), a.Lease); err != nil {
		t.Fatal(err)
	}
	b := rs.acquire(t, "worker-b", "2", 10*time.Second, 5*time.Second)
	if st, code, _ := rs.put(t, 1, "worker-b", b, "2", "1", "B1"); st != 200 {
		t.Fatalf("B's write: %d %s", st, code)
	}
	if st, code, _ := rs.put(t, 0, "worker-a", a, "2", "2", "A2"); st != 409 || code != fencegate.CodeStaleOwner {
		t.Fatalf("A's late segment 2 through sidecar 1: %d %s, want 409 STALE_OWNER", st, code)
	}
	if v, _ := rs.back.get(); v != "B1" {
		t.Fatalf("backend holds %q, want B1", v)
	}
}

// TestReplicasUnknownBlocksEveryReplica (R3): A's write through sidecar 1
// times out (MUTATION_UNKNOWN); B's write through sidecar 2 is refused
// until the unknown is reconciled, so A's delayed write can never land
// after an accepted B.
func TestReplicasUnknownBlocksEveryReplica(t *testing.T) {
	rs := startReplicas(t, 2, "registry")
	a := rs.acquire(t, "worker-a", "3", 300*time.Millisecond, 0)
	rs.back.mu.Lock()
	rs.back.hang = true
	rs.back.mu.Unlock()
	if st, code, _ := rs.put(t, 0, "worker-a", a, "3", "1", "A1"); st != 504 || code != fencegate.CodeMutationUnknown {
		t.Fatalf("A's write into a hanging backend: %d %s", st, code)
	}
	rs.back.mu.Lock()
	rs.back.hang = false
	rs.back.mu.Unlock()
	b := rs.acquire(t, "worker-b", "3", 10*time.Second, 5*time.Second)
	if st, code, _ := rs.put(t, 1, "worker-b", b, "3", "1", "B1"); st != 409 || code != fencegate.CodeMutationUnknown {
		t.Fatalf("B's write through sidecar 2 while A's outcome is unknown: %d %s, want 409 MUTATION_UNKNOWN", st, code)
	}
}

// TestReplicasConcurrentOwners: three sidecars share one Redis store.
// Owners take the resource over one after another; each writes segments
// 1..3, each through a randomly chosen sidecar, while the previous owner
// keeps sending late segments through the others. The backend's data must
// be exactly what the sidecars accepted, in (fence, segment) order: no stale
// write and no write applied twice.
func TestReplicasConcurrentOwners(t *testing.T) {
	reg := startRegistry(t, "")
	back := startLedgerBackend(t)
	redis := redistest.Start(t)
	var scs []*sidecar
	for range 3 {
		scs = append(scs, startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+back.URL()+`", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", status: {mode: proof, maxAge: 5s}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: {backend: redis, service: e2e-owners, claimIdentity: sidecar, redis: {addr: "`+redis.Addr()+`", prefix: "owners"}}
dataDir: "`+t.TempDir()+`"
log: {level: warn}
`))
	}
	ctx := context.Background()
	var mu sync.Mutex
	accepted := map[string]bool{}
	send := func(owner string, l *client.Lease, seg int) {
		body := fmt.Sprintf("%020d:%d", l.FenceToken, seg)
		req, _ := http.NewRequest(http.MethodPut, scs[rand.IntN(len(scs))].url+"/v1/accounts/shared", strings.NewReader(body))
		req.Header.Set("X-Fencegate-Identity", owner)
		req.Header.Set(fencegate.HeaderGrant, l.Grant)
		req.Header.Set(fencegate.HeaderStatus, l.Status)
		req.Header.Set(fencegate.HeaderSegment, fmt.Sprint(seg))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			mu.Lock()
			accepted[body] = true
			mu.Unlock()
		}
	}
	var prev *client.Lease
	prevOwner := ""
	var grants []string
	for round := range 8 {
		owner := fmt.Sprintf("worker-%d", round)
		c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", owner))
		if prev != nil {
			pc, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", prevOwner))
			if _, err := pc.Release(ctx, prev.Lease); err != nil {
				t.Fatal(err)
			}
		}
		l, err := c.Acquire(ctx, client.AcquireRequest{Resource: "account/shared", RequestID: owner, TTL: 10 * time.Second, Wait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		grants = append(grants, l.Grant)
		var wg sync.WaitGroup
		if prev != nil { // the previous owner's late segments, with proofs still fresh
			for seg := 4; seg <= 6; seg++ {
				wg.Add(1)
				go func() { defer wg.Done(); send(prevOwner, prev, seg) }()
			}
		}
		for seg := 1; seg <= 3; seg++ {
			send(owner, l, seg) // in order: segments of one owner are sequential
		}
		wg.Wait()
		prev, prevOwner = l, owner
	}
	// The shared final-data check, through any replica's admin API (they
	// share the store): the backend holds exactly the receipts, in (fence,
	// segment) order, each once.
	receipts := checkFinalData(t, scs[0].admin, back, "shared", grants...)
	applied := back.bodies(accountsPath("shared"))
	if len(applied) != len(accepted) || len(receipts) != len(accepted) {
		t.Fatalf("backend applied %d writes, the sidecars answered %d as accepted, the store holds %d receipts", len(applied), len(accepted), len(receipts))
	}
	for i, w := range applied {
		if !accepted[w] {
			t.Errorf("applied %q was never answered as accepted", w)
		}
		if i > 0 && w <= applied[i-1] {
			t.Errorf("applied out of (fence, segment) order: %q after %q", w, applied[i-1])
		}
	}
	if len(applied) < 8*3 {
		t.Errorf("only %d writes applied; every owner's 3 segments should be", len(applied))
	}
}
