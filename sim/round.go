package sim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store"
)

// roundResult is what one round measured.
type roundResult struct {
	Attempted, Accepted                 int
	Stale, Forged, AuthChanged, Skipped int
	Gaps, Regressions, DataMismatch     int
	Conflicts                           int
	// MaxUnknown is the longest time in UNKNOWN of a mutation that
	// evidence could settle; NoEvidence counts the unknown outcomes that
	// nothing an operator has could settle, left UNKNOWN at the end.
	MaxUnknown  time.Duration
	UnknownOver int
	SDKStale    int
	Unknowns    int
	NoEvidence  int
	Handoffs    []time.Duration
	// HandoffOver counts hand-offs over their budget (handoffBudget),
	// HandoffBlocked those that waited for an unknown outcome instead.
	HandoffOver, HandoffBlocked int
	Codes                       map[string]int
	Seen                        map[string]int
	Violations                  []string
	// Soft are findings that fail the gate only in number (a hand-off over
	// its budget: at most 1% may be).
	Soft    []string
	History []string
	hist    hash.Hash
}

func (r *roundResult) failed() bool { return len(r.Violations) > 0 }

// round is one simulated world: a registry, a shared fenced store, its
// sidecar replicas, a backend and the workers, on one virtual clock, run
// by one goroutine from an event queue.
type round struct {
	m        *materials
	sc       script
	sabotage Sabotage
	trace    bool

	clk   simClock
	start time.Time
	reg   *registry.Registry
	rs    registryStore
	// restoresMet is how many restores the registry had met by itself
	// (registryStore.restores) when the operator last looked.
	restoresMet uint64
	rnd         io.Reader // the registry's random source (kept across restarts)
	st          sharedStore
	// err is the first failure of the simulation's own parts mid-round
	// (the shared store's database): the round's error.
	err      error
	sidecars []*sidecar
	back     *backend
	or       *oracle
	owners   []*owner
	// bundle is the trust bundle file the sidecars load: the run's, or
	// the round's own when a rotation rewrites it.
	bundle     string
	rotates    bool
	bundleKeys []jwk.Key // what the round's bundle file holds
	bundleSum  string    // its SHA-256, hex
	// trustVersion counts the changes of the bundle file and of the
	// trust pins (an operator's accept, a store loss).
	trustVersion int

	q   queue
	tie *rand.Rand
	seq uint64
	res roundResult
	// saved: the registry's state was saved (evSnapshot) and a restore
	// has something to put back.
	saved bool
	// signer is what the registry signs with now (the rotated key after
	// a rotation's restart).
	signer *keys.Signer
	cur    delivery // the request the sidecar is serving now
	// pending counts the scheduled steps that are not background work
	// (loop passes, the operator's looks): the round ends when none is
	// left and the background has nothing to settle.
	pending int
	// receipts is every receipt a sidecar stored, by (fence, seq).
	receipts map[receiptKey]store.Receipt
	// lostAt is when the fenced store was last lost (FaultStoreLoss): the
	// receipts it held then went with it. A mutation in flight or unknown
	// at a loss is not exempt: the anchor brings it back UNKNOWN.
	lostAt time.Duration
	lost   bool
	noted  map[receiptKey]time.Duration // when each receipt was stored
	unk    *unknownEpisode
	// looking: the operator has a look scheduled; lossLooking: one at a
	// store loss.
	looking, lossLooking bool
	seed                 uint64
	// api is the registry's HTTP API for SDK workers, built for apiFor.
	api    http.Handler
	apiFor *registry.Registry
}

type receiptKey struct{ fence, seq uint64 }

// unknownEpisode is a mutation of the main resource whose outcome no
// sidecar knows: left UNKNOWN (or in flight by a dead process) at the end
// of a step, until it is settled.
type unknownEpisode struct {
	op    string
	since time.Duration
}

// delivery is the context of the request a sidecar is serving: the faults
// of its links to the registry and the backend.
type delivery struct {
	replica    int
	fault      backendFault
	statusDrop bool
	crashed    bool
	// storeMid loses the store while the request is at the backend.
	storeMid, storeRestore bool
	// late: the backend applies the write this long after receiving it.
	late time.Duration
}

func (r *round) now() time.Duration { return r.clk.Now().Sub(r.start) }
func (r *round) nowMs() int64       { return r.clk.Now().UnixMilli() }
func (r *round) startMs() int64     { return r.start.UnixMilli() }

