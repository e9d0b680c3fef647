package registrytest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/verify"
)

// Opener opens one backend's state. The suite calls the factory given to
// Run once per subtest, so every subtest starts from an empty state.
type Opener struct {
	// Open opens the state. The first call creates it; a durable backend
	// must reopen the same state on every later call (made only after the
	// backend returned before has been closed), as a restarted registry
	// process would.
	Open func() (registry.Backend, error)
	// NotDurable, when not empty, says why the state cannot be reopened
	// (the memory backend keeps nothing); restart subtests are skipped
	// with this reason and Open is called only once.
	NotDurable string
	// Shared, when set, opens another backend on the same state while the
	// one Open returned is open, as a second registry process sharing it
	// would (Redis). The suite closes what it returns. Without it, the
	// subtests that race two processes race two Registries over the one
	// backend.
	Shared func() (registry.Backend, error)
	// RaceLimit bounds, in real time, how long each concurrent race of the
	// suite (many workers deciding on one resource) may run before it
	// counts as hung (livenessLimit when zero). It turns a hang into a
	// failure and asserts nothing about speed: a backend whose every
	// decision is several quorum round trips (etcd on three members) takes
	// longer than 20 s for the 160 grants under -race on a loaded machine.
	RaceLimit time.Duration
}

// Registry options used by the suite.
const (
	// MinTTL is the shortest lease TTL the suite's registry accepts.
	MinTTL = 100 * time.Millisecond
	// MaxTTL is the longest lease TTL the suite's registry accepts.
	MaxTTL = 10 * time.Minute
	// DefaultTTL applies to acquires that give no TTL.
	DefaultTTL = 10 * time.Second
	// MaxWait bounds a waiting acquire.
	MaxWait = time.Minute
	// MaxProofTTL bounds a status proof's lifetime.
	MaxProofTTL = 5 * time.Second
	// Issuer is the "iss" of the suite's grants and proofs.
	Issuer = "https://registry.fencegate.test"
)

// livenessLimit bounds, in real time, how long the suite waits for
// something that must happen (a waiter to be queued, a handoff). It only
// turns a hang into a failure; nothing is asserted about durations.
const livenessLimit = 20 * time.Second

// Keys is a signing key and the trust bundle that verifies it.
type Keys struct {
	// Signer signs grants and status proofs.
	Signer *keys.Signer
	// Bundle is the trust bundle holding the signer's public key.
	Bundle *verify.Bundle
}

// NewKeys generates an EdDSA (Ed25519) signing key with package keys and
// its trust bundle.
func NewKeys(t testing.TB) Keys {
	t.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	signer, err := keys.NewSigner(key)
	if err != nil {
		t.Fatalf("signer: %v", err)
	}
	set, err := keys.Bundle(false, key)
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	b, err := verify.NewBundle(set)
	if err != nil {
		t.Fatalf("verify bundle: %v", err)
	}
	return Keys{Signer: signer, Bundle: b}
}

// Run runs the conformance suite. open is called at the start of every
// subtest (with that subtest's t, so it may use t.TempDir) and must return
// an Opener for a new, empty state.
func Run(t *testing.T, open func(t *testing.T) Opener) {
	k := NewKeys(t)
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, k, open(t))
			c.fn(t, e)
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// cases lists the subtests in the order Run runs them.
func cases() []testCase {
	return []testCase{
		{"FenceMonotonic", testFenceMonotonic},
		{"Idempotency", testIdempotency},
		{"ConcurrentAcquirers", testConcurrentAcquirers},
		{"ConcurrentExpiry", testConcurrentExpiry},
		{"ClockSteppedBack", testClockSteppedBack},
		{"ClockSteppedForward", testClockSteppedForward},
		{"ClockSteppedBackAcrossRestart", testClockSteppedBackAcrossRestart},
		{"Renew", testRenew},
		{"RenewKeepsTTL", testRenewKeepsTTL},
		{"Release", testRelease},
		{"WaitHandoffOnRelease", testWaitHandoffOnRelease},
		{"WaitHandoffOnExpiry", testWaitHandoffOnExpiry},
		{"WaitFIFO", testWaitFIFO},
		{"WaitTimeout", testWaitTimeout},
		{"WaitCancel", testWaitCancel},
		{"WaitWakesOnRevocation", testWaitWakesOnRevocation},
		{"StatusProof", testStatusProof},
		{"ProofAfterSlowAcquire", testProofAfterSlowAcquire},
		{"FenceFloor", testFenceFloor},
		{"FenceExhausted", testFenceExhausted},
		{"EpochBump", testEpochBump},
		{"RevokeLease", testRevokeLease},
		{"RevokeWakesWaiter", testRevokeWakesWaiter},
		{"ListLeases", testListLeases},
		{"PolicyEnforced", testPolicyEnforced},
		{"PolicyGeneration", testPolicyGeneration},
		{"PolicyRevokes", testPolicyRevokes},
		{"BadInput", testBadInput},
		{"BadInputBackend", testBadInputBackend},
		{"Restart", testRestart},
		{"Compact", testCompact},
		{"Closed", testClosed},
		{"Lineage", testLineage},
		{"LineageInit", testLineageInit},
		{"LineageRace", testLineageRace},
		{"AnchorRegister", testAnchorRegister},
		{"AnchorPolicy", testAnchorPolicy},
		{"AnchorSteps", testAnchorSteps},
		{"AnchorLedger", testAnchorLedger},
		{"AnchorRestart", testAnchorRestart},
		{"AnchorFullBatch", testAnchorFullBatch},
		{"AnchorConcurrent", testAnchorConcurrent},
	}
}

