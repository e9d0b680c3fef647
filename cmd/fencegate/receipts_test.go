package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy/adminapi"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
)

// testSidecar is a real sidecar (proxy/server, memory store) in front of
// a real backend, checking grants at a real registry.
type testSidecar struct {
	reg          string
	addr, admin  string
	block        chan struct{} // closed: the backend answers writes of /v1/items/slow
	releaseBlock func()
}

// startSidecar starts the registry, the backend and the sidecar until the
// test ends. The backend answers 201 "stored", except for
// /v1/items/slow, which it holds until the test ends (the forward's 300ms
// timeout leaves its outcome unknown).
func startSidecar(t *testing.T) *testSidecar {
	t.Helper()
	s := &testSidecar{block: make(chan struct{})}
	var once sync.Once
	s.releaseBlock = func() { once.Do(func() { close(s.block) }) }
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/slow") {
			<-s.block
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("stored"))
	}))
	t.Cleanup(back.Close)
	t.Cleanup(s.releaseBlock) // before back.Close (cleanups run last first)
	reg, bundle := registrytest.Serve(t)
	s.reg = reg.URL
	srv := runSidecarServer(t, `{url: "`+back.URL+`", timeout: 300ms, maxApplyDelay: 1h}`, reg.URL, bundle)
	s.addr, s.admin = srv.Addr(), "http://"+srv.AdminAddr()
	return s
}

// put writes segment seq of h's operation to /v1/items/{id} through the
// sidecar and returns the answer's status and Fence-Receipt.
func (s *testSidecar) put(t *testing.T, h *client.Holder, id string, seq uint64) (int, string) {
	t.Helper()
	return s.putBody(t, h, id, seq, "x")
}

// putBody is put with body.
func (s *testSidecar) putBody(t *testing.T, h *client.Holder, id string, seq uint64, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(client.ContextWithSegment(context.Background(), seq), http.MethodPut,
		"http://"+s.addr+"/v1/items/"+id, strings.NewReader(body))
	req.Header.Set(identity.DefaultHeader, h.Lease().Owner)
	resp, err := h.Transport().Client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(fencegate.HeaderReceipt)
}