func (r *round) logf(format string, args ...any) {
	if !r.trace && r.res.hist == nil {
		return
	}
	line := fmt.Sprintf("%9s  ", r.now()) + fmt.Sprintf(format, args...)
	if r.res.hist != nil {
		r.res.hist.Write([]byte(line))
		r.res.hist.Write([]byte{'\n'})
	}
	if r.trace {
		r.res.History = append(r.res.History, line)
	}
}

// violate counts a broken invariant.
func (r *round) violate(counter *int, what string) {
	*counter++
	r.res.Violations = append(r.res.Violations, fmt.Sprintf("at %s: %s", r.now(), what))
	r.logf("VIOLATION: %s", what)
}

// at schedules fn at virtual time t (never before now).
func (r *round) at(t time.Duration, what string, fn func()) {
	r.seq++
	r.pending++
	r.q.push(&item{at: max(t, r.now()), tie: r.tie.Uint64(), seq: r.seq, what: what, fn: fn})
}

func (r *round) after(d time.Duration, what string, fn func()) { r.at(r.now()+d, what, fn) }

// background schedules a step of background work at t: it does not keep
// the round going by itself (see pending).
func (r *round) background(t time.Duration, what string, fn func()) {
	r.seq++
	r.q.push(&item{at: max(t, r.now()), tie: r.tie.Uint64(), seq: r.seq, what: what, fn: fn, bg: true})
}

// runRound builds a world for sc and runs it to the end.
func runRound(m *materials, sc script, seed uint64, sab Sabotage, trace bool, hist bool) (_ roundResult, err error) {
	r := &round{m: m, sc: sc, sabotage: sab, trace: trace, clk: newSimClock(), or: newOracle(),
		tie: rand.New(rand.NewPCG(seed, 0x71e)), receipts: map[receiptKey]store.Receipt{}, bundle: m.bundlePath, seed: seed,
		noted: map[receiptKey]time.Duration{}}
	r.res.Codes, r.res.Seen = map[string]int{}, map[string]int{}
	if hist {
		r.res.hist = sha256.New()
	}
	r.start = r.clk.Now()
	r.rnd = rand.NewChaCha8(seedBytes(seed))
	if r.rs, err = newRegistryStoreOf(m, seed); err != nil {
		return r.res, err
	}
	defer func() {
		if cerr := r.rs.close(); err == nil {
			err = cerr
		}
	}()
	r.signer = m.signer
	if r.reg, err = newRegistry(r.signer, r.rs, r.clk, r.rnd); err != nil {
		return r.res, err
	}
	for _, e := range sc.Events {
		r.rotates = r.rotates || e.Kind == evRotate && e.Step != 2
	}
	if r.rotates {
		// The rotation rewrites the bundle file: this round's own.
		r.bundle = filepath.Join(m.dir, fmt.Sprintf("jwks-%016x.json", seed))
		r.bundleKeys = []jwk.Key{m.trustKey}
		if err := r.writeBundle(); err != nil {
			return r.res, err
		}
		defer os.Remove(r.bundle)
	}
	if r.st, err = newSharedStoreOf(m, r.clk, seed); err != nil {
		return r.res, err
	}
	defer func() {
		if cerr := r.st.close(); err == nil {
			err = cerr
		}
	}()
	r.back = newBackend(r)
	for i := range sc.Config.Replicas {
		r.sidecars = append(r.sidecars, &sidecar{clk: offsetClock{base: r.clk, off: sc.Config.Offsets[i]}})
	}
	// Replica 0 starts at once (the operator's sidecar); the others on
	// their first request (a start costs a trust-bundle load).
	if err := r.restartSidecar(0); err != nil {
		return r.res, err
	}
	r.schedule()
	if err := r.loop(); err != nil {
		return r.res, err
	}
	r.finish()
	return r.res, nil
}

// loop runs the queue's steps in order until none is left, and returns
// the first failure of the simulation itself (r.err). A round whose step
// failed runs on to its end all the same (its result is not used): an SDK
// worker's goroutine ends only with its last step.
func (r *round) loop() error {
	for r.q.Len() > 0 {
		it := r.q.pop()
		if !it.bg {
			r.pending--
		}
		if t := r.start.Add(it.at); t.After(r.clk.Now()) {
			r.clk.AdvanceTo(t)
		}
		it.fn()
		r.trackUnknown()
	}
	return r.err
}

// writeBundle writes the round's bundle file from bundleKeys.
func (r *round) writeBundle() error {
	set, err := keys.Bundle(false, r.bundleKeys...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	b, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	sum := sha256.Sum256(b)
	r.bundleSum = hex.EncodeToString(sum[:])
	r.trustVersion++
	return writeFile(r.bundle, b)
}

func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return nil
}