// env is one subtest's registry over one backend state.
type env struct {
	t      *testing.T
	keys   Keys
	opener Opener
	clock  *clocktest.Clock
	ctx    context.Context

	mu   sync.Mutex // guards be, reg, prom, stopRun, seen
	be   registry.Backend
	reg  *registry.Registry
	prom *prometheus.Registry
	// stopRun stops reg's Run (Start), before be is closed.
	stopRun func()
	// seen is every fence issued per resource, in the order recorded.
	seen map[string][]uint64
}

func newEnv(t *testing.T, k Keys, o Opener) *env {
	t.Helper()
	if o.Open == nil {
		t.Fatal("registrytest: Opener.Open is nil")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{t: t, keys: k, opener: o, clock: clocktest.New(time.Time{}), ctx: ctx, seen: map[string][]uint64{}}
	e.open()
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.stopRun != nil {
			e.stopRun()
		}
		if e.be != nil {
			if err := e.be.Close(); err != nil {
				t.Errorf("close backend: %v", err)
			}
			e.be = nil
		}
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	be, err := e.opener.Open()
	if err != nil {
		e.t.Fatalf("open backend: %v", err)
	}
	prom := prometheus.NewRegistry()
	reg, err := registry.New(registry.Options{
		Backend:     be,
		Signer:      e.keys.Signer,
		Issuer:      Issuer,
		Clock:       e.clock,
		DefaultTTL:  DefaultTTL,
		MinTTL:      MinTTL,
		MaxTTL:      MaxTTL,
		MaxWait:     MaxWait,
		MaxProofTTL: MaxProofTTL,
		Metrics:     prom,
	})
	if err != nil {
		be.Close()
		e.t.Fatalf("registry.New: %v", err)
	}
	stop := Start(e.t, reg)
	e.mu.Lock()
	e.be, e.reg, e.prom, e.stopRun = be, reg, prom, stop
	e.mu.Unlock()
}

// registry returns the current registry (it changes on restart).
func (e *env) registry() *registry.Registry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reg
}

func (e *env) backend() registry.Backend {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.be
}

// requireDurable skips t unless the backend can be reopened.
func (e *env) requireDurable(t *testing.T) {
	t.Helper()
	if e.opener.NotDurable != "" {
		t.Skip("backend cannot reopen its state: " + e.opener.NotDurable)
	}
}

// restart closes the backend and opens it again with a new Registry, as a
// restarted registry process would (same key, same clock).
func (e *env) restart(t *testing.T) {
	t.Helper()
	e.requireDurable(t)
	e.mu.Lock()
	be, stop := e.be, e.stopRun
	e.be = nil
	e.mu.Unlock()
	stop()
	if err := be.Close(); err != nil {
		t.Fatalf("close before restart: %v", err)
	}
	e.open()
}