// TestReceiptsCommands: against a real sidecar, receipts --resource lists
// every receipt of the resource (golden table; -o json the store's
// documents; --limit the first N), receipts get finds one by the
// Fence-Receipt id the worker got back, and the empty listings say so.
func TestReceiptsCommands(t *testing.T) {
	s := startSidecar(t)
	h := holdFor(t, s.reg, "worker-a", "item/1")
	var ids []string
	for seq := uint64(1); seq <= 3; seq++ {
		code, rcpt := s.put(t, h, "1", seq)
		if code != http.StatusCreated || !strings.HasPrefix(rcpt, "rcpt-") {
			t.Fatalf("write %d: %d %s", seq, code, rcpt)
		}
		ids = append(ids, rcpt)
	}
	admin := []string{"--admin", s.admin}
	r := wantExit(t, "receipts --resource", runCLI(t, append([]string{"receipts", "--resource", "item/1"}, admin...)...), exitOK)
	checkGolden(t, "receipts-resource", normalize(r.stdout, h.OperationRoot()))
	for _, id := range ids {
		if !strings.Contains(r.stdout, id) {
			t.Errorf("receipts --resource lacks %s:\n%s", id, r.stdout)
		}
	}

	r = wantExit(t, "receipts -o json", runCLI(t, append([]string{"receipts", "--resource", "item/1", "-o", "json"}, admin...)...), exitOK)
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 3 {
		t.Fatalf("receipts -o json: %v\n%s", err, r.stdout)
	}
	for i, m := range list {
		if m["id"] != ids[i] || m["backendStatus"] != float64(201) || m["owner"] != "worker-a" || m["operationId"] == nil || m["acceptedAt"] == nil {
			t.Errorf("receipt %d in JSON: %v", i, m)
		}
	}
	r = wantExit(t, "receipts --limit 2", runCLI(t, append([]string{"receipts", "--resource", "item/1", "--limit", "2", "-o", "json"}, admin...)...), exitOK)
	var two []store.Receipt
	if err := json.Unmarshal([]byte(r.stdout), &two); err != nil || len(two) != 2 || two[1].ID != ids[1] {
		t.Errorf("receipts --limit 2: %+v %v", two, err)
	}
	for _, args := range [][]string{{"--page-size", "1"}, {"--page-size", "2"}, {"--page-size", "2", "--limit", "3"}} {
		r := wantExit(t, "receipts --page-size", runCLI(t, append(append([]string{"receipts", "--resource", "item/1", "-o", "json"}, admin...), args...)...), exitOK)
		var all []store.Receipt
		if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 3 || all[0].ID != ids[0] || all[2].ID != ids[2] {
			t.Errorf("receipts %v: %d receipts, %v", args, len(all), err)
		}
	}
	r = wantExit(t, "receipts --limit 2 --page-size 1", runCLI(t, append([]string{"receipts", "--resource", "item/1", "--limit", "2", "--page-size", "1", "-o", "json"}, admin...)...), exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &two); err != nil || len(two) != 2 || two[1].ID != ids[1] {
		t.Errorf("receipts --limit 2 --page-size 1: %+v %v", two, err)
	}
	r = wantExit(t, "receipts --op", runCLI(t, append([]string{"receipts", "--resource", "item/1", "--op", h.OperationRoot() + "/2", "-o", "json"}, admin...)...), exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &two); err != nil || len(two) != 1 || two[0].ID != ids[1] {
		t.Errorf("receipts --op: %+v %v", two, err)
	}

	r = wantExit(t, "receipts get", runCLI(t, append([]string{"receipts", "get", ids[1], "--resource", "item/1"}, admin...)...), exitOK)
	checkGolden(t, "receipts-get", normalize(r.stdout, h.OperationRoot(), h.LeaseID()))
	r = wantExit(t, "receipts get -o json", runCLI(t, append([]string{"receipts", "get", ids[2], "--resource", "item/1", "-o", "json"}, admin...)...), exitOK)
	var one store.Receipt
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || one.ID != ids[2] || one.Seq != 3 || string(one.Response.Body) != "stored" {
		t.Errorf("receipts get -o json: %+v %v", one, err)
	}

	r = wantExit(t, "receipts of another resource", runCLI(t, append([]string{"receipts", "--resource", "item/2"}, admin...)...), exitOK)
	if !strings.HasSuffix(r.stdout, "\nno receipts of item/2\n") {
		t.Errorf("no receipts:\n%s", r.stdout)
	}
	r = wantExit(t, "receipts of another resource, JSON", runCLI(t, append([]string{"receipts", "--resource", "item/2", "-o", "json"}, admin...)...), exitOK)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("no receipts in JSON: %q", r.stdout)
	}
	// Segment 1 sent again with another body: refused and quarantined.
	if code, _ := s.putBody(t, h, "1", 1, "other"); code != http.StatusConflict {
		t.Errorf("segment 1 again with another body: %d, want 409", code)
	}
	r = wantExit(t, "receipts --quarantine", runCLI(t, append([]string{"receipts", "--quarantine", "--resource", "item/1"}, admin...)...), exitOK)
	checkGolden(t, "receipts-quarantine", normalize(r.stdout, h.OperationRoot()))
	if !strings.Contains(r.stdout, ids[0]) {
		t.Errorf("the quarantine entry does not name the receipt it conflicts with, %s:\n%s", ids[0], r.stdout)
	}
	r = wantExit(t, "receipts --quarantine of another resource", runCLI(t, append([]string{"receipts", "--quarantine", "--resource", "item/2"}, admin...)...), exitOK)
	if !strings.HasSuffix(r.stdout, "\nno quarantined attempts\n") {
		t.Errorf("receipts --quarantine of another resource:\n%s", r.stdout)
	}
	for _, c := range []struct{ flag, none string }{
		{"--unknown", "no mutations of unknown outcome"}, {"--paused", "no paused resources"},
	} {
		r := wantExit(t, "receipts "+c.flag, runCLI(t, append([]string{"receipts", c.flag}, admin...)...), exitOK)
		if !strings.HasSuffix(r.stdout, "\n"+c.none+"\n") {
			t.Errorf("receipts %s:\n%s", c.flag, r.stdout)
		}
	}
}