func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	for i := range 4 {
		v := mix(seed, 100+uint64(i))
		for b := range 8 {
			s[i*8+b] = byte(v >> (8 * b))
		}
	}
	return s
}

// restartSidecar starts a new sidecar process for replica i over the
// shared store; the old process, if any, is dead. The new process's
// background loops start with it.
func (r *round) restartSidecar(i int) error {
	sc := r.sidecars[i]
	if sc.st != nil {
		sc.st.dead = true
		r.checkCoverage(i)
	}
	st, gen, err := r.st.process()
	if err != nil {
		return err
	}
	ps := &processStore{Store: st, r: r, sab: r.sabotage, gen: gen}
	cfg := proxyConfig(r.m, r.sc.Config, r.sabotage, r.bundle)
	cfg.Trust.ReloadInterval = trustReload
	bound := authn.NewTimeBound(sc.clk, cfg.Trust.ClockSkew)
	an, err := r.openAnchor(i, ps, sc.clk, cfg.RepairWindow(), bound)
	if err != nil {
		return err
	}
	opts := proxy.Options{
		Config: cfg, Store: an, Status: registryStatus{r},
		Transport: r.back, Clock: sc.clk, Metrics: discardMetrics{},
		FirstUseAllowed: func(context.Context) (bool, error) { return an.Lost() == nil, nil },
		TimeBound:       bound,
	}
	if r.sabotage == SabotageUnanchored {
		// The broken part: the store used as it is, without its anchor.
		opts.Store, opts.FirstUseAllowed = ps, nil
	}
	if r.sabotage == SabotageNoTimeBound {
		// The broken part: proof windows judged by the local clock alone.
		opts.TimeBound = nil
	}
	p, err := proxy.New(opts)
	if err != nil {
		return fmt.Errorf("%w: sidecar: %w", ErrSetup, err)
	}
	sc.p, sc.st, sc.sent, sc.an, sc.bound = p, ps, 0, an, bound
	sc.life++
	r.startLoops(i)
	return nil
}

// checkCoverage cross-checks replica i's current process: every mutation
// the backend received from it must be counted by the sidecar's own
// Coverage as having passed grant authentication and the fence check.
func (r *round) checkCoverage(i int) {
	sc := r.sidecars[i]
	if sc.p == nil {
		return
	}
	c := sc.p.Coverage()
	if c.Forwarded != sc.sent || c.Covered != sc.sent {
		r.violate(&r.res.Skipped, fmt.Sprintf("sidecar replica %d (process %d): the backend received %d mutations from it, its Coverage counts %d forwarded, %d covered",
			i, sc.life, sc.sent, c.Forwarded, c.Covered))
	}
}

// proxyOf is replica i's running sidecar, started if it has not been.
func (r *round) proxyOf(i int) (*proxy.Proxy, error) {
	if r.sidecars[i].p == nil {
		if err := r.restartSidecar(i); err != nil {
			return nil, err
		}
	}
	return r.sidecars[i].p, nil
}

// schedule puts the script's absolute events on the queue and hands each
// owner its relative ones.
func (r *round) schedule() {
	for i := 0; i < 4; i++ {
		r.owners = append(r.owners, &owner{r: r, id: i, name: "worker-" + ownerName(i), seq: 1})
	}
	steps := map[kind]func(event){evAcquire: r.acquire, evCrash: r.crash,
		evSnapshot: r.snapshot, evRestore: r.restore, evAttack: r.attack, evStoreSave: r.storeSave,
		evStoreLoss: r.storeLoss, evRotate: r.rotate}
	for _, e := range r.sc.Events {
		e := e
		if e.Kind.relative() {
			o := r.owners[e.Owner]
			o.plan = append(o.plan, e)
			continue
		}
		fn := steps[e.Kind]
		r.at(e.At, "script", func() { r.logf("%v", e); fn(e) })
	}
}

// acquire starts an owner: a scripted worker asks for the lease; an SDK
// worker (roundConfig.SDK) starts its program.
func (r *round) acquire(e event) {
	o := r.owners[e.Owner]
	if r.sc.Config.SDK[e.Owner] {
		r.startSDK(o, e)
		return
	}
	o.acquire(e)
}

