package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy/adminapi"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
	regserver "github.com/fencegate/fencegate/registry/server"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// The operator guide's names for what the runbook test starts for real.
const (
	rbTrustDomain = "fencegate.test"
	rbServiceName = "fencegate-registry.fencegate.svc" // the only name of the registry's certificate but localhost
	rbStore       = "billing-api"                      // store.service of the guide's examples
)

// rbStep runs one command line of the guide (and checks what the guide
// says it does), or names why it cannot run here.
type rbStep struct {
	run          func(rb *runbook, dc docCommand)
	needsCluster string
}

// runbookSteps are the fencegate command lines of docs/operations.md's
// shell blocks, by section and text as the guide writes them. A line of
// the guide in neither this table nor needsCluster fails the test, and so
// does an entry the guide no longer has.
var runbookSteps = map[string]map[string]rbStep{
	"What runs where": {
		"receipts --paused":                    {run: func(rb *runbook, dc docCommand) { rb.exec(dc, rbSidecar, nil, exitOK) }},
		"admin meta":                           {run: (*runbook).adminMeta},
		"lease list --prefix invoice-batch/":   {run: (*runbook).leaseList},
		"lease get --resource invoice-batch/7": {run: (*runbook).leaseGet},
		`lease revoke lease-NA6XFFSF5QHVSOZNN45ULHTU --reason "INC-1234: worker stuck"`: {run: (*runbook).leaseRevoke},
		"receipts get rcpt-7624ee32dc7f383a77454602655a1ad1 --resource invoice-batch/7": {run: (*runbook).receiptsGet},
		"receipts --resource invoice-batch/7":                                           {run: (*runbook).receiptsList},
	},
	"Install on an empty cluster": {
		"keys generate --alg EdDSA --out ./fg-keys": {run: (*runbook).keysGenerate},
		"grant acquire --registry https://127.0.0.1:8700 --tls-server-name fencegate-registry.fencegate.svc --cert w.crt --key w.key --ca ca.crt --resource smoke/1 --ttl 5s": {run: (*runbook).smokeCheck},
	},
	"Rotate keys and certificates": {
		"keys jwks --sign-with fg-keys/signing.jwk fg-keys/signing.jwk fg-keys-2/signing.jwk": {run: (*runbook).signedOverlap},
		`trust accept --kid <new kid> --thumbprint <new kid> --reason "rotation 2026-07"`:     {run: (*runbook).trustAccept},
	},
	"Restore the registry": {
		"admin fence-floor raise --to 5000000":                            {run: (*runbook).floorGlobal},
		"admin fence-floor raise --to 5000000 --resource invoice-batch/7": {run: (*runbook).floorResource},
	},
	"Replace, migrate or roll back the registry": {
		`fences collect "${args[@]}" --admin-token-file ./sidecar-admin-token`: {run: (*runbook).fencesCollect},
		"admin epoch bump": {run: (*runbook).epochBump},
	},
	"Reconcile MUTATION_UNKNOWN": {
		"receipts --unknown -o json": {run: (*runbook).unknownNoAnswer},
		`reconcile --resource invoice-batch/7 --op 'sha256:.../3' --applied --status 200 --reason "row present, INC-1234"`: {run: (*runbook).reconcileApplied},
		`reconcile --resource invoice-batch/7 --op 'sha256:.../3' --not-applied --reason "no row, INC-1234"`:               {run: (*runbook).reconcileNotApplied},
	},
	"Store lost data": {
		"store status --sidecar http://127.0.0.1:8781": {run: (*runbook).storeStatusLost},
		"receipts --paused":                            {run: (*runbook).lossListing},
		"receipts --unknown -o json":                   {run: (*runbook).lossListing},
		"store acknowledge-loss --sidecar http://127.0.0.1:8781 --registry https://fencegate-registry.fencegate.svc:8700 --admin-token-file registry-admin-token": {run: (*runbook).acknowledgeLoss},
	},
}

// runbookSetups prepare what a section's commands act on, before its
// first command runs.
var runbookSetups = map[string]func(rb *runbook){
	"What runs where":            (*runbook).setupHeldResource,
	"Reconcile MUTATION_UNKNOWN": (*runbook).setupUnknown,
	"Store lost data":            (*runbook).setupLostStore,
}

