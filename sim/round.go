package sim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/store"
)

// roundResult is what one round measured.
type roundResult struct {
	Attempted, Accepted                 int
	Stale, Forged, AuthChanged, Skipped int
	Gaps, Regressions, DataMismatch     int
	MaxUnknown                          time.Duration
	Handoffs                            []time.Duration
	Codes                               map[string]int
	Violations                          []string
	History                             []string
	hist                                hash.Hash
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

	clk      simClock
	start    time.Time
	reg      *registry.Registry
	rs       *memory.Store
	st       store.Store
	sidecars []*sidecar
	back     *backend
	or       *oracle
	owners   []*owner

	q    queue
	tie  *rand.Rand
	seq  uint64
	res  roundResult
	snap *memory.Snapshot
	cur  delivery // the request the sidecar is serving now
}

// delivery is the context of the request a sidecar is serving: the faults
// of its links to the registry and the backend.
type delivery struct {
	replica    int
	fault      backendFault
	statusDrop bool
	crashed    bool
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
	r.q.push(&item{at: max(t, r.now()), tie: r.tie.Uint64(), seq: r.seq, what: what, fn: fn})
}

func (r *round) after(d time.Duration, what string, fn func()) { r.at(r.now()+d, what, fn) }

// runRound builds a world for sc and runs it to the end.
func runRound(m *materials, sc script, seed uint64, sab Sabotage, trace bool, hist bool) (roundResult, error) {
	r := &round{m: m, sc: sc, sabotage: sab, trace: trace, clk: newSimClock(), or: newOracle(),
		tie: rand.New(rand.NewPCG(seed, 0x71e))}
	r.res.Codes = map[string]int{}
	if hist {
		r.res.hist = sha256.New()
	}
	r.start = r.clk.Now()
	var err error
	if r.reg, r.rs, err = newRegistry(m, r.clk, rand.NewChaCha8(seedBytes(seed))); err != nil {
		return r.res, err
	}
	r.st = newSharedStore()
	r.back = newBackend(r)
	for range sc.Config.Replicas {
		r.sidecars = append(r.sidecars, &sidecar{})
	}
	// Replica 0 starts at once (the operator's sidecar); the others on
	// their first request (a start costs a trust-bundle load).
	if err := r.restartSidecar(0); err != nil {
		return r.res, err
	}
	r.schedule()
	for r.q.Len() > 0 {
		it := r.q.pop()
		if t := r.start.Add(it.at); t.After(r.clk.Now()) {
			r.clk.AdvanceTo(t)
		}
		it.fn()
	}
	r.finish()
	return r.res, nil
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
// shared store; the old process, if any, is dead.
func (r *round) restartSidecar(i int) error {
	sc := r.sidecars[i]
	if sc.st != nil {
		sc.st.dead = true
		r.checkCoverage(i)
	}
	ps := &processStore{Store: r.st, sab: r.sabotage}
	p, err := proxy.New(proxy.Options{
		Config: proxyConfig(r.m, r.sc.Config, r.sabotage), Store: ps, Status: registryStatus{r},
		Transport: r.back, Clock: r.clk, Metrics: discardMetrics{},
	})
	if err != nil {
		return fmt.Errorf("%w: sidecar: %w", ErrSetup, err)
	}
	sc.p, sc.st, sc.sent = p, ps, 0
	sc.life++
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
	for _, e := range r.sc.Events {
		e := e
		if e.Kind.relative() {
			o := r.owners[e.Owner]
			o.plan = append(o.plan, e)
			continue
		}
		if e.Kind != evAcquire {
			fn := map[kind]func(event){evCrash: r.crash, evSnapshot: r.snapshot, evRestore: r.restore, evAttack: r.attack}[e.Kind]
			r.at(e.At, "script", func() { r.logf("%v", e); fn(e) })
			continue
		}
		switch e.Kind {
		case evAcquire:
			r.at(e.At, "script", func() { r.logf("%v", e); r.owners[e.Owner].acquire(e) })
		}
	}
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
// given, and checks what the answer must not have changed.
func (r *round) serve(w wire, replica int, fault backendFault, statusDrop bool) outcome {
	r.res.Attempted++
	replica %= len(r.sidecars)
	r.cur = delivery{replica: replica, fault: fault, statusDrop: statusDrop}
	resource := mainResource
	ctx := context.Background()
	before, _ := r.st.Record(ctx, resource)
	req := httptest.NewRequest(http.MethodPut, w.path, strings.NewReader(string(w.body)))
	req.Header = w.header.Clone()
	rec := httptest.NewRecorder()
	p, err := r.proxyOf(replica)
	if err != nil {
		r.violate(&r.res.Skipped, err.Error())
		return outcome{}
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
	if out.code == fencegate.CodeMutationUnknown && out.status == http.StatusGatewayTimeout || crashed {
		r.operatorSoon(crashed)
	}
	if crashed {
		r.logf("sidecar replica %d restarts after its crash", replica)
		if err := r.restartSidecar(replica); err != nil {
			r.violate(&r.res.Skipped, err.Error())
		}
	}
	return out
}
