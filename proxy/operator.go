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
// store.ErrNotFound.
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
// trust.go: first use, a signed bundle's keys, removals). It reports
// whether the file or the keys verified with changed. A reload that drops
// a key behind grants still held fails with ErrKeyInUse unless force is
// set.
func (p *Proxy) ReloadTrust(force bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.trust.reload(ctx, force)
}

// TrustKeyIDs are the key IDs the sidecar verifies with: the bundle
// file's keys that are pinned.
func (p *Proxy) TrustKeyIDs() []string { return p.trust.keyIDs() }

// resolve settles the unknown mutation with operation ID op (how labels the
// reconciliation in metrics: operator, effect_query).
func (p *Proxy) resolve(ctx context.Context, resource, op string, applied bool, status int, body []byte, how string) (store.ResolveResult, error) {
	list, err := p.store.ListUnknown(ctx, p.now())
	if err != nil {
		return store.ResolveResult{}, err
	}
	for _, m := range list {
		if m.Resource != resource || m.OperationID != op {
			continue
		}
		in := store.ResolveInput{OpRef: m.Ref(), Applied: applied, Now: p.now()}
		if applied {
			if status == 0 {
				status = http.StatusOK
			}
			in.BackendStatus = status
			in.Response = store.StoredResponse{Status: status, Body: body}
		}
		res, err := p.store.Resolve(ctx, in)
		if err != nil {
			return res, err
		}
		outcome := "not_applied"
		if applied {
			outcome = "applied"
		}
		p.m.reconciled.WithLabelValues(how, outcome).Inc()
		since := m.UnknownSince
		if since.IsZero() {
			since = m.Deadline
		}
		p.m.unknownTime.Observe(p.now().Sub(since).Seconds())
		p.settled(resource)
		return res, nil
	}
	return store.ResolveResult{}, fmt.Errorf("%w: no unknown mutation %s on %s", store.ErrNotFound, op, resource)
}
