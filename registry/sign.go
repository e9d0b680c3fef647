package registry

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
)

// This file is the one place where a grant and its status proofs are
// built and signed: GrantClaims and SealGrant for the lockGrant.v1 of a
// lease, ProofClaims and Registry.prove for a lockStatus.v1 proof.

// GrantClaims is the lockGrant.v1 claim set of a lease record.
func GrantClaims(l LeaseRecord, issuer string) fencegate.Grant {
	return fencegate.Grant{
		Schema:           fencegate.GrantSchema,
		Issuer:           issuer,
		GrantID:          l.GrantID,
		Resource:         l.Resource,
		Owner:            l.Owner,
		RequestID:        l.RequestID,
		Lease:            l.Lease,
		OperationRoot:    OperationRoot(l.Resource, l.Fence, l.GrantID),
		FenceToken:       l.Fence,
		BackendRevision:  l.Revision,
		PolicyGeneration: l.PolicyGeneration,
		IssuerEpoch:      l.IssuerEpoch,
		TTLMs:            l.TTLMs,
		OpClass:          l.OpClass,
		IssuedAt:         uint64(l.IssuedAt),
		Lineage:          l.Lineage,
	}
}

// SealGrant signs the lease a granting DecideAcquire put in ch.Grant with
// seal and sets its Token and Digest, in ch and in res.View. A backend
// calls it between the decision and the write, inside the same atomic
// step, so the stored lease and the issued grant are one. It does nothing
// when ch grants nothing. On a StagedTxStore the same signature is made
// in two parts, the signing off the transaction's serial path and the
// write before its commit (sealStage, tx_staged.go).
func SealGrant(res *AcquireResult, ch *Change, issuer string, seal SealFunc) error {
	if ch.Grant == nil {
		return nil
	}
	claims := GrantClaims(*ch.Grant, issuer)
	tok, err := seal(&claims)
	if err != nil {
		return fmt.Errorf("registry: seal grant: %w", err)
	}
	ch.Grant.Token = string(tok)
	ch.Grant.Digest = fencegate.Digest(tok)
	res.View.Lease = *ch.Grant
	return nil
}

// ProofClaims is the lockStatus.v1 claim set stating v at now. Its expiry
// is exp = iat + maxTTL, and for a HELD lease exp <= min(iat + maxTTL,
// the lease's expiry): a proof never outlives the lease it says is held.
func ProofClaims(v LeaseView, issuer string, now time.Time, maxTTL time.Duration) fencegate.Status {
	iat := ms(now)
	exp := iat + maxTTL.Milliseconds()
	if v.State == fencegate.StateHeld {
		exp = min(exp, v.Lease.ExpiresAt)
	}
	return fencegate.Status{
		Schema:           fencegate.StatusSchema,
		Issuer:           issuer,
		GrantDigest:      v.Lease.Digest,
		Resource:         v.Lease.Resource,
		Lease:            v.Lease.Lease,
		FenceToken:       v.Lease.Fence,
		State:            v.State,
		BackendRevision:  v.Meta.Revision,
		PolicyGeneration: v.PolicyGeneration,
		IssuerEpoch:      v.Meta.IssuerEpoch,
		IssuedAt:         uint64(iat),
		ExpiresAt:        uint64(exp),
	}
}

// Result is the registry's answer about one lease: its view, its grant and
// a fresh signed status proof of the view. It is not another shape of a
// lease: View.Lease is the record, Grant is View.Lease.Token as bytes, and
// StatusClaims are the claims Status carries.
type Result struct {
	View LeaseView
	// Grant is the lockGrant.v1 compact JWS.
	Grant []byte
	// Status is a fresh lockStatus.v1 compact JWS and its claims.
	Status       []byte
	StatusClaims fencegate.Status
	// Existing: an idempotent acquire returned the grant of an earlier call.
	Existing bool
}

// seal is the registry's SealFunc: it signs grant claims with its signer.
func (r *Registry) seal(c *fencegate.Grant) ([]byte, error) {
	return r.opt.Signer.Sign(fencegate.GrantSchema, c)
}

// prove signs a lockStatus.v1 proof of v at now (ProofClaims) and returns
// it with v and its grant.
func (r *Registry) prove(v LeaseView, now time.Time) (Result, error) {
	st := ProofClaims(v, r.opt.Issuer, now, r.opt.MaxProofTTL)
	tok, err := r.opt.Signer.Sign(fencegate.StatusSchema, &st)
	if err != nil {
		return Result{}, fmt.Errorf("registry: sign status proof: %w", err)
	}
	return Result{View: v, Grant: []byte(v.Lease.Token), Status: tok, StatusClaims: st}, nil
}

// proveReusing is prove for a status read: it answers with a proof signed
// a moment ago when that proof states exactly what v is (proofCache), and
// signs (and remembers) a new one otherwise.
func (r *Registry) proveReusing(v LeaseView, now time.Time) (Result, error) {
	want := ProofClaims(v, r.opt.Issuer, now, r.opt.MaxProofTTL)
	if p, ok := r.proofs.get(want, now); ok {
		return Result{View: v, Grant: []byte(v.Lease.Token), Status: p.token, StatusClaims: p.claims}, nil
	}
	res, err := r.prove(v, now)
	if err == nil {
		r.proofs.put(res.StatusClaims, res.Status)
	}
	return res, err
}
