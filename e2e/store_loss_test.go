package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
)

// Issue 19, stories 2 and 3 and the store-loss bullets of 5: a fenced
// store that lost data, met by the sidecar that used it and by a new pod
// on an empty data directory, with the real binaries (a registry and
// sidecars as processes) and a redis-server started by the test on a free
// port (RDB persistence, killed by PID, an older dump.rdb put back).

// lossRedis is a redis-server whose dump.rdb the test saves and restores.
type lossRedis struct {
	srv *redistest.Server
	c   *goredis.Client
}

func startLossRedis(t *testing.T) *lossRedis {
	t.Helper()
	srv := redistest.Start(t, "--appendonly", "no", "--save", "")
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return &lossRedis{srv: srv, c: c}
}

// save writes the data set to dump.rdb now and returns a copy of it.
func (r *lossRedis) save(t *testing.T) string {
	t.Helper()
	if err := r.c.Save(context.Background()).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	snap := filepath.Join(t.TempDir(), "dump.rdb")
	b, err := os.ReadFile(filepath.Join(r.srv.Dir(), "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, snap, string(b))
	return snap
}

// restore kills the server (SIGKILL, by PID) and starts it again on the
// older dump.rdb snap: it comes back with the data set of then.
func (r *lossRedis) restore(t *testing.T, snap string) {
	t.Helper()
	r.srv.Kill()
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(r.srv.Dir(), "dump.rdb"), string(b))
	r.srv.Restart()
}

// empty kills the server and starts it with no data at all.
func (r *lossRedis) empty(t *testing.T) {
	t.Helper()
	r.srv.Kill()
	if err := os.Remove(filepath.Join(r.srv.Dir(), "dump.rdb")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	r.srv.Restart()
}

// lossSidecarConfig is a sidecar protecting PUT /v1/accounts/{id}, in
// route mode mode and status mode status, on the store storeCfg.
func lossSidecarConfig(reg *registry, backend, mode, status, storeCfg, dataDir string) string {
	return `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "` + backend + `", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", mode: ` + mode + `, status: {mode: ` + status + `, maxAge: 30s}}
identity: {mode: insecure-header}
trust: {bundle: "` + filepath.Join(reg.dataDir, "keys", "jwks.json") + `"}
registry: {url: "` + reg.url + `"}
store: ` + storeCfg + `
dataDir: "` + dataDir + `"
log: {level: warn}
`
}

// redisStore is the store configuration of a Redis shared by the sidecars
// of service. The server keeps RDB snapshots only (the stories restore an
// older dump.rdb), so the config allows it as an operator would have to.
func redisStore(r *lossRedis, service string) string {
	return `{backend: redis, service: ` + service + `, claimIdentity: sidecar, redis: {addr: "` + r.srv.Addr() + `", prefix: "` + service + `", allowNonDurable: true}}`
}

// release ends owner's lease l.
func release(t *testing.T, regURL, owner string, l *client.Lease) {
	t.Helper()
	if _, err := registryClient(t, regURL, owner).Release(context.Background(), l.Lease); err != nil {
		t.Fatalf("%s releasing: %v", owner, err)
	}
}

// refused fails unless r was refused (a problem, nothing accepted).
func refused(t *testing.T, what string, r reply) {
	t.Helper()
	if r.Err != nil || r.Problem == nil || r.Status < 400 || r.Header.Get(fencegate.HeaderReceipt) != "" {
		t.Fatalf("%s: %s, want a refusal", what, r)
	}
}

// TestRestoredRedisWhileInFlight (story 2): segment A2 is in flight when
// the fenced store's Redis is restored from an RDB saved after A1: the
// marker is gone and A2's Commit fails. The retry of A2 must NOT be
// accepted again (it would be applied twice: A1, A2, A2): it is refused
// (FENCE_REGRESSION, the resource paused STORE_LOSS), A2 is UNKNOWN for
// the operator, and the backend holds A1, A2 once.
func TestRestoredRedisWhileInFlight(t *testing.T) {
	reg := startRegistry(t, "")
	redis := startLossRedis(t)
	back := startLedgerBackend(t)
	cfg := strings.Replace(lossSidecarConfig(reg, back.URL(), "enforce", "registry", redisStore(redis, "e2e-story2"), t.TempDir()), "timeout: 2s", "timeout: 20s", 1)
	sc := startSidecar(t, cfg)
	const id = "story2"
	path := accountsPath(id)
	a := acquireAt(t, reg.url, "worker-a", id, time.Minute, 0)
	wantAccepted(t, "A1", send(sc.url, of("worker-a", a, path, "1", "A1")))
	snap := redis.save(t)

	arrived, restored := make(chan struct{}), make(chan struct{})
	unblock := onceCloser(t, restored)
	back.setGate(func(w applied) bool {
		if w.Segment == "2" {
			close(arrived)
			<-restored
		}
		return true
	})
	first := make(chan reply, 1)
	go func() { first <- send(sc.url, of("worker-a", a, path, "2", "A2")) }()
	select {
	case <-arrived:
	case r := <-first:
		t.Fatalf("A2 answered before it reached the backend: %s", r)
	case <-time.After(15 * time.Second):
		t.Fatal("A2 never reached the backend")
	}
	redis.restore(t, snap) // while A2 is in flight
	back.setGate(nil)
	unblock()
	r := <-first
	t.Logf("A2's first answer: %s", r)

	retry := send(sc.url, of("worker-a", a, path, "2", "A2"))
	refused(t, "the retry of A2 after the restore", retry)
	back.wantBodies(t, path, "A1", "A2")
	if retry.code() != fencegate.CodeFenceRegression {
		t.Fatalf("the retry of A2: %s, want FENCE_REGRESSION", retry)
	}
	op := waitUnknown(t, sc.admin, "account/"+id, 10*time.Second)
	if op != fencegate.OperationID(mustClaims(t, a.Grant).OperationRoot, 2) {
		t.Fatalf("unknown %s, want A2", op)
	}
	if rec, _ := storeRecord(t, sc.admin, "account/"+id); rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
		t.Fatalf("record %+v, want paused STORE_LOSS", rec)
	}
}

// TestForgottenUnknownNewPodRegistryMode (story 3, registry mode): A's
// write times out (MUTATION_UNKNOWN: it may still land) and the Redis
// store forgets it (restored from an older RDB). A NEW sidecar on an empty
// data directory must not accept B (the next owner) while A may land: B is
// refused and A's mutation is UNKNOWN there; when A lands the backend
// holds A1 only (before: B1, A1).
func TestForgottenUnknownNewPodRegistryMode(t *testing.T) {
	reg := startRegistry(t, "")
	redis := startLossRedis(t)
	back := startLedgerBackend(t)
	storeCfg := redisStore(redis, "e2e-story3r")
	sc1 := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "registry", storeCfg, t.TempDir()))
	snap := redis.save(t)
	const id = "story3r"
	path := accountsPath(id)

	land := make(chan struct{})
	letLand := onceCloser(t, land)
	back.setGate(func(w applied) bool {
		if w.Body == "A1" {
			<-land // A's write is held inside the backend past the sidecar's timeout
		}
		return true
	})
	a := acquireAt(t, reg.url, "worker-a", id, 2*time.Second, 0)
	wantStatusProblem(t, "A1 (held by the backend)", send(sc1.url, of("worker-a", a, path, "1", "A1")), http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	waitUnknown(t, sc1.admin, "account/"+id, 10*time.Second)
	sc1.kill()
	redis.restore(t, snap) // the store forgets A's UNKNOWN

	sc2 := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "registry", storeCfg, t.TempDir())) // a new pod
	b := acquireAt(t, reg.url, "worker-b", id, time.Minute, 10*time.Second)
	refused(t, "B while A may still land", send(sc2.url, of("worker-b", b, path, "1", "B1")))
	op := waitUnknown(t, sc2.admin, "account/"+id, 10*time.Second)
	if op != fencegate.OperationID(mustClaims(t, a.Grant).OperationRoot, 1) {
		t.Fatalf("unknown %s, want A's", op)
	}
	letLand()
	if !eventually(10*time.Second, func() bool { return len(back.bodies(path)) > 0 }) {
		t.Fatal("A never landed")
	}
	back.wantBodies(t, path, "A1")
}

