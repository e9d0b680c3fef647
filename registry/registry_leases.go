package registry

import (
	"context"

	"go.uber.org/zap"
)

// RevokeLease revokes one lease, an operator's act (the HTTP API's admin
// route): a HELD lease is stored REVOKED and frees its resource. Its
// grants' status reads answer REVOKED from then on, so a sidecar refuses
// them (status proof); its renewals fail with ErrNotHeld (state REVOKED);
// its release answers REVOKED; the next acquire of the resource is granted
// at once, with a higher fence. Revoking a lease that already ended
// changes nothing (Revoked false). The answer carries a status proof of
// the lease's state.
func (r *Registry) RevokeLease(ctx context.Context, lease string) (Result, bool, error) {
	if err := ValidateLeaseID(lease); err != nil {
		return Result{}, false, err
	}
	local := r.Now()
	res, err := r.opt.Backend.RevokeLease(ctx, RevokeInput{Lease: lease, Now: local, MaxSkew: r.opt.MaxClockSkew})
	if err != nil {
		return Result{}, false, err
	}
	v := res.View
	now := r.decided(local, v)
	if res.Revoked {
		r.m.revocations.WithLabelValues("lease").Inc()
		r.log.Warn("lease revoked by operator", zap.String("resource", v.Lease.Resource), zap.String("lease", v.Lease.Lease),
			zap.String("owner", v.Lease.Owner), zap.Uint64("fence", v.Lease.Fence))
		r.waiters.notify(v.Lease.Resource)
		r.notifyOthers(ctx, v.Lease.Resource)
	}
	out, err := r.prove(v, now)
	return out, res.Revoked, err
}

// Leases lists one page of the stored leases (LeasesQuery) with their
// effective state now. Leases stay stored until compaction deletes them
// after they ended (Options' retention), so a listing holds the HELD
// leases and those that ended within the retention.
func (r *Registry) Leases(ctx context.Context, q LeasesQuery) (LeasePage, error) {
	q.Now, q.MaxSkew = r.Now(), r.opt.MaxClockSkew
	if q.Limit == 0 {
		q.Limit = DefaultLeasesLimit
	}
	if err := q.Validate(); err != nil {
		return LeasePage{}, err
	}
	return r.opt.Backend.Leases(ctx, q)
}

// MaxLeaseIDLen bounds a lease ID.
const MaxLeaseIDLen = 128

// ValidateLeaseID checks a lease ID as a path segment: 1..128 bytes of
// [A-Za-z0-9-_.:] (the registry makes "lease-" and random hex).
func ValidateLeaseID(s string) error { return validName("lease", s, MaxLeaseIDLen, ":") }