// TestOperationsRunbooks runs the fencegate command lines of
// docs/operations.md's shell blocks as the guide writes them, in its
// order, against a real registry (registry/server: bbolt, TLS with a
// certificate for the Service's name only, mTLS identities, the admin
// token) and a real sidecar (proxy/server: a bbolt store anchored at the
// registry, the admin token) in front of a real backend, each
// placeholder replaced by a value the test made for real (a held lease, a
// receipt, an unknown mutation, a lost store), the guide's exports as the
// environment. Each must exit as the guide says and do what it says.
func TestOperationsRunbooks(t *testing.T) {
	cmds := docCommands(t, filepath.Join(repoRoot, "docs", "operations.md"))
	rb := newRunbook(t, cmds)
	seen := map[string]map[string]bool{}
	for _, dc := range cmds {
		steps, ok := runbookSteps[dc.heading]
		step, known := steps[dc.text]
		if !ok || !known {
			t.Errorf("%s (section %q): fencegate %s: neither run nor named as needing a cluster by TestOperationsRunbooks", dc.where, dc.heading, dc.text)
			continue
		}
		if seen[dc.heading] == nil {
			seen[dc.heading] = map[string]bool{}
			if setup := runbookSetups[dc.heading]; setup != nil {
				setup(rb)
			}
		}
		seen[dc.heading][dc.text] = true
		if step.needsCluster != "" {
			t.Logf("%s: fencegate %s: not run: needs %s", dc.where, dc.text, step.needsCluster)
			continue
		}
		step.run(rb, dc)
		if t.Failed() {
			t.Fatalf("stopped at %s: the later steps build on this one", dc.where)
		}
	}
	for heading, steps := range runbookSteps {
		for text := range steps {
			if !seen[heading][text] {
				t.Errorf("section %q: fencegate %s: the guide no longer has it (remove it from runbookSteps)", heading, text)
			}
		}
	}
}

// session names the environment a command runs in: the exports of the
// guide's block for a sidecar's admin API, or for the registry.
type session int

const (
	rbNone session = iota
	rbSidecar
	rbRegistry
	rbBoth // both blocks' exports, the registry's last
)

// runbook is the test's one machine: the working directory the guide's
// relative paths are in, the PKI, the registry, the backend, the sidecar
// and what the steps made.
type runbook struct {
	t            *testing.T
	ca           *tlsfilestest.CA
	regAddr      string // 127.0.0.1:port, as a port-forward reaches it
	back         *rbBackend
	sc           *rbPod
	envs         map[session][]string
	holder       *client.Holder // the current worker of invoice-batch/7
	lastReceipt  string
	unknownOp    string
	lossListings []docCommand
	// adminHost is where the sidecars' admin APIs listen: an address of
	// this machine that is not loopback, so that, as for a caller from
	// outside the pod, their admin token is required.
	adminHost string
}

// nonLoopbackIP is an IPv4 address of an interface that is up and not
// loopback ("" when there is none).
func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			if ln, err := net.Listen("tcp", n.IP.String()+":0"); err == nil {
				ln.Close()
				return n.IP.String()
			}
		}
	}
	return ""
}

func newRunbook(t *testing.T, cmds []docCommand) *runbook {
	dir := t.TempDir()
	t.Chdir(dir)
	rb := &runbook{t: t, ca: tlsfilestest.NewCA(t, "fencegate-ca"), envs: map[session][]string{}, adminHost: nonLoopbackIP()}
	if rb.adminHost == "" {
		rb.adminHost = "127.0.0.1"
		t.Log("no non-loopback address: the sidecars' admin APIs listen on loopback, where their token is not asked for")
	}
	for _, dc := range cmds {
		if dc.heading == "What runs where" && dc.text == "receipts --paused" {
			rb.envs[rbSidecar] = dc.env
		}
		if dc.heading == "What runs where" && dc.text == "admin meta" {
			rb.envs[rbRegistry] = dc.env
		}
	}
	if len(rb.envs[rbSidecar]) == 0 || len(rb.envs[rbRegistry]) == 0 {
		t.Fatalf("the guide's exports for the sidecar (%v) or the registry (%v) are gone", rb.envs[rbSidecar], rb.envs[rbRegistry])
	}
	writeTestFile(t, "ca.crt", string(rb.ca.PEM))
	writeTestFile(t, "registry-admin-token", "registry-token\n")
	writeTestFile(t, "sidecar-admin-token", "sidecar-token\n")
	rb.writeLeaf("registry", rb.ca.Server(t, rbServiceName, "localhost"))
	rb.writeLeaf("sidecar", rb.ca.Client(t, "spiffe://"+rbTrustDomain+"/sidecar"))
	rb.writeLeaf("w", rb.ca.Client(t, "spiffe://"+rbTrustDomain+"/smoke")) // the guide's w.crt, w.key
	rb.startRegistry()
	rb.back = startRBBackend(t)
	rb.sc = rb.startSidecar("bolt", filepath.Join(dir, "sidecar-data"), rb.abs("registry-jwks.json"))
	return rb
}

