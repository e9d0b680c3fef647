package authn

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/verify"
)

// StatusSource reads a grant's current status proof from the registry in
// one linearizable read. The SDK's *client.Client implements it. A grant the
// registry does not know is an error with a Code() method answering
// fencegate.CodeNotFound (the SDK's *client.Error is one); any other error
// means the status cannot be established.
type StatusSource interface {
	StatusByDigest(ctx context.Context, digest string) (*fencegate.Lease, error)
}

// statusChecker establishes that a verified grant is currently held:
// from the request's Fence-Status proof or from the registry. It also
// remembers the highest issuer epoch any verified proof carried, so a
// grant of an older epoch is rejected even when its own proof is fresh.
type statusChecker struct {
	src      StatusSource
	timeout  time.Duration
	skew     time.Duration
	minEpoch uint64
	maxSeen  atomic.Uint64
	opts     []verify.Option
	m        Metrics
	// ended holds the grants the registry said have ended (see endedGrants).
	ended *endedGrants
	// learned is the lower bound on the time the registry teaches
	// (learnedtime.go).
	learned *TimeBound
}

// check establishes that the verified grant g (of digest) is held now, by
// rule: from proof, or from the registry.
func (s *statusChecker) check(ctx context.Context, rule Rule, view trustView, g *fencegate.Grant, digest string, proof []byte, clk clock.Clock) *Refusal {
	now := clk.Now
	start := now()
	defer func() {
		s.m.Status.WithLabelValues(string(rule.Mode)).Observe(clock.Since(clk, start).Seconds())
	}()
	var st *fencegate.Status
	var err error
	switch rule.Mode {
	case StatusProof:
		if len(proof) == 0 {
			return refuse(fencegate.CodeStatusStale, "this route needs a Fence-Status proof")
		}
		if s.ended.ended(digest, now()) {
			return refuse(fencegate.CodeGrantNotHeld, "the registry has said this grant is no longer held; its older HELD proof is refused")
		}
		// A worker sends the same proof for about a second: cached.
		st, err = view.status(proof, s.opts)
	default:
		if s.src == nil {
			return refuse(fencegate.CodeRegistryUnavailable, "no registry configured")
		}
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		l, rerr := s.src.StatusByDigest(cctx, digest)
		cancel()
		switch {
		case notFound(rerr):
			return refuse(fencegate.CodeGrantNotHeld, "the registry does not know this grant")
		case rerr != nil:
			return &Refusal{Code: fencegate.CodeRegistryUnavailable, Detail: "grant status cannot be established: " + rerr.Error(), Retryable: true}
		}
		// The answer is the registry's linearizable read made just now;
		// only its signature check is cached, by the exact bytes (the
		// registry answers with the same proof while its statement holds:
		// registry/proofcache.go). The decision below is made on every
		// request from these claims.
		st, err = view.status([]byte(l.Status), s.opts)
	}
	if err != nil {
		if rule.Mode == StatusRegistry {
			// The registry answered something we cannot verify: fail closed.
			return refuse(fencegate.CodeRegistryUnavailable, "the registry's status proof does not verify: "+err.Error())
		}
		return fromVerify(err)
	}
	// Learn the time from every authentic proof: a clock that lags the
	// registry's by more than the skew still sees windows close on time.
	s.learned.observe(time.UnixMilli(int64(st.IssuedAt)), now())
	if lag := s.learned.behind(now()); lag > 0 {
		s.m.ClockBehind.Set(lag.Seconds())
	} else {
		s.m.ClockBehind.Set(0)
	}
	// Learn the newest epoch from every authentic proof.
	for {
		cur := s.maxSeen.Load()
		if st.IssuerEpoch <= cur || s.maxSeen.CompareAndSwap(cur, st.IssuerEpoch) {
			break
		}
	}
	if rule.Mode == StatusRegistry && st.State != fencegate.StateHeld && st.GrantDigest == digest {
		s.ended.note(digest, now())
	}
	pol := verify.StatusPolicy{MaxAge: rule.MaxAge, ClockSkew: s.skew, MinIssuerEpoch: max(s.minEpoch, s.maxSeen.Load()),
		NotBefore: s.learned.bound(now())}
	if err := verify.CheckStatus(st, g, digest, now(), pol); err != nil {
		return fromVerify(err)
	}
	return nil
}

// notFound reports whether err carries the registry's NOT_FOUND code.
func notFound(err error) bool {
	var coded interface{ Code() fencegate.Code }
	return errors.As(err, &coded) && coded.Code() == fencegate.CodeNotFound
}