// waiting reads the registry's waiting-acquires gauge.
func (e *env) waiting(t testing.TB) int {
	t.Helper()
	e.mu.Lock()
	prom := e.prom
	e.mu.Unlock()
	mfs, err := prom.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "fencegate_registry_waiting_acquires" && len(mf.GetMetric()) == 1 {
			return int(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	t.Fatal("metric fencegate_registry_waiting_acquires not found")
	return 0
}

// waitQueued waits until n acquires are waiting.
func (e *env) waitQueued(t testing.TB, n int) {
	t.Helper()
	waitFor(t, "waiting acquires to reach "+itoa(n), func() bool { return e.waiting(t) == n })
}

// record notes a newly issued fence of resource and fails t unless it is
// greater than every fence recorded before for that resource.
func (e *env) record(t testing.TB, resource string, fence uint64) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.seen[resource]
	if n := len(prev); n > 0 && fence <= prev[n-1] {
		t.Errorf("resource %s: fence %d issued after fence %d (fences so far %v)", resource, fence, prev[n-1], prev)
	}
	for _, f := range prev {
		if f == fence {
			t.Errorf("resource %s: fence %d issued twice", resource, fence)
		}
	}
	e.seen[resource] = append(prev, fence)
}

// fences returns the fences recorded for resource.
func (e *env) fences(resource string) []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]uint64(nil), e.seen[resource]...)
}

// tryAcquire calls Registry.Acquire; on success it checks the result and,
// for a new grant, records its fence.
func (e *env) tryAcquire(t testing.TB, req registry.AcquireRequest) (registry.Result, error) {
	t.Helper()
	res, err := e.registry().Acquire(e.ctx, req)
	if err != nil {
		return res, err
	}
	e.checkResult(t, res)
	if res.View.Lease.Owner != req.Owner || res.View.Lease.Resource != req.Resource || res.View.Lease.RequestID != req.RequestID {
		t.Errorf("acquire %+v answered with lease of %s/%s/%s", req, res.View.Lease.Resource, res.View.Lease.Owner, res.View.Lease.RequestID)
	}
	if !res.Existing {
		if res.View.State != fencegate.StateHeld {
			t.Errorf("new grant %s is %s, want HELD", res.View.Lease.Lease, res.View.State)
		}
		e.record(t, req.Resource, res.View.Lease.Fence)
	}
	return res, nil
}

// acquire is tryAcquire that fails t on error.
func (e *env) acquire(t testing.TB, req registry.AcquireRequest) registry.Result {
	t.Helper()
	res, err := e.tryAcquire(t, req)
	if err != nil {
		t.Fatalf("acquire %s by %s (%s): %v", req.Resource, req.Owner, req.RequestID, err)
	}
	return res
}

func (e *env) release(t testing.TB, res registry.Result) registry.Result {
	t.Helper()
	out, err := e.registry().Release(e.ctx, res.View.Lease.Owner, res.View.Lease.Lease)
	if err != nil {
		t.Fatalf("release %s: %v", res.View.Lease.Lease, err)
	}
	e.checkResult(t, out)
	return out
}

func (e *env) status(t testing.TB, res registry.Result) registry.Result {
	t.Helper()
	out, err := e.registry().Status(e.ctx, registry.LeaseQuery{Lease: res.View.Lease.Lease})
	if err != nil {
		t.Fatalf("status of %s: %v", res.View.Lease.Lease, err)
	}
	e.checkResult(t, out)
	return out
}

func (e *env) meta(t testing.TB) registry.Meta {
	t.Helper()
	m, err := e.backend().Meta(e.ctx)
	if err != nil {
		t.Fatalf("meta: %v", err)
	}
	return m
}

func (e *env) resource(t testing.TB, resource string) registry.ResourceView {
	t.Helper()
	v, err := e.backend().Resource(e.ctx, resource, e.clock.Now())
	if err != nil {
		t.Fatalf("resource %q: %v", resource, err)
	}
	return v
}

// snapshot is the backend state the suite compares before and after an
// operation that must change nothing.
type snapshot struct {
	Meta      registry.Meta
	Resources map[string]registry.ResourceView
	Policies  []fencegate.Policy
}