// TestForgottenFenceNewPodProofMode (story 3, proof mode): A wrote A1 and
// released; B wrote B1; the Redis store is restored from an RDB saved
// between the two. A NEW sidecar on an empty data directory must refuse A
// (whose proof is still within maxAge) once more: its fence 1 is below
// B's, which the store forgot (before: A1, B1, A-stale).
func TestForgottenFenceNewPodProofMode(t *testing.T) {
	reg := startRegistry(t, "")
	redis := startLossRedis(t)
	back := startLedgerBackend(t)
	storeCfg := redisStore(redis, "e2e-story3p")
	sc1 := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "proof", storeCfg, t.TempDir()))
	const id = "story3p"
	path := accountsPath(id)
	a := acquireAt(t, reg.url, "worker-a", id, time.Minute, 0)
	wantAccepted(t, "A1", send(sc1.url, of("worker-a", a, path, "1", "A1")))
	snap := redis.save(t)
	release(t, reg.url, "worker-a", a)
	b := acquireAt(t, reg.url, "worker-b", id, time.Minute, 0)
	wantAccepted(t, "B1", send(sc1.url, of("worker-b", b, path, "1", "B1")))
	sc1.kill()
	redis.restore(t, snap) // the store forgets B's fence

	sc2 := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "proof", storeCfg, t.TempDir())) // a new pod
	refused(t, "released A's fence 1 after B's", send(sc2.url, of("worker-a", a, path, "2", "A-stale")))
	back.wantBodies(t, path, "A1", "B1")
}

