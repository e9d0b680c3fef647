package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/store"
)

// The fault matrix (issue 11) runs on this harness: a registry, one
// sidecar in front of a ledgerBackend, raw writes that carry whatever a
// (possibly stale) worker holds, and the final-data check every scenario
// ends with.

// identityHeader is the insecure-dev identity header of the registry and
// of sidecars in identity mode insecure-header.
const identityHeader = "X-Fencegate-Identity"

// accountsPath is the path of account id; the route maps it to resource
// "account/<id>".
func accountsPath(id string) string { return "/v1/accounts/" + id }

// sidecarOpts shape a sidecar's configuration.
type sidecarOpts struct {
	// status is the route's status mode: "registry" (default) or "proof".
	status string
	// maxAge is the proof mode's maxAge (default 5s).
	maxAge string
	// backendURL is where the sidecar forwards (default: the ledger).
	backendURL string
	// timeout is backend.timeout (default 2s).
	timeout string
	// idempotencyKey: the route says the backend honours Idempotency-Key.
	idempotencyKey bool
	// redisAddr: a Redis store shared by replicas; empty: bolt.
	redisAddr, redisPrefix string
	// postgresDSNFile: a PostgreSQL store (a file holding its DSN) shared
	// by replicas; empty: bolt (or redis).
	postgresDSNFile string
	// dataDir is the sidecar's data dir (default: a new temp dir); a
	// restart passes the same one to keep its bolt store.
	dataDir string
	// claimTTL of the bolt store's service claim (default 3s, so a
	// sidecar killed with -9 can be restarted within seconds; each
	// renewal attempt gets a third of it, which a loaded two-core CI
	// machine, compiling beside the e2e run, has missed at 1s: the claim
	// was lost and the sidecar rightly refused every write).
	claimTTL string
	// maxApplyDelay is backend.maxApplyDelay (default 1s: the ledger
	// applies a write while its request is open, or never, unless a
	// scenario's gate holds it longer).
	maxApplyDelay string
	// effectQuery: the route's effectQuery asks the ledger
	// (/effects/{operationId}), reconcile.interval 100ms.
	effectQuery bool
}

// serviceSeq names each matrix sidecar's service claim uniquely.
var serviceSeq atomic.Int64

// matrixSidecarConfig is the YAML of a sidecar protecting
// PUT /v1/accounts/{id} as resource account/{id}.
func matrixSidecarConfig(reg *registry, backend string, o sidecarOpts, service string) string {
	if o.status == "" {
		o.status = "registry"
	}
	if o.maxAge == "" {
		o.maxAge = "5s"
	}
	if o.timeout == "" {
		o.timeout = "2s"
	}
	if o.backendURL != "" {
		backend = o.backendURL
	}
	if o.claimTTL == "" {
		o.claimTTL = "3s"
	}
	if o.maxApplyDelay == "" {
		o.maxApplyDelay = "1s"
	}
	effect := ""
	if o.effectQuery {
		effect = `, effectQuery: "` + backend + `/effects/{operationId}"`
	}
	storeCfg := `{backend: bolt, service: ` + service + `, claimIdentity: ` + service + `, claimTTL: ` + o.claimTTL + `}`
	if o.redisAddr != "" {
		storeCfg = `{backend: redis, service: ` + service + `, claimIdentity: ` + service + `, redis: {addr: "` + o.redisAddr + `", prefix: "` + o.redisPrefix + `"}}`
	}
	if o.postgresDSNFile != "" {
		storeCfg = `{backend: postgres, service: ` + service + `, claimIdentity: ` + service + `, postgres: {dsnFile: "` + o.postgresDSNFile + `"}}`
	}
	return `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "` + backend + `", timeout: ` + o.timeout + `, maxApplyDelay: ` + o.maxApplyDelay + `}
reconcile: {interval: 100ms}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", idempotencyKey: ` + fmt.Sprint(o.idempotencyKey) + `, status: {mode: ` + o.status + `, maxAge: ` + o.maxAge + `}` + effect + `}
identity: {mode: insecure-header}
trust: {bundle: "` + filepath.Join(reg.dataDir, "keys", "jwks.json") + `"}
registry: {url: "` + reg.url + `"}
store: ` + storeCfg + `
dataDir: "` + o.dataDir + `"
log: {level: warn}
`
}