// TestReceiptsExitCodes: a receipt not there is exit 6, a malformed id
// or flags that do not go together exit 2, a sidecar not there exit 4
// saying nothing was sent and naming --admin.
func TestReceiptsExitCodes(t *testing.T) {
	s := startSidecar(t)
	admin := []string{"--admin", s.admin}
	r := wantExit(t, "a receipt not there", runCLI(t, append([]string{"receipts", "get", "rcpt-" + strings.Repeat("0", 32), "--resource", "item/1"}, admin...)...), exitNotFound)
	if !strings.Contains(r.stderr, "NOT_FOUND") || !strings.Contains(r.stderr, "the sidecar at "+s.admin) {
		t.Errorf("a receipt not there:\n%s", r.stderr)
	}
	wantExit(t, "a malformed id", runCLI(t, append([]string{"receipts", "get", "nope", "--resource", "item/1"}, admin...)...), exitUsage)
	wantExit(t, "get without --resource", runCLI(t, append([]string{"receipts", "get", "rcpt-x"}, admin...)...), exitUsage)
	wantExit(t, "nothing to list", runCLI(t, append([]string{"receipts"}, admin...)...), exitUsage)
	wantExit(t, "two listings", runCLI(t, append([]string{"receipts", "--unknown", "--paused"}, admin...)...), exitUsage)
	wantExit(t, "--limit with --unknown", runCLI(t, append([]string{"receipts", "--unknown", "--limit", "3"}, admin...)...), exitUsage)
	wantExit(t, "--record without --resource", runCLI(t, append([]string{"receipts", "--record"}, admin...)...), exitUsage)
	wantExit(t, "--op without --resource", runCLI(t, append([]string{"receipts", "--op", "r/1"}, admin...)...), exitUsage)
	for _, args := range [][]string{{"receipts", "--resource", "item/1"}, {"receipts", "get", "rcpt-x", "--resource", "item/1"}, {"receipts", "--paused"}} {
		r := wantExit(t, strings.Join(args, " ")+" unreachable", runCLI(t, append(args, "--admin", "http://127.0.0.1:1")...), exitUnreachable)
		if !strings.Contains(r.stderr, "nothing was sent") || !strings.Contains(r.stderr, "--admin") {
			t.Errorf("%v unreachable:\n%s", args, r.stderr)
		}
	}
}