// TestEmptiedRedisNewPodKeepsEnforcement: the enforcement ledger went with
// the Redis data; a new pod must not start the enforced route in shadow.
// In enforce it starts, refusing writes (the store lost data) until the
// loss is acknowledged at the registry.
func TestEmptiedRedisNewPodKeepsEnforcement(t *testing.T) {
	reg := startRegistry(t, "")
	redis := startLossRedis(t)
	back := startLedgerBackend(t)
	storeCfg := redisStore(redis, "e2e-ledger-redis")
	sc1 := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "registry", storeCfg, t.TempDir()))
	sc1.kill()
	redis.empty(t)

	mustNotStart(t, "a new pod with the enforced route in shadow", lossSidecarConfig(reg, back.URL(), "shadow", "registry", storeCfg, t.TempDir()), "PUT /v1/accounts/{id}")

	sc2 := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "registry", storeCfg, t.TempDir()))
	const id = "ledger"
	b := acquireAt(t, reg.url, "worker-b", id, time.Minute, 0)
	wantProblem(t, "a write on the emptied store", send(sc2.url, of("worker-b", b, accountsPath(id), "1", "B1")), fencegate.CodeStoreUnavailable)
	var st struct {
		Lost        bool   `json:"lost"`
		Presented   string `json:"presented"`
		Acknowledge string `json:"acknowledge"`
	}
	adminGet(t, sc2.admin, "/v1/store", &st)
	if !st.Lost || st.Presented == "" || !strings.Contains(st.Acknowledge, "fencegate store acknowledge-loss") {
		t.Fatalf("store status %+v", st)
	}
	// The one command, at the registry, with the store and generation from
	// the sidecar: writes flow again.
	ack := run(t, "store", "acknowledge-loss", "--sidecar", sc2.admin, "--registry", reg.url)
	if ack.code != 0 {
		t.Fatalf("acknowledge-loss: exit %d\n%s%s", ack.code, ack.stdout, ack.stderr)
	}
	if !eventually(30*time.Second, func() bool {
		return send(sc2.url, of("worker-b", b, accountsPath(id), "1", "B1")).Status == http.StatusOK
	}) {
		t.Fatal("writes refused after the acknowledgement")
	}
	back.wantBodies(t, accountsPath(id), "B1")
}

// TestDeletedBoltFileKeepsEnforcement: the bolt store file deleted, the
// enforced route must not restart in off.
func TestDeletedBoltFileKeepsEnforcement(t *testing.T) {
	reg := startRegistry(t, "")
	back := startLedgerBackend(t)
	dataDir := t.TempDir()
	storeCfg := `{backend: bolt, service: e2e-ledger-bolt, claimIdentity: sidecar, claimTTL: 3s}`
	sc := startSidecar(t, lossSidecarConfig(reg, back.URL(), "enforce", "registry", storeCfg, dataDir))
	if err := sc.stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dataDir, "store.db")); err != nil {
		t.Fatal(err)
	}
	mustNotStart(t, "the enforced route in off on a new bolt file", lossSidecarConfig(reg, back.URL(), "off", "registry", storeCfg, dataDir), "PUT /v1/accounts/{id}")
}

// onceCloser returns a func closing c once, also called when the test
// ends (before the backend closes: a write it holds must finish).
func onceCloser(t *testing.T, c chan struct{}) func() {
	var once sync.Once
	f := func() { once.Do(func() { close(c) }) }
	t.Cleanup(f)
	return f
}

func mustClaims(t *testing.T, grant string) *fencegate.Grant {
	t.Helper()
	c, err := client.GrantClaims(grant)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustNotStart runs a sidecar on cfg and fails the test if it starts
// serving instead of exiting with an error naming want.
func mustNotStart(t *testing.T, what, cfg, want string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	writeFile(t, path, strings.NewReplacer("LISTEN", "127.0.0.1:0", "ADMIN", "127.0.0.1:0").Replace(cfg))
	p := start(t, "proxy", "proxy", "--config", path)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-p.done:
			if out := p.Stdout() + p.Stderr(); p.err == nil || !strings.Contains(out, want) {
				t.Fatalf("%s: exited (%v) without naming %q:\n%s", what, p.err, want, out)
			}
			return
		case <-deadline:
			t.Fatalf("%s: neither started nor exited", what)
		case <-time.After(20 * time.Millisecond):
		}
		if listeningRE.MatchString(p.Output()) {
			t.Fatalf("%s: the sidecar started:\n%s", what, p.Output())
		}
	}
}
