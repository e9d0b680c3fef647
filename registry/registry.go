package registry

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/keys"
)

// Options configure a Registry. Backend and Signer are required.
type Options struct {
	Backend Backend
	Signer  *keys.Signer
	// Issuer is the "iss" of every grant and proof.
	Issuer string
	// Clock is the registry's time and timers. Default: clock.Monotonic(),
	// the process's monotonic clock anchored at the wall time of New, so a
	// wall-clock step while running never shortens or extends a lease.
	Clock clock.Clock
	// MaxClockSkew is how far this process's clock may be behind the
	// other processes' sharing the backend: a step decides at its clock
	// raised toward the registry's time by at most this much
	// (DecisionTime, time.go). Default DefaultMaxClockSkew (1 s); keep it
	// at most the sidecars' trust.clockSkew.
	MaxClockSkew time.Duration
	// Rand is the source of lease and grant IDs (default crypto/rand).
	Rand io.Reader
	// DefaultTTL applies when an acquire gives none; MinTTL and MaxTTL bound
	// every TTL (policies may narrow them further).
	DefaultTTL, MinTTL, MaxTTL time.Duration
	// MaxWait bounds a waiting acquire.
	MaxWait time.Duration
	// MaxProofTTL bounds a status proof's lifetime (exp - iat); a proof
	// never outlives its lease either.
	MaxProofTTL time.Duration
	// ProofReuse lets a status read answer with a proof signed at most this
	// long ago when it states exactly what the read found (proofcache.go
	// says why that stays linearizable). Default MaxProofTTL/20 (250 ms);
	// negative: sign every answer. At most MaxProofTTL/4, and below every
	// sidecar route's status.maxAge (default 5 s).
	ProofReuse time.Duration
	Logger     *zap.Logger
	// Metrics is where the registry's collectors are registered (required
	// to be non-global in tests: pass prometheus.NewRegistry()).
	Metrics prometheus.Registerer
}

// Defaults for Options.
const (
	DefaultTTL         = 10 * time.Second
	DefaultMinTTL      = 100 * time.Millisecond
	DefaultMaxTTL      = 10 * time.Minute
	DefaultMaxWait     = 60 * time.Second
	DefaultMaxProofTTL = 5 * time.Second
	// DefaultProofReuseDivisor: the default ProofReuse is MaxProofTTL over it.
	DefaultProofReuseDivisor = 20
	DefaultIssuer            = "fencegate-registry"
)

// Registry is the grant registry service. It is safe for concurrent use.
type Registry struct {
	opt     Options
	log     *zap.Logger
	m       *metrics
	waiters *waitQueues
	randMu  sync.Mutex
	// proofs reuses recent status proofs (nil: sign every answer).
	proofs *proofCache
	// behind: the last step found this process's clock behind the
	// registry's time beyond MaxClockSkew (registry_clock.go).
	behind atomic.Bool
}