// writeLeaf writes name.crt and name.key.
func (rb *runbook) writeLeaf(name string, l tlsfilestest.Leaf) {
	writeTestFile(rb.t, name+".crt", string(l.CertPEM))
	writeTestFile(rb.t, name+".key", string(l.KeyPEM))
}

func (rb *runbook) abs(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		rb.t.Fatal(err)
	}
	return filepath.Join(wd, p)
}

// startRegistry runs the registry as the chart does: TLS with the
// Service's name, mTLS identities, the admin token, bbolt.
func (rb *runbook) startRegistry() {
	t := rb.t
	writeTestFile(t, "registry.yaml", fmt.Sprintf(`listen: 127.0.0.1:0
dataDir: %q
backend: bolt
tls: {certFile: %q, keyFile: %q, clientCAFile: %q}
identity: {mode: mtls, trustDomain: %s}
admin: {tokenFile: %q}
log: {level: error}
`, rb.abs("registry-data"), rb.abs("registry.crt"), rb.abs("registry.key"), rb.abs("ca.crt"), rbTrustDomain, rb.abs("registry-admin-token")))
	cfg, err := regserver.Load("registry.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := regserver.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	rb.regAddr = srv.Addr()
	// The sidecar's trust bundle: the registry's published keys.
	c, err := client.New(rb.regLocal(), client.WithTLSFiles("", "", rb.abs("ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.JWKS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Save(rb.abs("registry-jwks.json"), set); err != nil {
		t.Fatal(err)
	}
}

// regLocal is the registry's URL by a name its certificate holds.
func (rb *runbook) regLocal() string {
	return "https://localhost:" + rb.regAddr[strings.LastIndexByte(rb.regAddr, ':')+1:]
}

// rbPod is a running sidecar.
type rbPod struct {
	srv     *proxyserver.Server
	dataDir string
	stop    func()
}

func (s *rbPod) admin() string { return "http://" + s.srv.AdminAddr() }

// startSidecar runs a sidecar on store backend (bolt: anchored at the
// registry as rbStore; memory: not anchored) protecting PUT
// /v1/items/{id} as invoice-batch/{id}, trusting bundle.
func (rb *runbook) startSidecar(backend, dataDir, bundle string) *rbPod {
	t := rb.t
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	storeCfg := "{backend: memory}"
	if backend == "bolt" {
		storeCfg = "{backend: bolt, service: " + rbStore + ", claimTTL: 2s}"
	}
	path := filepath.Join(dataDir, "proxy.yaml")
	writeTestFile(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
admin: {listen: %q, tokenFile: %q}
health: {listen: 127.0.0.1:0}
backend: {url: %q, timeout: 300ms, maxApplyDelay: 2s}
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "invoice-batch/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: %q, reloadInterval: 50ms}
registry: {url: %q, certFile: %q, keyFile: %q, caFile: %q}
store: %s
dataDir: %q
`, rb.adminHost+":0", rb.abs("sidecar-admin-token"), rb.back.srv.URL, bundle, rb.regLocal(), rb.abs("sidecar.crt"), rb.abs("sidecar.key"), rb.abs("ca.crt"), storeCfg, dataDir))
	srv, stop := runSidecarFile(t, path)
	return &rbPod{srv: srv, dataDir: dataDir, stop: stop}
}

// rbBackend is the legacy service: it answers 201; while held, a write
// waits until released (the sidecar's 300ms forward timeout leaves its
// outcome unknown).
type rbBackend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hold chan struct{}
}

func startRBBackend(t *testing.T) *rbBackend {
	b := &rbBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		h := b.hold
		b.mu.Unlock()
		if h != nil {
			<-h
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("stored"))
	}))
	t.Cleanup(b.srv.Close)
	t.Cleanup(b.release) // before Close: the held writes finish
	return b
}

func (b *rbBackend) holdWrites() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold == nil {
		b.hold = make(chan struct{})
	}
}

func (b *rbBackend) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold != nil {
		close(b.hold)
		b.hold = nil
	}
}

// hold acquires invoice-batch/7 as owner (an mTLS identity of the CA).
func (rb *runbook) hold(owner string) *client.Holder {
	rb.writeLeaf(owner, rb.ca.Client(rb.t, "spiffe://"+rbTrustDomain+"/"+owner))
	c, err := client.New(rb.regLocal(), client.WithTLSFiles(rb.abs(owner+".crt"), rb.abs(owner+".key"), rb.abs("ca.crt")))
	if err != nil {
		rb.t.Fatal(err)
	}
	h, err := c.Hold(context.Background(), "invoice-batch/7", client.WithTTL(time.Minute), client.WithoutBackground())
	if err != nil {
		rb.t.Fatal(err)
	}
	rb.holder = h
	return h
}

// write sends segment seq of h's operation to /v1/items/7 through the
// sidecar: the status and Fence-Receipt.
func (rb *runbook) write(h *client.Holder, seq uint64) (int, string) {
	req, _ := http.NewRequestWithContext(client.ContextWithSegment(context.Background(), seq), http.MethodPut,
		"http://"+rb.sc.srv.Addr()+"/v1/items/7", strings.NewReader(fmt.Sprintf("segment %d", seq)))
	req.Header.Set(identity.DefaultHeader, h.Lease().Owner)
	resp, err := h.Transport().Client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Fence-Receipt")
}

// writeAccepted writes seq until it is accepted (a sidecar re-taking its
// store claim refuses writes for a moment), for at most 20 s.
func (rb *runbook) writeAccepted(h *client.Holder, seq uint64) string {
	deadline := clock.Real().Now().Add(20 * time.Second)
	for {
		code, rcpt := rb.write(h, seq)
		if code == http.StatusCreated {
			return rcpt
		}
		if clock.Real().Now().After(deadline) {
			rb.t.Fatalf("write %d of %s: %d %s", seq, h.Resource(), code, rcpt)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeUnknown writes seq while the backend holds writes: answered 504
// MUTATION_UNKNOWN; it returns the operation's ID.
// A 503 (refused before anything was forwarded: the store or the
// registry did not answer in time on a loaded machine) and a 502
// BACKEND_UNAVAILABLE (the store's Begin took the whole 300ms forward
// deadline, so the sidecar sent nothing: a CI failure on 96a3a00) are
// sent again, as a worker would, for at most 20 s.
func (rb *runbook) writeUnknown(h *client.Holder, seq uint64) string {
	rb.back.holdWrites()
	deadline := clock.Real().Now().Add(20 * time.Second)
	for {
		code, _ := rb.write(h, seq)
		if code == http.StatusGatewayTimeout {
			return fmt.Sprintf("%s/%d", h.OperationRoot(), seq)
		}
		notSent := code == http.StatusServiceUnavailable || code == http.StatusBadGateway
		if !notSent || clock.Real().Now().After(deadline) {
			rb.t.Fatalf("write %d with the backend holding it: %d, want 504", seq, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exec runs dc as the guide writes it, with each of subs (old, new, ...)
// replaced (each must be in the line: a placeholder the guide changed
// fails here), the addresses of the guide replaced by the servers', in
// the environment of the guide's exports for sess (or the block's own),
// and wants exit code want. A "> FILE" after it gets its stdout.
func (rb *runbook) exec(dc docCommand, sess session, subs []string, want int) cliResult {
	t := rb.t
	t.Helper()
	text := dc.text
	for i := 0; i+1 < len(subs); i += 2 {
		if !strings.Contains(text, subs[i]) {
			t.Fatalf("%s: fencegate %s: the guide's %q is gone", dc.where, dc.text, subs[i])
		}
		text = strings.ReplaceAll(text, subs[i], subs[i+1])
	}
	env := dc.env
	if len(env) == 0 {
		env = rb.envs[sess]
	}
	if sess == rbBoth {
		env = append(slices.Clone(rb.envs[rbSidecar]), rb.envs[rbRegistry]...)
	}
	args := docWords(rb.addresses(text))
	r := runCLIEnv(t, args, rb.addressesAll(env))
	if r.code != want {
		t.Errorf("%s: fencegate %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", dc.where, strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	if f, ok := strings.CutPrefix(dc.tail, ">"); ok && !strings.HasPrefix(f, ">") {
		if file := strings.Fields(f)[0]; file != "/dev/null" {
			writeTestFile(t, file, r.stdout)
		}
	}
	return r
}

// addresses replaces the guide's addresses (a port-forward's, the
// Service's) with the servers' own.
func (rb *runbook) addresses(s string) string {
	return strings.NewReplacer(
		"http://127.0.0.1:8781", rb.sc.admin(),
		"https://127.0.0.1:8700", "https://"+rb.regAddr,
		"https://"+rbServiceName+":8700", "https://"+rb.regAddr,
	).Replace(s)
}

func (rb *runbook) addressesAll(env []string) []string {
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = rb.addresses(e)
	}
	return out
}

// runCLIEnv is runCLI in the environment env (NAME=VALUE).
func runCLIEnv(t *testing.T, args, env []string) cliResult {
	t.Helper()
	for _, e := range []string{"FENCEGATE_REGISTRY", "FENCEGATE_OWNER", "FENCEGATE_CERT", "FENCEGATE_KEY", "FENCEGATE_CA",
		"FENCEGATE_TLS_SERVER_NAME", "FENCEGATE_ADMIN", "FENCEGATE_ADMIN_TOKEN_FILE", "FENCEGATE_SIDECAR_TOKEN_FILE"} {
		t.Setenv(e, "")
	}
	for _, e := range env {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			t.Fatalf("export %q", e)
		}
		t.Setenv(k, v)
	}
	var out, errb strings.Builder
	code := run(context.Background(), args, &out, &errb)
	return cliResult{out.String(), errb.String(), code}
}

// wantOut fails unless every one of want is in s.
func (rb *runbook) wantOut(dc docCommand, s string, want ...string) {
	rb.t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			rb.t.Errorf("%s: fencegate %s: output lacks %q:\n%s", dc.where, dc.text, w, s)
		}
	}
}

// meta is the registry's meta, read as the guide's loop reads it
// (admin meta -o json).
func (rb *runbook) meta() map[string]any {
	r := runCLIEnv(rb.t, []string{"admin", "meta", "-o", "json"}, rb.addressesAll(rb.envs[rbRegistry]))
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); r.code != exitOK || err != nil {
		rb.t.Fatalf("admin meta -o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return m
}

// --- What runs where

func (rb *runbook) setupHeldResource() {
	h := rb.hold("worker-a")
	rb.lastReceipt = rb.writeAccepted(h, 1)
}

func (rb *runbook) adminMeta(dc docCommand) {
	r := rb.exec(dc, rbRegistry, nil, exitOK)
	rb.wantOut(dc, r.stdout, "issuerEpoch:", "revision:", "fenceFloor:", "policySeq:", "lineage:")
}

func (rb *runbook) leaseList(dc docCommand) {
	r := rb.exec(dc, rbRegistry, nil, exitOK)
	rb.wantOut(dc, r.stdout, rb.holder.LeaseID(), "invoice-batch/7", "HELD")
}

func (rb *runbook) leaseGet(dc docCommand) {
	r := rb.exec(dc, rbRegistry, nil, exitOK)
	rb.wantOut(dc, r.stdout, rb.holder.LeaseID(), rb.holder.Lease().Owner)
}

// leaseRevoke: the lease alone revoked; the sidecar refuses its grant at
// once (registry mode).
func (rb *runbook) leaseRevoke(dc docCommand) {
	h := rb.holder
	r := rb.exec(dc, rbRegistry, []string{"lease-NA6XFFSF5QHVSOZNN45ULHTU", h.LeaseID()}, exitOK)
	rb.wantOut(dc, r.stdout, "revoked lease "+h.LeaseID()+" of invoice-batch/7")
	if code, _ := rb.write(h, 2); code != http.StatusForbidden {
		rb.t.Errorf("a write of the revoked lease: %d, want 403", code)
	}
}

func (rb *runbook) receiptsGet(dc docCommand) {
	r := rb.exec(dc, rbSidecar, []string{"rcpt-7624ee32dc7f383a77454602655a1ad1", rb.lastReceipt}, exitOK)
	rb.wantOut(dc, r.stdout, rb.lastReceipt, rb.holder.OperationRoot()+"/1")
}

func (rb *runbook) receiptsList(dc docCommand) {
	r := rb.exec(dc, rbSidecar, nil, exitOK)
	rb.wantOut(dc, r.stdout, rb.lastReceipt)
}

// --- Install on an empty cluster

func (rb *runbook) keysGenerate(dc docCommand) {
	r := rb.exec(dc, rbNone, nil, exitOK)
	rb.wantOut(dc, r.stdout, "kid:", "fg-keys/signing.jwk", "fg-keys/jwks.json")
	if fi, err := os.Stat("fg-keys/signing.jwk"); err != nil || fi.Mode().Perm() != 0o600 {
		rb.t.Errorf("fg-keys/signing.jwk: %v %v, want mode 0600", fi, err)
	}
	if _, err := os.Stat("fg-keys/jwks.json"); err != nil {
		rb.t.Error(err)
	}
}

// smokeCheck: through "a port-forward" (127.0.0.1, a name the
// certificate does not hold) the acquire works with --tls-server-name and
// fails closed without it, as the guide says (exit 4, x509).
func (rb *runbook) smokeCheck(dc docCommand) {
	r := rb.exec(dc, rbNone, nil, exitOK)
	if !regexp.MustCompile(`fenceToken:\s+1\n`).MatchString(r.stdout) {
		rb.t.Errorf("%s: the smoke grant is not fence 1 (# fenceToken: 1):\n%s", dc.where, r.stdout)
	}
	without := strings.Replace(dc.text, "--tls-server-name "+rbServiceName+" ", "", 1)
	r = runCLIEnv(rb.t, docWords(rb.addresses(without)), nil)
	if r.code != exitUnreachable || !strings.Contains(r.stderr, "x509: cannot validate certificate for 127.0.0.1") {
		rb.t.Errorf("without --tls-server-name: exit %d, want %d with the x509 error\n%s", r.code, exitUnreachable, r.stderr)
	}
}

// --- Rotate keys and certificates

// trustOf is the sidecar s's trust list.
func (rb *runbook) trustOf(s *rbPod) authn.TrustList {
	r := runCLIEnv(rb.t, []string{"trust", "list", "-o", "json", "--admin", s.admin(), "--admin-token-file", "sidecar-admin-token"}, nil)
	var l authn.TrustList
	if err := json.Unmarshal([]byte(r.stdout), &l); r.code != exitOK || err != nil {
		rb.t.Fatalf("trust list: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return l
}

// waitKey waits until s's trust list has kid in state, pinned how.
func (rb *runbook) waitKey(s *rbPod, kid, state string, how store.TrustHow) {
	deadline := clock.Real().Now().Add(20 * time.Second)
	for {
		l := rb.trustOf(s)
		for _, k := range l.Keys {
			if k.Kid == kid && k.State == state && k.How == how {
				return
			}
		}
		if clock.Real().Now().After(deadline) {
			rb.t.Fatalf("key %s never %s (%s) at %s: %+v", kid, state, how, s.admin(), l.Keys)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newKid is the kid of fg-keys-2, made by the guide's step 1
// (keys generate --alg EdDSA --out ./fg-keys-2, run here as written).
func (rb *runbook) newKid() string {
	if _, err := os.Stat("fg-keys-2/signing.jwk"); err != nil {
		r := runCLIEnv(rb.t, []string{"keys", "generate", "--alg", "EdDSA", "--out", "./fg-keys-2"}, nil)
		if r.code != exitOK {
			rb.t.Fatalf("keys generate --out ./fg-keys-2: exit %d %s", r.code, r.stderr)
		}
	}
	set := readJWKS(rb.t, "fg-keys-2/jwks.json")
	return set[0]
}

// readJWKS is the kids of a JWK set file.
func readJWKS(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil || len(set.Keys) == 0 {
		t.Fatalf("%s: %v %s", path, err, b)
	}
	kids := make([]string, len(set.Keys))
	for i, k := range set.Keys {
		kids[i] = k.Kid
	}
	return kids
}

// signedOverlap (2a): a sidecar trusting the old key (pinned on first
// use from a bundle of it) pins the new key from the signed overlap
// bundle the command writes to jwks.json, at its next reload.
func (rb *runbook) signedOverlap(dc docCommand) {
	kid := rb.newKid()
	copyTestFile(rb.t, "fg-keys/jwks.json", "jwks.json")
	s := rb.startSidecar("memory", rb.abs("rotate-2a"), rb.abs("jwks.json"))
	rb.waitKey(s, readJWKS(rb.t, "fg-keys/jwks.json")[0], authn.KeyTrusted, store.TrustFirstUse)
	rb.exec(dc, rbNone, nil, exitOK)
	rb.waitKey(s, kid, authn.KeyTrusted, store.TrustSignedBundle)
	s.stop()
}

// trustAccept (2b): the sidecar has the plain overlap bundle (the new key
// unpinned); the operator's accept pins it.
func (rb *runbook) trustAccept(dc docCommand) {
	kid := rb.newKid()
	dir := rb.abs("rotate-2b")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		rb.t.Fatal(err)
	}
	bundle := filepath.Join(dir, "jwks.json")
	copyTestFile(rb.t, "fg-keys/jwks.json", bundle)
	s := rb.startSidecar("memory", dir, bundle)
	rb.waitKey(s, readJWKS(rb.t, "fg-keys/jwks.json")[0], authn.KeyTrusted, store.TrustFirstUse)
	r := runCLIEnv(rb.t, []string{"keys", "jwks", "fg-keys/signing.jwk", "fg-keys-2/signing.jwk"}, nil)
	if r.code != exitOK {
		rb.t.Fatalf("keys jwks: %d %s", r.code, r.stderr)
	}
	writeTestFile(rb.t, bundle, r.stdout)
	rb.waitKey(s, kid, authn.KeyUnpinned, "")
	main := rb.sc
	rb.sc = s // the port-forward goes to this pod
	rb.exec(dc, rbSidecar, []string{"<new kid>", kid}, exitOK)
	rb.sc = main
	rb.waitKey(s, kid, authn.KeyTrusted, store.TrustOperator)
	s.stop()
}

func copyTestFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, to, string(b))
}

// --- Restore the registry

func (rb *runbook) floorGlobal(dc docCommand) {
	r := rb.exec(dc, rbRegistry, nil, exitOK)
	rb.wantOut(dc, r.stdout, "to 5000000")
	if f := rb.meta()["fenceFloor"]; f != float64(5000000) {
		rb.t.Errorf("fenceFloor after the raise: %v", f)
	}
}

func (rb *runbook) floorResource(dc docCommand) {
	r := rb.exec(dc, rbRegistry, nil, exitOK)
	rb.wantOut(dc, r.stdout, "invoice-batch/7", "5000000")
}

// --- Replace, migrate or roll back the registry

// fencesCollect: one --sidecar per pod (the loop's args); the floor and
// the epoch are printed, invoice-batch/7 at the fence the sidecar took.
func (rb *runbook) fencesCollect(dc docCommand) {
	r := rb.exec(dc, rbNone, []string{`"${args[@]}"`, "--sidecar http://127.0.0.1:8781"}, exitOK)
	rb.wantOut(dc, r.stdout, "invoice-batch/7", fmt.Sprintf("fence floor:   %d", rb.holder.Fence()), "issuer epoch:  ")
}

func (rb *runbook) epochBump(dc docCommand) {
	before, ok := rb.meta()["issuerEpoch"].(float64)
	if !ok {
		rb.t.Fatal("admin meta -o json has no numeric issuerEpoch (the guide's loop reads it with jq)")
	}
	rb.exec(dc, rbRegistry, nil, exitOK)
	if after := rb.meta()["issuerEpoch"]; after != before+1 {
		rb.t.Errorf("issuerEpoch %v after a bump from %v", after, before)
	}
}

// --- Reconcile MUTATION_UNKNOWN

// setupUnknown: a new owner (above the floor) writes segments 1 and 2,
// and 3 times out at the backend: UNKNOWN.
func (rb *runbook) setupUnknown() {
	h := rb.hold("worker-b")
	if h.Fence() <= 5000000 {
		rb.t.Errorf("a fence after the floor was raised to 5000000: %d", h.Fence())
	}
	rb.writeAccepted(h, 1)
	rb.writeAccepted(h, 2)
	rb.unknownOp = rb.writeUnknown(h, 3)
}

// unknownListing checks the JSON listing's entry of op.
func (rb *runbook) unknownListing(dc docCommand, out, op, cause string) {
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		rb.t.Fatalf("%s: %v\n%s", dc.where, err, out)
	}
	for _, u := range list {
		if u["operationId"] == op {
			for _, k := range []string{"resource", "fence", "seq", "quietAt", "unknownSince"} {
				if u[k] == nil {
					rb.t.Errorf("%s: the unknown mutation lacks %q: %v", dc.where, k, u)
				}
			}
			if u["state"] != "UNKNOWN" || u["cause"] != cause || u["resource"] != "invoice-batch/7" {
				rb.t.Errorf("%s: %v, want UNKNOWN of invoice-batch/7, cause %s", dc.where, u, cause)
			}
			return
		}
	}
	rb.t.Errorf("%s: fencegate %s does not list %s:\n%s", dc.where, dc.text, op, out)
}

func (rb *runbook) unknownNoAnswer(dc docCommand) {
	r := rb.exec(dc, rbSidecar, nil, exitOK)
	rb.unknownListing(dc, r.stdout, rb.unknownOp, "NO_ANSWER")
}

func (rb *runbook) reconcileApplied(dc docCommand) {
	r := rb.exec(dc, rbSidecar, []string{"sha256:.../3", rb.unknownOp}, exitOK)
	rb.wantOut(dc, r.stdout, "settled:      applied", "replayStatus: 200", "source:       RECONCILED")
	rb.back.release()
}

// reconcileNotApplied: on another owner's unknown segment 3; before its
// quiet time refused MAY_STILL_APPLY (exit 1), after it settled, and the
// owner sends segment 3 again.
func (rb *runbook) reconcileNotApplied(dc docCommand) {
	if err := rb.holder.Release(context.Background()); err != nil {
		rb.t.Fatal(err)
	}
	h := rb.hold("worker-c")
	rb.writeAccepted(h, 1)
	rb.writeAccepted(h, 2)
	op := rb.writeUnknown(h, 3)
	rb.back.release()
	r := rb.exec(dc, rbSidecar, []string{"sha256:.../3", op}, exitFailure)
	rb.wantOut(dc, r.stderr, "NOT settled (MAY_STILL_APPLY)", "may still take effect at the backend until")
	deadline := clock.Real().Now().Add(20 * time.Second)
	for {
		r = runCLIEnv(rb.t, docWords(strings.ReplaceAll(rb.addresses(dc.text), "sha256:.../3", op)), rb.addressesAll(rb.envs[rbSidecar]))
		if r.code == exitOK || clock.Real().Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.code != exitOK {
		rb.t.Fatalf("%s: after the quiet time: exit %d\n%s", dc.where, r.code, r.stderr)
	}
	rb.wantOut(dc, r.stdout, "settled:      not applied")
	rb.writeAccepted(h, 3)
}

// --- Store lost data

// setupLostStore: an unknown mutation, then the sidecar's bbolt file
// deleted and the pod started again on an empty one: the store presents
// another generation.
func (rb *runbook) setupLostStore() {
	rb.unknownOp = rb.writeUnknown(rb.holder, 4)
	rb.sc.stop()
	rb.back.release()
	if err := os.Remove(filepath.Join(rb.sc.dataDir, "store.db")); err != nil {
		rb.t.Fatal(err)
	}
	rb.sc = rb.startSidecar("bolt", rb.sc.dataDir, rb.abs("registry-jwks.json"))
}

func (rb *runbook) storeStatus() adminapi.StoreStatus {
	r := runCLIEnv(rb.t, []string{"store", "status", "--sidecar", rb.sc.admin(), "--sidecar-token-file", "sidecar-admin-token"}, nil)
	var st adminapi.StoreStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != exitOK || err != nil {
		rb.t.Fatalf("store status: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return st
}

func (rb *runbook) storeStatusLost(dc docCommand) {
	if rb.adminHost != "127.0.0.1" {
		// Without the sidecar's token (off loopback): refused, and the
		// hint names the flag of the sidecar's token, not the registry's.
		r := runCLIEnv(rb.t, docWords(rb.addresses(dc.text)), nil)
		if r.code != exitAuth || !strings.Contains(r.stderr, "--sidecar-token-file") {
			rb.t.Errorf("store status without the sidecar's token: exit %d\n%s", r.code, r.stderr)
		}
	}
	r := rb.exec(dc, rbSidecar, nil, exitOK)
	var st adminapi.StoreStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		rb.t.Fatalf("%s: %v\n%s", dc.where, err, r.stdout)
	}
	if !st.Lost || st.Store != rbStore || st.Presented == "" || !strings.Contains(st.Detail, "the store presents generation "+st.Presented+", the registry anchored ") ||
		!strings.Contains(st.Acknowledge, "fencegate store acknowledge-loss --registry ") ||
		!strings.HasSuffix(st.Acknowledge, "--store "+rbStore+" --generation "+st.Presented) {
		rb.t.Errorf("%s: the lost store's status: %+v", dc.where, st)
	}
}

// lossListing runs a listing of the lost store (exit 0) and keeps it to
// run again once the loss is acknowledged and repaired, when it shows
// what its comment says.
func (rb *runbook) lossListing(dc docCommand) {
	rb.exec(dc, rbSidecar, nil, exitOK)
	rb.lossListings = append(rb.lossListings, dc)
}

// acknowledgeLoss: adopted at the registry; the sidecar repairs its
// store and accepts writes again, the resource paused STORE_LOSS and the
// anchored mutation UNKNOWN, cause STORE_LOSS, as the listings above say
// (run again now).
func (rb *runbook) acknowledgeLoss(dc docCommand) {
	presented := rb.storeStatus().Presented
	r := rb.exec(dc, rbBoth, nil, exitOK)
	rb.wantOut(dc, r.stdout, presented)
	deadline := clock.Real().Now().Add(30 * time.Second)
	for rb.storeStatus().Lost {
		if clock.Real().Now().After(deadline) {
			rb.t.Fatal("the store is still lost 30 s after the acknowledgement")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(rb.lossListings) != 2 {
		rb.t.Fatalf("the listings of the section: %v", rb.lossListings)
	}
	for _, l := range rb.lossListings {
		r := rb.exec(l, rbSidecar, nil, exitOK)
		if strings.Contains(l.text, "--unknown") {
			rb.unknownListing(l, r.stdout, rb.unknownOp, "STORE_LOSS")
		} else {
			rb.wantOut(l, r.stdout, "invoice-batch/7", "STORE_LOSS")
		}
	}
}