func (e *env) snapshot(t testing.TB, resources ...string) snapshot {
	t.Helper()
	s := snapshot{Meta: e.meta(t), Resources: map[string]registry.ResourceView{}}
	for _, r := range resources {
		v := e.resource(t, r)
		if v.Holder != nil { // the state as stored, not when it was read
			h := *v.Holder
			h.At = time.Time{}
			v.Holder = &h
		}
		s.Resources[r] = v
	}
	ps, err := e.backend().Policies(e.ctx)
	if err != nil {
		t.Fatalf("policies: %v", err)
	}
	s.Policies = sortPolicies(ps)
	return s
}

func (e *env) unchanged(t testing.TB, what string, before snapshot) {
	t.Helper()
	names := make([]string, 0, len(before.Resources))
	for r := range before.Resources {
		names = append(names, r)
	}
	after := e.snapshot(t, names...)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("%s changed the state:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// checkResult verifies a Result as a client and a sidecar would: the grant
// and the proof authenticate with the trust bundle, describe the returned
// lease, and the proof is bounded: exp <= iat + MaxProofTTL and, for a
// HELD proof, exp <= the lease's expiry. A HELD proof passes
// verify.CheckStatus; any other state fails it with GRANT_NOT_HELD.
func (e *env) checkResult(t testing.TB, res registry.Result) (*fencegate.Grant, *fencegate.Status) {
	t.Helper()
	l := res.View.Lease
	g, digest, err := verify.ParseAndVerifyGrant(res.Grant, e.keys.Bundle)
	if err != nil {
		t.Errorf("grant of lease %s does not verify: %v", l.Lease, err)
		return nil, nil
	}
	if digest != l.Digest || string(res.Grant) != l.Token {
		t.Errorf("lease %s: grant digest %s, lease says %s", l.Lease, digest, l.Digest)
	}
	want := registry.GrantClaims(l, Issuer)
	if *g != want {
		t.Errorf("lease %s: grant claims\n%+v\nwant\n%+v", l.Lease, *g, want)
	}
	if g.Issuer != Issuer || g.FenceToken == 0 {
		t.Errorf("lease %s: bad grant iss %q fence %d", l.Lease, g.Issuer, g.FenceToken)
	}
	st, err := verify.ParseAndVerifyStatus(res.Status, e.keys.Bundle)
	if err != nil {
		t.Errorf("status proof of lease %s (state %s) does not verify: %v", l.Lease, res.View.State, err)
		return g, nil
	}
	if *st != res.StatusClaims {
		t.Errorf("lease %s: proof claims %+v, result says %+v", l.Lease, *st, res.StatusClaims)
	}
	if st.GrantDigest != digest || st.Resource != g.Resource || st.Lease != g.Lease || st.FenceToken != g.FenceToken {
		t.Errorf("lease %s: proof %+v is not bound to its grant %+v", l.Lease, *st, *g)
	}
	if st.State != res.View.State || st.IssuerEpoch != res.View.Meta.IssuerEpoch || st.PolicyGeneration != res.View.PolicyGeneration || st.BackendRevision != res.View.Meta.Revision {
		t.Errorf("lease %s: proof %+v does not state the view (state %s, meta %+v, policy generation %d)",
			l.Lease, *st, res.View.State, res.View.Meta, res.View.PolicyGeneration)
	}
	if st.ExpiresAt > st.IssuedAt+uint64(MaxProofTTL.Milliseconds()) {
		t.Errorf("lease %s: proof exp %d > iat %d + max proof TTL", l.Lease, st.ExpiresAt, st.IssuedAt)
	}
	policy := verify.StatusPolicy{MaxAge: MaxProofTTL}
	checkAt := time.UnixMilli(int64(st.IssuedAt))
	err = verify.CheckStatus(st, g, digest, checkAt, policy)
	if st.State == fencegate.StateHeld {
		if st.ExpiresAt > uint64(l.ExpiresAt) {
			t.Errorf("lease %s: HELD proof exp %d outlives the lease's expiry %d", l.Lease, st.ExpiresAt, l.ExpiresAt)
		}
		if int64(st.IssuedAt) >= l.ExpiresAt {
			t.Errorf("lease %s: HELD proof issued at %d, at or after the lease's expiry %d", l.Lease, st.IssuedAt, l.ExpiresAt)
		}
		if err != nil {
			t.Errorf("lease %s: HELD proof rejected by CheckStatus: %v", l.Lease, err)
		}
	} else if !errors.Is(err, verify.ErrGrantNotHeld) && !errors.Is(err, verify.ErrEpochRevoked) && !errors.Is(err, verify.ErrPolicyMismatch) {
		t.Errorf("lease %s: %s proof: CheckStatus = %v, want GRANT_NOT_HELD, EPOCH_REVOKED or POLICY_MISMATCH", l.Lease, st.State, err)
	}
	return g, st
}

// outcome is the answer of an acquire run in its own goroutine.
type outcome struct {
	idx int
	req registry.AcquireRequest
	res registry.Result
	err error
}

// goAcquire runs Acquire in a goroutine and sends its outcome on out (a
// new buffered channel when out is nil), which it returns.
func (e *env) goAcquire(ctx context.Context, idx int, req registry.AcquireRequest, out chan outcome) chan outcome {
	if out == nil {
		out = make(chan outcome, 1)
	}
	reg := e.registry()
	go func() {
		res, err := reg.Acquire(ctx, req)
		out <- outcome{idx: idx, req: req, res: res, err: err}
	}()
	return out
}

// raceLimit is the bound of a concurrent race (Opener.RaceLimit).
func (e *env) raceLimit() time.Duration {
	if e.opener.RaceLimit > 0 {
		return e.opener.RaceLimit
	}
	return livenessLimit
}

// await receives one outcome, failing t if none comes within the liveness
// limit.
func await(t testing.TB, ch <-chan outcome, what string) outcome {
	t.Helper()
	limit := realClock.NewTimer(livenessLimit)
	defer limit.Stop()
	select {
	case o := <-ch:
		return o
	case <-limit.C():
		t.Fatalf("gave up after %s waiting for %s", livenessLimit, what)
		return outcome{}
	}
}

// pending fails t if ch already holds an outcome.
func pending(t testing.TB, ch <-chan outcome, what string) {
	t.Helper()
	select {
	case o := <-ch:
		t.Fatalf("%s returned early: lease %+v, err %v", what, o.res.View.Lease, o.err)
	default:
	}
}

// granted checks that o is a new grant, verifies and records it.
func (e *env) granted(t testing.TB, o outcome) registry.Result {
	t.Helper()
	if o.err != nil {
		t.Fatalf("acquire %s by %s (%s): %v", o.req.Resource, o.req.Owner, o.req.RequestID, o.err)
	}
	if o.res.Existing {
		t.Fatalf("acquire %s by %s: answered with an existing lease", o.req.Resource, o.req.Owner)
	}
	e.checkResult(t, o.res)
	if l := o.res.View.Lease; l.Owner != o.req.Owner || l.Resource != o.req.Resource || l.RequestID != o.req.RequestID {
		t.Errorf("acquire %+v answered with lease of %s/%s/%s", o.req, l.Resource, l.Owner, l.RequestID)
	}
	e.record(t, o.req.Resource, o.res.View.Lease.Fence)
	return o.res
}

// otherProcess returns a Registry standing for a second registry process
// on the same state: over a second backend (Opener.Shared, closed at the
// end of the test) when the backend can be shared, else over the env's
// backend.
func (e *env) otherProcess(t *testing.T) *registry.Registry {
	t.Helper()
	be := e.backend()
	if e.opener.Shared != nil {
		var err error
		if be, err = e.opener.Shared(); err != nil {
			t.Fatalf("open a second process: %v", err)
		}
		t.Cleanup(func() { _ = be.Close() })
	}
	return e.newRegistry(t, be)
}

// newRegistry returns another Registry over be with the env's key and clock.
func (e *env) newRegistry(t testing.TB, be registry.Backend) *registry.Registry {
	t.Helper()
	return e.newRegistryOn(t, be, e.clock, prometheus.NewRegistry())
}

// newRegistryOn returns another Registry over be with the env's key, clk
// for its clock and its metrics registered in metrics.
func (e *env) newRegistryOn(t testing.TB, be registry.Backend, clk clock.Clock, metrics prometheus.Registerer) *registry.Registry {
	t.Helper()
	reg, err := registry.New(registry.Options{
		Backend: be, Signer: e.keys.Signer, Issuer: Issuer,
		Clock:      clk,
		DefaultTTL: DefaultTTL, MinTTL: MinTTL, MaxTTL: MaxTTL, MaxWait: MaxWait, MaxProofTTL: MaxProofTTL,
		Metrics: metrics,
	})
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	Start(t, reg)
	return reg
}