// New returns a Registry over opts.Backend. It starts nothing: the
// background work of a registry (the wake-ups from other processes
// sharing the backend, the backend's own loops) runs in Run. A Registry
// serves without Run; see Run for what is then missing.
func New(opts Options) (*Registry, error) {
	if opts.Backend == nil || opts.Signer == nil {
		return nil, fmt.Errorf("%w: backend and signer are required", ErrInvalidInput)
	}
	if opts.Issuer == "" {
		opts.Issuer = DefaultIssuer
	}
	if opts.Clock == nil {
		opts.Clock = clock.Monotonic()
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	setDefault(&opts.DefaultTTL, DefaultTTL)
	setDefault(&opts.MinTTL, DefaultMinTTL)
	setDefault(&opts.MaxTTL, DefaultMaxTTL)
	setDefault(&opts.MaxWait, DefaultMaxWait)
	setDefault(&opts.MaxProofTTL, DefaultMaxProofTTL)
	if opts.MaxClockSkew < 0 {
		return nil, fmt.Errorf("%w: max clock skew %s is negative", ErrInvalidInput, opts.MaxClockSkew)
	}
	setDefault(&opts.MaxClockSkew, DefaultMaxClockSkew)
	if opts.MinTTL > opts.MaxTTL || opts.DefaultTTL < opts.MinTTL || opts.DefaultTTL > opts.MaxTTL {
		return nil, fmt.Errorf("%w: TTL bounds: need minTTL <= defaultTTL <= maxTTL", ErrInvalidInput)
	}
	if opts.ProofReuse == 0 {
		opts.ProofReuse = opts.MaxProofTTL / DefaultProofReuseDivisor
	}
	if opts.ProofReuse > opts.MaxProofTTL/4 {
		return nil, fmt.Errorf("%w: proof reuse %s exceeds a quarter of the proof TTL %s", ErrInvalidInput, opts.ProofReuse, opts.MaxProofTTL)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	r := &Registry{opt: opts, log: opts.Logger, waiters: newWaitQueues(),
		proofs: newProofCache(opts.ProofReuse, defaultProofCacheEntries)}
	m, err := newMetrics(opts.Metrics, func() float64 { return float64(r.waiters.waiting()) })
	if err != nil {
		return nil, fmt.Errorf("registry: metrics: %w", err)
	}
	r.m = m
	return r, nil
}

// notifyOthers tells the other registry processes sharing the backend (a
// Notifier) that a lease on resource ended ("" = every resource). A lost
// notification only delays their waiters until their own timers.
func (r *Registry) notifyOthers(ctx context.Context, resource string) {
	n, ok := r.opt.Backend.(Notifier)
	if !ok {
		return
	}
	if err := n.Notify(ctx, resource); err != nil {
		r.log.Warn("lease end not notified to other registry processes", zap.String("resource", resource), zap.Error(err))
	}
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Now is the registry's time.
func (r *Registry) Now() time.Time { return r.opt.Clock.Now() }

// Clock is the registry's clock.
func (r *Registry) Clock() clock.Clock { return r.opt.Clock }

// Signer is the registry's signer.
func (r *Registry) Signer() *keys.Signer { return r.opt.Signer }

// AcquireRequest asks for a lease.
type AcquireRequest struct {
	Resource  string
	Owner     string
	RequestID string
	// OpClass defaults to "write".
	OpClass string
	// TTL defaults to Options.DefaultTTL.
	TTL time.Duration
	// Wait > 0 waits up to that long (bounded by MaxWait) for the holder to
	// release or expire; waiters are served in arrival order.
	Wait time.Duration
}

// BusyError is returned (wrapping ErrLeaseHeld) when the resource stays held.
type BusyError struct {
	Resource string
	// HolderExpiresAt is when the current holder's lease expires unless renewed.
	HolderExpiresAt time.Time
	// At is the registry's time when it found the resource held.
	At time.Time
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("registry: resource %s is held until %s", e.Resource, e.HolderExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) true.
func (e *BusyError) Unwrap() error { return ErrLeaseHeld }

func (r *Registry) newID(prefix string) (string, error) {
	b := make([]byte, 15)
	r.randMu.Lock()
	_, err := io.ReadFull(r.opt.Rand, b)
	r.randMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("registry: random ID: %w", err)
	}
	return prefix + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b), nil
}

// newLineage returns a fresh random issuer lineage: 32 lowercase hex
// digits (128 bits).
func (r *Registry) newLineage() (string, error) {
	b := make([]byte, 16)
	r.randMu.Lock()
	_, err := io.ReadFull(r.opt.Rand, b)
	r.randMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("registry: random lineage: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (r *Registry) ttl(d time.Duration) (time.Duration, error) {
	if d == 0 {
		return r.opt.DefaultTTL, nil
	}
	if d < r.opt.MinTTL || d > r.opt.MaxTTL {
		return 0, fmt.Errorf("%w: ttl %s outside [%s, %s]", ErrInvalidInput, d, r.opt.MinTTL, r.opt.MaxTTL)
	}
	return d, nil
}

// Acquire grants a lease on a resource. The same (owner, requestId)
// returns the same grant (a lost response is recovered by repeating the
// call or by Lookup). When the resource is held it returns a *BusyError,
// after waiting up to req.Wait for the holder to release or expire.
func (r *Registry) Acquire(ctx context.Context, req AcquireRequest) (Result, error) {
	if req.OpClass == "" {
		req.OpClass = "write"
	}
	ttl, err := r.ttl(req.TTL)
	if err != nil {
		return Result{}, err
	}
	if req.Wait < 0 || req.Wait > r.opt.MaxWait {
		return Result{}, fmt.Errorf("%w: wait %s outside [0, %s]", ErrInvalidInput, req.Wait, r.opt.MaxWait)
	}
	in := AcquireInput{Resource: req.Resource, Owner: req.Owner, RequestID: req.RequestID, OpClass: req.OpClass, TTL: ttl, Issuer: r.opt.Issuer}
	if req.Wait == 0 {
		res, at, err := r.tryAcquire(ctx, in)
		if err != nil {
			return Result{}, err
		}
		if res.Busy {
			return Result{}, r.busy(res, at)
		}
		return r.granted(res, at, false, time.Time{})
	}

	start := r.Now()
	deadline := r.opt.Clock.NewTimer(req.Wait)
	defer deadline.Stop()
	ch := r.waiters.enqueue(req.Resource)
	defer r.waiters.leave(req.Resource, ch)
	var expiry clock.Timer
	var expired <-chan time.Time
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-deadline.C():
			res, at, err := r.tryAcquire(ctx, in) // one last look: it may have just freed
			if err != nil {
				return Result{}, err
			}
			if res.Busy {
				return Result{}, r.busy(res, at)
			}
			return r.granted(res, at, true, start)
		case <-ch:
		case <-expired:
		}
		res, at, err := r.tryAcquire(ctx, in)
		if err != nil {
			return Result{}, err
		}
		if !res.Busy {
			return r.granted(res, at, true, start)
		}
		if expiry != nil {
			expiry.Stop()
		}
		// On this process's clock, read now (the clock may have moved
		// since the step): the step was busy, so the registry's time it
		// read is below the expiry (or this process is behind beyond its
		// budget), and its decisions reach the expiry when its clock does
		// unless another process commits a later time first.
		expiry = r.opt.Clock.NewTimer(time.Duration(res.Holder.ExpiresAt-ms(r.Now())) * time.Millisecond)
		expired = expiry.C()
	}
}

// tryAcquire makes one acquire attempt and also returns the time it was
// decided at: the proof of a grant states the lease at that time (a later
// time may already be past a short lease's expiry).
func (r *Registry) tryAcquire(ctx context.Context, in AcquireInput) (AcquireResult, time.Time, error) {
	var err error
	if in.LeaseID, err = r.newID("lease-"); err != nil {
		return AcquireResult{}, time.Time{}, err
	}
	if in.GrantID, err = r.newID("g-"); err != nil {
		return AcquireResult{}, time.Time{}, err
	}
	if in.Lineage, err = r.newLineage(); err != nil {
		return AcquireResult{}, time.Time{}, err
	}
	in.Now, in.MaxSkew = r.Now(), r.opt.MaxClockSkew
	res, err := r.opt.Backend.Acquire(ctx, in, r.seal)
	if err != nil {
		return res, in.Now, err
	}
	r.observeClock(in.Now, res.Meta)
	if res.Ended != nil {
		if res.Ended.State == fencegate.StateExpired {
			r.m.expiries.Inc()
		} else {
			r.m.revocations.WithLabelValues("lease").Inc()
		}
	}
	return res, laterOf(res.At, in.Now), nil
}

func (r *Registry) busy(res AcquireResult, at time.Time) error {
	r.m.busy.Inc()
	return &BusyError{Resource: res.Holder.Resource, HolderExpiresAt: time.UnixMilli(res.Holder.ExpiresAt), At: at}
}

func (r *Registry) granted(res AcquireResult, decidedAt time.Time, waited bool, start time.Time) (Result, error) {
	now := r.Now()
	r.m.grants.WithLabelValues(fmt.Sprint(res.Existing)).Inc()
	if res.Granted && waited {
		r.m.acquireWait.Observe(now.Sub(start).Seconds())
		if res.FreedAt > 0 {
			freed := time.UnixMilli(res.FreedAt)
			if freed.Before(start) {
				freed = start
			}
			r.m.handoff.Observe(max(0, now.Sub(freed).Seconds()))
		}
	}
	l := res.View.Lease
	if res.Granted {
		r.log.Info("grant issued", zap.String("resource", l.Resource), zap.String("owner", l.Owner),
			zap.String("lease", l.Lease), zap.Uint64("fence", l.Fence), zap.String("grantDigest", l.Digest),
			zap.Uint64("issuerEpoch", l.IssuerEpoch), zap.Int64("expiresAt", l.ExpiresAt))
	}
	out, err := r.prove(res.View, decidedAt)
	out.Existing = res.Existing
	return out, err
}

// Renew extends a held lease by ttl from now. A ttl of 0 keeps the lease's
// own TTL (the ttlMs of its grant, as etcd and Consul keep a lease's TTL on
// a keep-alive), never DefaultTTL: a renewal without a TTL must not shorten
// the lease. An explicit ttl must lie within [MinTTL, MaxTTL]; the
// resource's policy bounds apply to both. A lease that is no longer held
// gets ErrNotHeld and its state; it is never silently re-granted.
func (r *Registry) Renew(ctx context.Context, owner, lease string, ttl time.Duration) (Result, error) {
	if ttl != 0 {
		var err error
		if ttl, err = r.ttl(ttl); err != nil {
			return Result{}, err
		}
	}
	local := r.Now()
	res, err := r.opt.Backend.Renew(ctx, RenewInput{Lease: lease, Owner: owner, TTL: ttl, Now: local, MaxSkew: r.opt.MaxClockSkew})
	if err != nil {
		return Result{}, err
	}
	now := r.decided(local, res.View)
	if res.NotHeld {
		r.m.renewals.WithLabelValues("not_held").Inc()
		if res.View.State == fencegate.StateExpired {
			r.m.expiries.Inc()
			r.notifyOthers(ctx, res.View.Lease.Resource)
		}
		out, err := r.prove(res.View, now)
		if err != nil {
			return Result{}, err
		}
		return out, fmt.Errorf("%w: lease %s is %s", ErrNotHeld, res.View.Lease.Lease, res.View.State)
	}
	r.m.renewals.WithLabelValues("ok").Inc()
	return r.prove(res.View, now)
}

// Release ends a lease (idempotent) and hands the resource to the next waiter.
func (r *Registry) Release(ctx context.Context, owner, lease string) (Result, error) {
	local := r.Now()
	res, err := r.opt.Backend.Release(ctx, ReleaseInput{Lease: lease, Owner: owner, Now: local, MaxSkew: r.opt.MaxClockSkew})
	if err != nil {
		return Result{}, err
	}
	v := res.View
	now := r.decided(local, v)
	if res.Released {
		r.m.releases.Inc()
		r.log.Info("lease released", zap.String("resource", v.Lease.Resource), zap.String("lease", v.Lease.Lease), zap.Uint64("fence", v.Lease.Fence))
	}
	r.waiters.notify(v.Lease.Resource)
	if res.Released {
		r.notifyOthers(ctx, v.Lease.Resource)
	}
	return r.prove(v, now)
}

// Status reads a lease (by lease ID, grant digest or owner and request ID)
// in one linearizable read and returns it with a status proof signed now.
// The SDK reads its lease this way: it measures what remains of the lease
// from the proof's iat (client.remaining), so the proof must be fresh.
func (r *Registry) Status(ctx context.Context, q LeaseQuery) (Result, error) {
	q.Now, q.MaxSkew = r.Now(), r.opt.MaxClockSkew
	v, err := r.opt.Backend.Lease(ctx, q)
	if err != nil {
		return Result{}, err
	}
	return r.prove(v, r.decided(q.Now, v))
}

// GrantStatus is Status by grant digest, a sidecar's registry-mode check:
// the same linearizable read, answered with a proof signed up to
// ProofReuse ago when that proof states exactly what the read found
// (proofcache.go), and with a new one otherwise.
func (r *Registry) GrantStatus(ctx context.Context, digest string) (Result, error) {
	q := LeaseQuery{Digest: digest, Now: r.Now(), MaxSkew: r.opt.MaxClockSkew}
	v, err := r.opt.Backend.Lease(ctx, q)
	if err != nil {
		return Result{}, err
	}
	return r.proveReusing(v, r.decided(q.Now, v))
}

// Resource reads a resource's fence sequence and holder.
func (r *Registry) Resource(ctx context.Context, resource string) (ResourceView, error) {
	if err := ValidateResource(resource); err != nil {
		return ResourceView{}, err
	}
	local := r.Now()
	v, err := r.opt.Backend.Resource(ctx, resource, local)
	if err != nil {
		return v, err
	}
	r.observeClock(local, v.Meta)
	return resourceAt(v, local, r.opt.MaxClockSkew), nil
}

// BumpEpoch increments the issuer epoch: every grant of an older epoch is
// revoked at once (status REVOKED, sidecars answer EPOCH_REVOKED).
func (r *Registry) BumpEpoch(ctx context.Context) (Meta, error) {
	m, err := r.opt.Backend.BumpEpoch(ctx)
	if err != nil {
		return m, err
	}
	r.m.revocations.WithLabelValues("epoch").Inc()
	r.log.Warn("issuer epoch bumped: every older grant is revoked", zap.Uint64("issuerEpoch", m.IssuerEpoch))
	r.waiters.notifyAll()
	r.notifyOthers(ctx, "")
	return m, nil
}

// RaiseFenceFloor makes later fences of resource ("" = all) exceed floor.
func (r *Registry) RaiseFenceFloor(ctx context.Context, resource string, floor uint64) (Meta, ResourceRecord, error) {
	if resource != "" {
		if err := ValidateResource(resource); err != nil {
			return Meta{}, ResourceRecord{}, err
		}
	}
	m, rec, err := r.opt.Backend.RaiseFenceFloor(ctx, resource, floor)
	if err == nil {
		r.log.Warn("fence floor raised", zap.String("resource", resource), zap.Uint64("floor", floor))
	}
	return m, rec, err
}

// PutPolicy stores a policy; its new generation revokes grants issued
// under the previous one.
func (r *Registry) PutPolicy(ctx context.Context, p fencegate.Policy) (fencegate.Policy, error) {
	out, err := r.opt.Backend.PutPolicy(ctx, p, r.Now())
	if err != nil {
		return out, err
	}
	r.m.revocations.WithLabelValues("policy").Inc()
	r.log.Info("policy changed", zap.String("pattern", out.Pattern), zap.Uint64("generation", out.Generation))
	r.waiters.notifyAll()
	return out, nil
}

// DeletePolicy removes a policy (a tombstone keeps its generation growing).
func (r *Registry) DeletePolicy(ctx context.Context, pattern string) (fencegate.Policy, error) {
	out, err := r.opt.Backend.DeletePolicy(ctx, pattern, r.Now())
	if err != nil {
		return out, err
	}
	r.m.revocations.WithLabelValues("policy").Inc()
	r.waiters.notifyAll()
	return out, nil
}

// Policies lists the policies.
func (r *Registry) Policies(ctx context.Context) ([]fencegate.Policy, error) {
	return r.opt.Backend.Policies(ctx)
}

// Meta reads the registry-wide state.
func (r *Registry) Meta(ctx context.Context) (Meta, error) {
	return r.opt.Backend.Meta(ctx)
}

// InitOptions is what Init does at a process's start.
type InitOptions struct {
	// FenceFloor raises the global fence floor to at least this value (0:
	// leave it): the floor taken from the sidecars (fencegate fences
	// collect) when a registry replaces another. It never lowers the floor.
	FenceFloor uint64
	// MinIssuerEpoch raises the issuer epoch to at least this value (0:
	// leave it): above the highest epoch the sidecars accept (fencegate
	// fences collect prints it), so that a replacing registry's grants are
	// not EPOCH_REVOKED by sidecars that learned the old registry's epoch.
	// It never lowers the epoch; raising it revokes older grants.
	MinIssuerEpoch uint64
}

// Init runs the registry process's start against its backend, before it
// serves: a data set without a lineage (new, or of a version before
// lineages) gets one, written once (Meta.Lineage), and the global fence
// floor is raised to o.FenceFloor. Both are logged. Serving without Init
// is safe: the first grant of a data set without a lineage sets it.
func (r *Registry) Init(ctx context.Context, o InitOptions) (Meta, error) {
	before, err := r.opt.Backend.Meta(ctx)
	if err != nil {
		return Meta{}, err
	}
	lineage, err := r.newLineage()
	if err != nil {
		return Meta{}, err
	}
	m, err := r.opt.Backend.Init(ctx, InitInput{Lineage: lineage, FenceFloor: o.FenceFloor, MinIssuerEpoch: o.MinIssuerEpoch})
	if err != nil {
		return Meta{}, err
	}
	if before.Lineage == "" && m.Lineage != "" {
		r.log.Info("registry lineage created: this data set had none (a new registry, or one of a version before lineages)", zap.String("lineage", m.Lineage))
	} else {
		r.log.Info("registry lineage", zap.String("lineage", m.Lineage))
	}
	switch {
	case o.FenceFloor > before.FenceFloor:
		r.log.Warn("global fence floor raised at start: every fence issued from now on exceeds it",
			zap.Uint64("floor", m.FenceFloor), zap.Uint64("previous", before.FenceFloor))
	case o.FenceFloor > 0:
		r.log.Info("global fence floor already at or above the start floor: unchanged",
			zap.Uint64("floor", m.FenceFloor), zap.Uint64("asked", o.FenceFloor))
	}
	return m, nil
}

// Ready checks that the backend answers.
func (r *Registry) Ready(ctx context.Context) error {
	_, err := r.opt.Backend.Meta(ctx)
	return err
}

// CompactBatch bounds the leases deleted per backend transaction.
const CompactBatch = 1000

// Compact deletes the leases that ended more than retention ago, in
// batches, and returns how many it deleted. Their request IDs and digests
// are then unknown (a lookup answers NOT_FOUND); fence sequences stay.
func (r *Registry) Compact(ctx context.Context, retention time.Duration) (int, error) {
	if retention <= 0 {
		return 0, fmt.Errorf("%w: retention must be positive", ErrInvalidInput)
	}
	before := r.Now().Add(-retention)
	total := 0
	for {
		n, err := r.opt.Backend.Compact(ctx, before, CompactBatch)
		total += n
		r.m.compacted.Add(float64(n))
		if err != nil || n < CompactBatch {
			if total > 0 {
				r.log.Info("ended leases compacted", zap.Int("leases", total), zap.Duration("retention", retention))
			}
			return total, err
		}
	}
}