// TestUnknownPausedReconcile: a write whose forward times out is listed
// by receipts --unknown (golden table), reconcile --applied settles it
// (golden table; -o json lowerCamel), after which it is gone from the
// listing and its receipt is found; an operator's pause is listed by
// receipts --paused with its detail.
func TestUnknownPausedReconcile(t *testing.T) {
	s := startSidecar(t)
	h := holdFor(t, s.reg, "worker-a", "item/slow")
	if code, _ := s.put(t, h, "slow", 1); code == http.StatusCreated {
		t.Fatalf("the slow write was answered %d", code)
	}
	admin := []string{"--admin", s.admin}
	r := wantExit(t, "receipts --unknown", runCLI(t, append([]string{"receipts", "--unknown"}, admin...)...), exitOK)
	checkGolden(t, "receipts-unknown", normalize(r.stdout, h.OperationRoot(), h.LeaseID()))
	op := h.OperationRoot() + "/1"
	if !strings.Contains(r.stdout, op) {
		t.Fatalf("receipts --unknown lacks %s:\n%s", op, r.stdout)
	}
	r = wantExit(t, "reconcile --not-applied before the quiet time", runCLI(t, append([]string{"reconcile", "--resource", "item/slow", "--op", op, "--not-applied", "--reason", "absent"}, admin...)...), exitFailure)
	for _, w := range []string{"NOT settled (MAY_STILL_APPLY)", "may still take effect at the backend until", "Look at the backend again after"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("reconcile --not-applied before the quiet time lacks %q:\n%s", w, r.stderr)
		}
	}
	s.releaseBlock()

	r = wantExit(t, "reconcile --applied", runCLI(t, append([]string{"reconcile", "--resource", "item/slow", "--op", op, "--applied", "--status", "201", "--body", "stored", "--reason", "seen at the backend"}, admin...)...), exitOK)
	checkGolden(t, "reconcile-applied", normalize(r.stdout, h.OperationRoot()))
	r = wantExit(t, "reconcile again", runCLI(t, append([]string{"reconcile", "--resource", "item/slow", "--op", op, "--applied", "-o", "json"}, admin...)...), exitNotFound)
	r = wantExit(t, "receipts --unknown after", runCLI(t, append([]string{"receipts", "--unknown", "-o", "json"}, admin...)...), exitOK)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("unknown after reconcile: %s", r.stdout)
	}
	r = wantExit(t, "receipts of the settled write", runCLI(t, append([]string{"receipts", "--resource", "item/slow", "-o", "json"}, admin...)...), exitOK)
	var list []store.Receipt
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].Source != store.SourceReconciled || list[0].Response.Status != 201 {
		t.Errorf("the reconciled receipt: %+v %v", list, err)
	}

	ac, err := adminapi.NewClient(s.admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Pause(context.Background(), "item/slow", "maintenance window"); err != nil {
		t.Fatal(err)
	}
	r = wantExit(t, "receipts --paused", runCLI(t, append([]string{"receipts", "--paused"}, admin...)...), exitOK)
	checkGolden(t, "receipts-paused", normalize(r.stdout))
	r = wantExit(t, "receipts --record", runCLI(t, append([]string{"receipts", "--resource", "item/slow", "--record"}, admin...)...), exitOK)
	checkGolden(t, "receipts-record", normalize(r.stdout, h.OperationRoot(), h.LeaseID()))
	r = wantExit(t, "receipts --paused -o json", runCLI(t, append([]string{"receipts", "--paused", "-o", "json"}, admin...)...), exitOK)
	var paused []store.Record
	if err := json.Unmarshal([]byte(r.stdout), &paused); err != nil || len(paused) != 1 || paused[0].Pause == nil || paused[0].Pause.Detail != "maintenance window" {
		t.Errorf("receipts --paused -o json: %+v %v", paused, err)
	}
	r = wantExit(t, "resume", runCLI(t, append([]string{"resume", "--resource", "item/slow"}, admin...)...), exitOK)
	if r.stdout != "resumed item/slow: it accepts writes again; its highest fence 1 is kept\n" {
		t.Errorf("resume:\n%s", r.stdout)
	}
	r = wantExit(t, "receipts --paused after resume", runCLI(t, append([]string{"receipts", "--paused", "-o", "json"}, admin...)...), exitOK)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("paused after resume: %s", r.stdout)
	}
	r = wantExit(t, "resume again", runCLI(t, append([]string{"resume", "--resource", "item/slow"}, admin...)...), exitFailure)
	if !strings.Contains(r.stderr, "409 CONFLICT") || !strings.Contains(r.stderr, "nothing was changed") {
		t.Errorf("resume of a resource not paused:\n%s", r.stderr)
	}
}

// runSidecarServer runs a real sidecar (proxy/server, a memory store, one
// route PUT /v1/items/{id} in registry mode, every listener on port 0)
// in front of the backend block given (YAML) and the registry at
// regURL whose keys bundle holds, until the test ends.
func runSidecarServer(t *testing.T, backend, regURL, bundle string) *proxyserver.Server {
	t.Helper()
	return runSidecarServerStore(t, backend, regURL, bundle, "{backend: memory}")
}

// runSidecarServerStore is runSidecarServer on the store block given
// (YAML).
func runSidecarServerStore(t *testing.T, backend, regURL, bundle, storeCfg string) *proxyserver.Server {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.yaml")
	writeTestFile(t, path, `listen: 127.0.0.1:0
admin: {listen: 127.0.0.1:0}
health: {listen: 127.0.0.1:0}
backend: `+backend+`
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "item/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "`+bundle+`"}
registry: {url: "`+regURL+`"}
store: `+storeCfg+`
dataDir: "`+dir+`"
`)
	srv, _ := runSidecarFile(t, path)
	return srv
}

// runSidecarFile runs the sidecar the config file at path describes
// until stop is called or the test ends.
func runSidecarFile(t *testing.T, path string) (srv *proxyserver.Server, stop func()) {
	t.Helper()
	cfg, err := proxyserver.Check(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err = proxyserver.New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return srv, stop
}
