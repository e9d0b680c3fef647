package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// legacy is a last-writer-wins backend that can be told to hang.
type legacy struct {
	mu     sync.Mutex
	value  string
	writes int
	hang   bool
	stop   chan struct{}
}

func (l *legacy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	hang := l.hang
	if r.Method == http.MethodPut {
		l.writes++
		if !hang {
			l.value = string(body)
		}
	}
	l.mu.Unlock()
	if hang {
		select {
		case <-l.stop:
		case <-r.Context().Done():
		}
		return
	}
	io.WriteString(w, "ok "+string(body))
}

func (l *legacy) get() (string, int) { l.mu.Lock(); defer l.mu.Unlock(); return l.value, l.writes }

// TestSidecarBinary runs the registry and the sidecar as separate
// processes from a YAML config: the stale owner is refused, an unknown
// outcome blocks the resource until "fencegate reconcile", and the CLI
// lists receipts and unknown mutations.
func TestSidecarBinary(t *testing.T) {
	reg := startRegistry(t, "")
	back := &legacy{stop: make(chan struct{})}
	bsrv := httptest.NewServer(back)
	defer bsrv.Close()
	defer close(back.stop)
	sc := startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+bsrv.URL+`", timeout: 500ms, maxApplyDelay: 500ms}
routes:
  - {method: PUT, path: "/v1/invoice-batches/{id}", resource: "invoice-batch/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: {backend: bolt, service: e2e-sidecar, claimIdentity: sidecar}
dataDir: "`+t.TempDir()+`"
log: {level: warn}
`)
	ctx := context.Background()
	worker := func(name string) *client.Client {
		c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", name))
		return c
	}
	put := func(owner, grant, seg, body string) (int, *fencegate.Problem, http.Header) {
		req, _ := http.NewRequest(http.MethodPut, sc.url+"/v1/invoice-batches/7", strings.NewReader(body))
		req.Header.Set("X-Fencegate-Identity", owner)
		req.Header.Set("Fence-Grant", grant)
		req.Header.Set("Fence-Segment", seg)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 {
			d, _ := fencegate.ReadProblem(resp)
			return resp.StatusCode, d, resp.Header
		}
		return resp.StatusCode, nil, resp.Header
	}

	a, err := worker("worker-a").Acquire(ctx, client.AcquireRequest{Resource: "invoice-batch/7", RequestID: "a", TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := worker("worker-b").Acquire(ctx, client.AcquireRequest{Resource: "invoice-batch/7", RequestID: "b", TTL: 10 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if st, d, h := put("worker-b", b.Grant, "1", "B"); st != 200 || h.Get("Fence-Receipt") == "" {
		t.Fatalf("worker-b's write: %d %+v", st, d)
	}
	if st, d, _ := put("worker-a", a.Grant, "1", "A"); st != 409 || d.Code != "STALE_OWNER" {
		t.Fatalf("worker-a's stale write: %d %+v", st, d)
	}
	if v, _ := back.get(); v != "B" {
		t.Fatalf("backend holds %q", v)
	}

	// The backend hangs: the outcome is unknown and the resource blocks.
	back.mu.Lock()
	back.hang = true
	back.mu.Unlock()
	if st, d, _ := put("worker-b", b.Grant, "2", "B2"); st != 504 || d.Code != "MUTATION_UNKNOWN" {
		t.Fatalf("write into a hanging backend: %d %+v", st, d)
	}
	back.mu.Lock()
	back.hang = false
	back.mu.Unlock()
	r := run(t, "receipts", "--admin", sc.admin, "--unknown", "-o", "json")
	var unknown []struct {
		Resource, OperationID string
	}
	if err := json.Unmarshal([]byte(r.stdout), &unknown); err != nil || len(unknown) != 1 {
		t.Fatalf("receipts --unknown: %v %q %s", err, r.stdout, r.stderr)
	}
	// Not applied, once the mutation is quiet (the forward's deadline plus
	// backend.maxApplyDelay): the helper asks again while it is not.
	reconcile(t, sc.admin, "invoice-batch/7", unknown[0].OperationID, false)
	// Reconciled as not applied: segment 2 was never applied, so worker-b
	// sends it again.
	if st, d, _ := put("worker-b", b.Grant, "2", "B2"); st != 200 {
		t.Fatalf("after reconciliation: %d %+v", st, d)
	}
	if r := run(t, "receipts", "--admin", sc.admin, "--resource", "invoice-batch/7", "--record", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"lastSeq": 2`) {
		t.Fatalf("receipts --resource: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Resume of a resource that is not paused is a clear conflict.
	if r := run(t, "resume", "--admin", sc.admin, "--resource", "invoice-batch/7"); r.code == 0 || !strings.Contains(r.stderr, "CONFLICT") {
		t.Fatalf("resume of an unpaused resource: %d %s", r.code, r.stderr)
	}
	// The trust bundle reloads on demand; unchanged, it reports no change.
	if r := run(t, "trust", "reload", "--admin", sc.admin); r.code != 0 || !strings.Contains(r.stdout, `"changed": false`) {
		t.Fatalf("trust reload: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Metrics are served on the admin listener.
	mresp, err := http.Get(sc.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`fencegate_proxy_mutations_total{code="STALE_OWNER",decision="rejected"`, `fencegate_proxy_reconciled_total{how="operator",outcome="not_applied"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if err := sc.stop(); err != nil {
		t.Fatalf("sidecar did not stop cleanly: %v", err)
	}
}

// TestSidecarRefusesDowngrade: an enforced route cannot be put back to
// shadow on restart without --force-downgrade.
func TestSidecarRefusesDowngrade(t *testing.T) {
	reg := startRegistry(t, "")
	data := t.TempDir()
	cfg := func(mode string) string {
		return `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "http://127.0.0.1:9"}
routes:
  - {method: PUT, path: "/v1/x/{id}", resource: "x/{id}", mode: ` + mode + `}
identity: {mode: insecure-header}
trust: {bundle: "` + filepath.Join(reg.dataDir, "keys", "jwks.json") + `"}
registry: {url: "` + reg.url + `"}
store: {service: e2e-downgrade, claimIdentity: sidecar}
dataDir: "` + data + `"
`
	}
	sc := startSidecar(t, cfg("enforce"))
	sc.stop()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	writeFile(t, path, strings.NewReplacer("LISTEN", freePort(t), "ADMIN", freePort(t)).Replace(cfg("shadow")))
	r := run(t, "proxy", "--config", path)
	if r.code == 0 || !strings.Contains(r.stderr, "refusing to leave enforce mode") {
		t.Fatalf("downgrade accepted: %d %s", r.code, r.stderr)
	}
	sc2 := startSidecar(t, cfg("shadow"), "--force-downgrade", "PUT /v1/x/{id}")
	// The forced downgrade is a metric (FencegateForcedDowngrade), on this
	// start and on the next one without the flag.
	for i, sc := range []*sidecar{sc2, nil} {
		if sc == nil {
			sc = startSidecar(t, cfg("shadow"))
		}
		if got := scrapeLine(t, sc.admin+"/metrics", `fencegate_proxy_forced_downgrade{route="PUT /v1/x/{id}"}`); got != "1" {
			t.Errorf("start %d after the forced downgrade: fencegate_proxy_forced_downgrade = %q, want 1", i, got)
		}
		sc.stop()
	}
}

// TestSidecarRefusesARouteShadowingAnEnforcedOne is story 5's first case
// with the real binary: an off route for a literal path next to the
// enforced pattern it would take paths from refuses to start, naming both
// routes, with or without --force-downgrade.
func TestSidecarRefusesARouteShadowingAnEnforcedOne(t *testing.T) {
	reg := startRegistry(t, "")
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	writeFile(t, path, `
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
backend: {url: "http://127.0.0.1:9"}
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "item/{id}"}
  - {method: PUT, path: "/v1/items/42", resource: "item/42", mode: "off"}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: {service: e2e-shadowing, claimIdentity: sidecar}
dataDir: "`+t.TempDir()+`"
`)
	for _, args := range [][]string{{"proxy", "--config", path}, {"proxy", "--config", path, "--force-downgrade", "PUT /v1/items/{id}"}} {
		r := run(t, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "a route below enforce overlaps an enforced route") ||
			!strings.Contains(r.stderr, "PUT /v1/items/42 in off") || !strings.Contains(r.stderr, "PUT /v1/items/{id}") {
			t.Fatalf("%v: exit %d, stderr %s; want a refusal naming both routes", args, r.code, r.stderr)
		}
	}
}

// scrapeLine returns the value of the exposition line that starts with
// series, or "" when there is none.
func scrapeLine(t *testing.T, url, series string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}
