package proxy

import (
	"context"

	"github.com/fencegate/fencegate/store"
)

// The one-pass functions of the background loops that Run starts, for a
// driver that runs the sidecar's background work on a schedule of its own
// instead of calling Run: the deterministic simulation (package sim) calls
// them from steps of its virtual clock, so that a pass happens at a known
// instant between requests and a seed replays exactly. A sidecar process
// calls Run, never these.

// ReconcileOnce runs one pass of the reconciliation loop (what Run does
// every reconcile.interval): it refreshes the unknown and paused gauges and
// settles unknown mutations through the routes' effect queries. It returns
// how many mutations it settled.
func (p *Proxy) ReconcileOnce(ctx context.Context) int { return p.reconcileOnce(ctx) }

// TrustOnce runs one tick of the trust watch loop (what Run does every
// trust.reloadInterval): the trust pins are read again, and the bundle
// file is applied when it is not the one loaded. Unlike ReloadTrust, an
// unchanged file is not applied again.
func (p *Proxy) TrustOnce(ctx context.Context) { p.auth.Poll(ctx) }

// CompactOnce runs one pass of the compaction loop (what Run does every
// retention.interval): it deletes receipts and quarantine entries past the
// retention and refreshes the store-size gauges.
func (p *Proxy) CompactOnce(ctx context.Context) (store.CompactResult, error) {
	return p.compactOnce(ctx)
}