// matrix is one scenario's stack: a registry, a ledger backend and one
// sidecar in front of it.
type matrix struct {
	t       *testing.T
	reg     *registry
	back    *ledgerBackend
	sc      *sidecar
	opts    sidecarOpts
	service string
}

// startMatrix starts a registry, a ledger backend and a sidecar.
func startMatrix(t *testing.T, o sidecarOpts) *matrix {
	t.Helper()
	return startMatrixWithBackend(t, startLedgerBackend(t), o)
}

// startMatrixWithBackend is startMatrix on a ledger the caller started
// (to put a faultproxy in front of it, o.backendURL).
func startMatrixWithBackend(t *testing.T, back *ledgerBackend, o sidecarOpts) *matrix {
	t.Helper()
	m := &matrix{t: t, reg: startRegistry(t, ""), back: back}
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	m.opts = o
	m.service = fmt.Sprintf("e2e-matrix-%d", serviceSeq.Add(1))
	m.sc = startSidecar(t, matrixSidecarConfig(m.reg, m.back.URL(), o, m.service))
	return m
}

// restartSidecar starts the sidecar again on the same data dir (and so
// the same bolt store); the old process must have ended.
func (m *matrix) restartSidecar() {
	m.t.Helper()
	m.sc = startSidecar(m.t, matrixSidecarConfig(m.reg, m.back.URL(), m.opts, m.service))
}

// registryClient is an SDK client of the registry acting as owner.
func registryClient(t *testing.T, regURL, owner string) *client.Client {
	t.Helper()
	c, err := client.New(regURL, client.WithIdentityHeader(identityHeader, owner))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// acquire takes a lease on account/id for owner, waiting up to wait for
// the current holder's lease to end.
func (m *matrix) acquire(owner, id string, ttl, wait time.Duration) *client.Lease {
	m.t.Helper()
	return acquireAt(m.t, m.reg.url, owner, id, ttl, wait)
}

var requestSeq atomic.Int64

func acquireAt(t *testing.T, regURL, owner, id string, ttl, wait time.Duration) *client.Lease {
	t.Helper()
	l, err := registryClient(t, regURL, owner).Acquire(context.Background(), client.AcquireRequest{
		Resource: "account/" + id, RequestID: fmt.Sprintf("%s-%s-%d", owner, id, requestSeq.Add(1)), TTL: ttl, Wait: wait,
	})
	if err != nil {
		t.Fatalf("%s acquiring account/%s: %v", owner, id, err)
	}
	return l
}

// rawWrite is a protected write as a worker sends it, with whatever grant,
// proof and segment it holds: no SDK state machine in the way, because a
// stale worker sends what it has.
type rawWrite struct {
	Owner   string
	Grant   string
	Status  string // Fence-Status; omitted when empty
	Segment string // omitted when empty
	Path    string // default accountsPath of the grant's resource ID is not derivable: required
	Body    string
	Header  http.Header // further request headers, sent as they are
}

// of fills the grant, proof and owner of lease l.
func of(owner string, l *client.Lease, path, seg, body string) rawWrite {
	return rawWrite{Owner: owner, Grant: l.Grant, Status: l.Status, Segment: seg, Path: path, Body: body}
}

// reply is the sidecar's answer to a raw write.
type reply struct {
	Status  int
	Problem *fencegate.Problem // nil unless problem+json
	Header  http.Header
	Body    string
	Err     error // transport error: no answer at all
}

func (r reply) String() string {
	if r.Err != nil {
		return "no answer: " + r.Err.Error()
	}
	if r.Problem != nil {
		return fmt.Sprintf("%d %s (%s)", r.Status, r.Problem.Code, r.Problem.Detail)
	}
	return fmt.Sprintf("%d %q", r.Status, r.Body)
}

// code is the problem code, or "" for a non-problem answer.
func (r reply) code() fencegate.Code {
	if r.Problem == nil {
		return ""
	}
	return r.Problem.Code
}

// noKeepAlive sends every raw write on its own connection, so a fault on
// one (a cut, a dropped answer) never spills onto the next.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// send sends w to the sidecar at base and reads the whole answer.
func send(base string, w rawWrite) reply {
	req, err := http.NewRequest(http.MethodPut, base+w.Path, strings.NewReader(w.Body))
	if err != nil {
		return reply{Err: err}
	}
	for k, v := range w.Header {
		req.Header[k] = v
	}
	if w.Owner != "" {
		req.Header.Set(identityHeader, w.Owner)
	}
	if w.Grant != "" {
		req.Header.Set(fencegate.HeaderGrant, w.Grant)
	}
	if w.Status != "" {
		req.Header.Set(fencegate.HeaderStatus, w.Status)
	}
	if w.Segment != "" {
		req.Header.Set(fencegate.HeaderSegment, w.Segment)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return reply{Err: err}
	}
	defer resp.Body.Close()
	r := reply{Status: resp.StatusCode, Header: resp.Header}
	if resp.Header.Get("Content-Type") == fencegate.ProblemContentType {
		p, err := fencegate.ReadProblem(resp)
		if err != nil {
			return reply{Err: err}
		}
		r.Problem = p
		return r
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{Err: err}
	}
	r.Body = string(b)
	return r
}

// write sends w through the matrix's sidecar.
func (m *matrix) write(w rawWrite) reply { return send(m.sc.url, w) }

// wantProblem fails unless r is the problem code with its HTTP status.
func wantProblem(t *testing.T, what string, r reply, code fencegate.Code) {
	t.Helper()
	if r.Err != nil || r.Problem == nil || r.Problem.Code != code || r.Status != code.Status() || r.Problem.Status != r.Status {
		t.Fatalf("%s: %s, want %d %s", what, r, code.Status(), code)
	}
}

// wantStatusProblem is wantProblem for a code answered with another
// status than its default (MUTATION_UNKNOWN is 504 for the request whose
// answer was lost, 409 for the ones it blocks).
func wantStatusProblem(t *testing.T, what string, r reply, status int, code fencegate.Code) {
	t.Helper()
	if r.Err != nil || r.Problem == nil || r.Problem.Code != code || r.Status != status {
		t.Fatalf("%s: %s, want %d %s", what, r, status, code)
	}
}

// wantAccepted fails unless r is the backend's 200 with a receipt, and
// reports whether it was a replay.
func wantAccepted(t *testing.T, what string, r reply) bool {
	t.Helper()
	if r.Err != nil || r.Status != http.StatusOK || r.Header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("%s: %s, want 200 with %s", what, r, fencegate.HeaderReceipt)
	}
	return r.Header.Get(fencegate.HeaderReplayed) == "true"
}