// crash restarts a sidecar replica: the new process has lost the old
// one's memory (learned epochs, ended grants); the store is shared.
func (r *round) crash(e event) {
	i := e.Replica % len(r.sidecars)
	if r.sidecars[i].p == nil {
		return // never started: nothing to lose
	}
	r.logf("sidecar replica %d restarts (its memory is lost)", i)
	if err := r.restartSidecar(i); err != nil {
		r.violate(&r.res.Skipped, err.Error())
	}
}

// wire is a request as a worker sent it; it can be delivered more than
// once (a duplicate).
type wire struct {
	path   string
	header http.Header
	body   []byte
}

func newWire(path, owner, grant, proof string, seq uint64, body []byte) wire {
	h := http.Header{}
	h.Set(fencegate.HeaderGrant, grant)
	h.Set(fencegate.HeaderSegment, strconv.FormatUint(seq, 10))
	if proof != "" {
		h.Set(fencegate.HeaderStatus, proof)
	}
	h.Set(identity.DefaultHeader, owner)
	sum := sha256.Sum256(body)
	h.Set(fencegate.HeaderDigest, "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
	return wire{path: path, header: h, body: body}
}

// outcome is the sidecar's answer as the worker would read it.
type outcome struct {
	status int
	code   fencegate.Code
}

// key names the answer in Report.Codes.
func (o outcome) key() string {
	if o.code != "" {
		return string(o.code)
	}
	return strconv.Itoa(o.status)
}

func (o outcome) String() string {
	if o.code != "" {
		return fmt.Sprintf("%d %s", o.status, o.code)
	}
	return strconv.Itoa(o.status)
}

// authCodes are the answers of steps 6.3 and 6.4: they must change
// nothing in the store.
var authCodes = map[fencegate.Code]bool{
	fencegate.CodeGrantRequired: true, fencegate.CodeGrantInvalid: true, fencegate.CodeIdentityRequired: true,
	fencegate.CodeResourceMismatch: true, fencegate.CodeOwnerMismatch: true, fencegate.CodeEpochRevoked: true,
	fencegate.CodePolicyMismatch: true, fencegate.CodeGrantNotHeld: true, fencegate.CodeStatusStale: true,
	fencegate.CodeRegistryUnavailable: true,
}

// serve delivers a write to sidecar replica i now, with the link faults
// of d, and checks what the answer must not have changed.
func (r *round) serve(w wire, replica int, d delivery) outcome {
	req := httptest.NewRequest(http.MethodPut, w.path, strings.NewReader(string(w.body)))
	req.Header = w.header.Clone()
	_, out := r.serveReq(req, replica, d)
	return out
}

// serveReq is serve for any request to the sidecar: a write of a worker,
// scripted or the SDK's. It returns the sidecar's answer as recorded.
func (r *round) serveReq(req *http.Request, replica int, d delivery) (*httptest.ResponseRecorder, outcome) {
	r.res.Attempted++
	replica %= len(r.sidecars)
	d.replica = replica
	r.cur = d
	resource := mainResource
	ctx := context.Background()
	before, _ := r.st.Record(ctx, resource)
	rec := httptest.NewRecorder()
	p, err := r.proxyOf(replica)
	if err != nil {
		r.violate(&r.res.Skipped, err.Error())
		rec.WriteHeader(http.StatusServiceUnavailable)
		return rec, outcome{}
	}
	p.ServeHTTP(rec, req)
	out := outcome{status: rec.Code}
	defer func() { r.res.Codes[out.key()]++ }()
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/problem+json") {
		var p struct {
			Code fencegate.Code `json:"code"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		out.code = p.Code
	}
	after, _ := r.st.Record(ctx, resource)
	if authCodes[out.code] && !reflect.DeepEqual(before, after) {
		r.violate(&r.res.AuthChanged, fmt.Sprintf("a %s answer changed the store's record of %s (highest fence %d -> %d, paused %v -> %v, last segment %d -> %d)",
			out.code, resource, before.HighestFence, after.HighestFence, before.Pause != nil, after.Pause != nil, before.LastSeq, after.LastSeq))
	} else if out.code == fencegate.CodeStaleOwner && before.HighestFence != after.HighestFence {
		r.violate(&r.res.AuthChanged, fmt.Sprintf("a STALE_OWNER answer changed the highest fence of %s", resource))
	}
	crashed := r.cur.crashed
	r.cur = delivery{}
	if crashed {
		r.logf("sidecar replica %d restarts after its crash", replica)
		if err := r.restartSidecar(replica); err != nil {
			r.violate(&r.res.Skipped, err.Error())
		}
	}
	return rec, out
}
