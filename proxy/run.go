package proxy

import (
	"context"
	"sync"
)

// Run runs the sidecar's background loops until ctx ends: trust bundle
// polling, automatic reconciliation (which keeps the unknown and paused
// gauges) and store compaction (which keeps the store-size gauges). It
// returns only after every loop has returned, so the caller may close the
// store then; a loop's store call in progress when ctx ends is cancelled
// through its context. The loops log their failures and go on, so Run
// returns nil. Serving requests (ServeHTTP) does not need Run; call Run
// once per Proxy.
func (p *Proxy) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { p.auth.Run(ctx, p.cfg.Trust.ReloadInterval) })
	wg.Go(func() { p.reconcileLoop(ctx) })
	wg.Go(func() { p.compactLoop(ctx) })
	wg.Wait()
	return nil
}
