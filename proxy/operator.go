package proxy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fencegate/fencegate/store"
)

// This file is the sidecar's surface for operators: what the admin API
// (package proxy/adminapi) asks of the fenced store, and the operator
// actions, each through the sidecar so that its clock, metrics, logs and
// waiting requests stay in step.

// Receipts returns the receipts of operation op on resource (none is
// store.ErrNotFound or an empty list, as the store answers).
func (p *Proxy) Receipts(ctx context.Context, resource, op string) ([]store.Receipt, error) {
	return p.store.ReceiptsByOperation(ctx, resource, op)
}

// Record returns the store's record of resource (store.ErrNotFound when
// it has none).
func (p *Proxy) Record(ctx context.Context, resource string) (store.Record, error) {
	return p.store.Record(ctx, resource)
}

// Records returns one page of the store's records in resource order
// (store.RecordsQuery): the admin API's list of highest fences.
func (p *Proxy) Records(ctx context.Context, q store.RecordsQuery) ([]store.Record, error) {
	return p.store.Records(ctx, q)
}

// MinIssuerEpoch is the lowest issuer epoch of a grant this sidecar
// accepts now: trust.minIssuerEpoch, or the highest issuer epoch a
// verified status proof carried since the sidecar started, whichever is
// higher. A grant of a lower epoch is EPOCH_REVOKED, whichever registry
// issued it: a registry that replaces another must issue at least this
// epoch.
func (p *Proxy) MinIssuerEpoch() uint64 {
	return p.auth.MinIssuerEpoch()
}

// Unknown lists the mutations whose outcome is unknown now, by the
// sidecar's clock: those waiting for reconciliation.
func (p *Proxy) Unknown(ctx context.Context) ([]store.Mutation, error) {
	return p.store.ListUnknown(ctx, p.now())
}

// Paused lists the records of paused resources.
func (p *Proxy) Paused(ctx context.Context) ([]store.Record, error) {
	return p.store.ListPaused(ctx)
}

// Quarantined lists the quarantine entries of resource, or of every
// resource when it is empty.
func (p *Proxy) Quarantined(ctx context.Context, resource string) ([]store.Quarantine, error) {
	return p.store.ListQuarantined(ctx, resource)
}

// Reconcile settles the unknown mutation op of resource by an operator's
// word: applied with the answer status (200 when 0) and body that replays
// return, or proven not applied. No such unknown mutation is
// store.ErrNotFound. The operator's word is evidence as of the call: "not
// applied" before the mutation's quiet time is refused with a
// *store.NotQuietError (store.ErrNotQuiet), since the backend may still
// apply it; "applied" is accepted at any time.
func (p *Proxy) Reconcile(ctx context.Context, resource, op string, applied bool, status int, body []byte) (store.ResolveResult, error) {
	return p.resolve(ctx, resource, op, applied, status, body, "operator")
}

// Pause pauses resource: the store accepts no mutation of it until Resume.
func (p *Proxy) Pause(ctx context.Context, resource, detail string) (store.Record, error) {
	return p.store.Pause(ctx, store.PauseInput{Resource: resource, Reason: store.PauseOperator, Detail: detail, Now: p.now()})
}

// Resume lifts the pause of resource; its highest fence is kept.
func (p *Proxy) Resume(ctx context.Context, resource string) (store.Record, error) {
	return p.store.Resume(ctx, resource)
}

// ReloadTrust re-reads the trust bundle file and the trust pins now (see
// authn, trust.go: first use, a signed bundle's keys, removals). It reports
// whether the file or the keys verified with changed. A reload that drops
// a key behind grants still held fails with authn.ErrKeyInUse unless force is
// set.
func (p *Proxy) ReloadTrust(force bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.auth.Reload(ctx, force)
}

// TrustKeyIDs are the key IDs the sidecar verifies with: the bundle
// file's keys that are pinned.
func (p *Proxy) TrustKeyIDs() []string { return p.auth.KeyIDs() }

// resolve settles the unknown mutation with operation ID op on an
// operator's word (how labels the reconciliation in metrics).
func (p *Proxy) resolve(ctx context.Context, resource, op string, applied bool, status int, body []byte, how string) (store.ResolveResult, error) {
	asked := p.now() // the operator's word is evidence as of the request
	list, err := p.store.ListUnknown(ctx, asked)
	if err != nil {
		return store.ResolveResult{}, err
	}
	for _, m := range list {
		if m.Resource == resource && m.OperationID == op {
			return p.settle(ctx, m, evidence{applied: applied, status: status, body: body, at: asked}, how)
		}
	}
	return store.ResolveResult{}, fmt.Errorf("%w: no unknown mutation %s on %s", store.ErrNotFound, op, resource)
}

// evidence is what is known of an unknown mutation's outcome.
type evidence struct {
	// applied: it took effect, with the answer status (200 when 0) and
	// body replays return. Otherwise it did not take effect yet.
	applied bool
	status  int
	body    []byte
	// at is when the evidence was gathered (the effect query was sent, the
	// operator asked), on the sidecar's clock.
	at time.Time
	// closes: a "not applied" that closes the operation (a route's effect
	// query declared effectQueryCloses): the backend will never apply it.
	closes bool
}

// settle resolves the unknown mutation m on e (how labels the
// reconciliation in metrics: operator, effect_query). "Not applied" is
// passed to the store with the evidence's age, measured on the sidecar's
// clock (store/redis places it on the server's), and the store refuses it
// before the mutation's quiet time unless it closes the operation
// (*store.NotQuietError).
func (p *Proxy) settle(ctx context.Context, m store.Mutation, e evidence, how string) (store.ResolveResult, error) {
	in := store.ResolveInput{OpRef: m.Ref(), Applied: e.applied, Now: p.now()}
	if e.applied {
		status := e.status
		if status == 0 {
			status = http.StatusOK
		}
		in.BackendStatus = status
		in.Response = store.StoredResponse{Status: status, Body: e.body}
	} else {
		in.EvidenceAge = max(0, in.Now.Sub(e.at))
		in.Closed = e.closes
	}
	res, err := p.store.Resolve(ctx, in)
	if err != nil {
		return res, err
	}
	outcome := "not_applied"
	if e.applied {
		outcome = "applied"
	}
	p.m.reconciled.WithLabelValues(how, outcome).Inc()
	since := m.UnknownSince
	if since.IsZero() {
		since = m.Deadline
	}
	p.m.unknownTime.Observe(p.now().Sub(since).Seconds())
	p.settled(m.Resource)
	return res, nil
}