// adminGet GETs path on a sidecar's admin API into out; it reports false
// on 404.
func adminGet(t *testing.T, admin, path string, out any) bool {
	t.Helper()
	resp, err := http.Get(admin + path)
	if err != nil {
		t.Fatalf("admin GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("admin GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("admin GET %s: %v", path, err)
	}
	return true
}

// storeRecord is the fenced store's record of resource, through the admin
// API; ok is false when the store has none.
func storeRecord(t *testing.T, admin, resource string) (rec store.Record, ok bool) {
	t.Helper()
	ok = adminGet(t, admin, "/v1/resources/"+resource, &rec)
	return rec, ok
}

// receiptsOf lists the receipts of resource under the operation roots of
// grants, walking each root's segments from 1 until one has none (a
// root's receipts are contiguous: segments are accepted strictly in
// order, and nothing is compacted within a scenario).
func receiptsOf(t *testing.T, admin, resource string, grants ...string) []store.Receipt {
	t.Helper()
	var out []store.Receipt
	seen := map[string]bool{}
	for _, g := range grants {
		claims, err := client.GrantClaims(g)
		if err != nil {
			t.Fatalf("a scenario grant does not parse: %v", err)
		}
		if claims.Resource != resource || seen[claims.OperationRoot] {
			continue
		}
		seen[claims.OperationRoot] = true
		for seq := 1; ; seq++ {
			var list []store.Receipt
			op := fencegate.OperationID(claims.OperationRoot, uint64(seq))
			if !adminGet(t, admin, "/v1/receipts?resource="+url.QueryEscape(resource)+"&op="+url.QueryEscape(op), &list) || len(list) == 0 {
				break
			}
			out = append(out, list...)
		}
	}
	slices.SortFunc(out, func(a, b store.Receipt) int {
		if a.Fence != b.Fence {
			return cmpU(a.Fence, b.Fence)
		}
		return cmpU(a.Seq, b.Seq)
	})
	return out
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// payloadDigestOf is the sidecar's payload digest (docs/design.md 3.5):
// sha256(method "\n" request-target "\n" body).
func payloadDigestOf(method, target, body string) string {
	h := sha256.Sum256([]byte(method + "\n" + target + "\n" + body))
	return fencegate.DigestPrefix + hex.EncodeToString(h[:])
}

// checkFinalData is the matrix's final-data check for account id: the
// writes the backend applied are exactly the accepted receipts, in
// (fence, segment) order — nothing applied that was not accepted, nothing
// accepted that was not applied, nothing twice — and no mutation of the
// resource is left in flight or unknown (an accepted-but-answer-lost write
// must have been settled by reconciliation before this check). grants are
// every grant the scenario used on the resource: their operation roots
// name the receipts to read. It returns the receipts.
func checkFinalData(t *testing.T, admin string, back *ledgerBackend, id string, grants ...string) []store.Receipt {
	t.Helper()
	resource := "account/" + id
	rec, ok := storeRecord(t, admin, resource)
	if ok && rec.InFlight != nil {
		t.Fatalf("final data of %s: a mutation is still %s (%s): settle it first", resource, rec.InFlight.State, rec.InFlight.OperationID)
	}
	receipts := receiptsOf(t, admin, resource, grants...)
	got := back.writes(accountsPath(id))
	describe := func() string {
		var b strings.Builder
		b.WriteString("receipts (fence, seq, op):\n")
		for _, r := range receipts {
			fmt.Fprintf(&b, "  %d/%d %s %s %s\n", r.Fence, r.Seq, r.OperationID, r.Source, r.PayloadDigest)
		}
		b.WriteString("backend applied:\n")
		for _, a := range got {
			fmt.Fprintf(&b, "  %s/%s %s %q\n", a.Fence, a.Segment, a.OperationID, a.Body)
		}
		return b.String()
	}
	if len(got) != len(receipts) {
		t.Fatalf("final data of %s: the backend applied %d writes, the receipts accept %d\n%s", resource, len(got), len(receipts), describe())
	}
	for i, r := range receipts {
		a := got[i]
		if a.OperationID != r.OperationID || a.Fence != fmt.Sprint(r.Fence) || payloadDigestOf(http.MethodPut, a.Target, a.Body) != r.PayloadDigest {
			t.Fatalf("final data of %s: applied write %d (%s %q) is not receipt %d/%d (%s)\n%s", resource, i, a.OperationID, a.Body, r.Fence, r.Seq, r.OperationID, describe())
		}
	}
	if ok && len(receipts) > 0 {
		last := receipts[len(receipts)-1]
		if last.Fence == rec.HighestFence && last.Seq != rec.LastSeq {
			t.Fatalf("final data of %s: the record says lastSeq %d under fence %d, the receipts end at %d\n%s", resource, rec.LastSeq, rec.HighestFence, last.Seq, describe())
		}
	}
	return receipts
}

// waitUnknown polls the sidecar's unknown list (fencegate receipts
// --unknown, the operator's view) until resource has an unknown mutation,
// and returns its operation ID.
func waitUnknown(t *testing.T, admin, resource string, limit time.Duration) string {
	t.Helper()
	var op string
	found := eventually(limit, func() bool {
		r := run(t, "receipts", "--admin", admin, "--unknown", "-o", "json")
		var list []store.Mutation
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil {
			return false
		}
		for _, mu := range list {
			if mu.Resource == resource {
				op = mu.OperationID
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("no unknown mutation of %s listed within %s", resource, limit)
	}
	return op
}

// reconcile settles resource's unknown mutation op through
// "fencegate reconcile", as an operator does. A not-applied the sidecar
// refuses because the mutation is not quiet yet (MAY_STILL_APPLY: the
// backend may still apply it) is asked again until it is (up to 30 s).
func reconcile(t *testing.T, admin, resource, op string, applied bool) {
	t.Helper()
	how := "--not-applied"
	if applied {
		how = "--applied"
	}
	var r result
	eventually(30*time.Second, func() bool {
		r = run(t, "reconcile", "--admin", admin, "--resource", resource, "--op", op, how, "--reason", "e2e fault matrix")
		return r.code == 0 || !strings.Contains(r.stderr, string(fencegate.CodeMayStillApply))
	})
	if r.code != 0 {
		t.Fatalf("reconcile %s %s %s: exit %d\n%s%s", resource, op, how, r.code, r.stdout, r.stderr)
	}
}
