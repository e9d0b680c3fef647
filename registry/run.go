package registry

import (
	"context"
	"sync"

	"go.uber.org/zap"
)

// Run runs the registry's background work until ctx ends, and returns
// only after all of it has returned, so the caller may close the backend
// then:
//
//   - with a backend that several registry processes share (a Notifier,
//     registry/redis), it subscribes to the other processes' "a lease
//     ended" notifications and wakes the waiting acquires of this process
//     (the subscription is closed when ctx ends or the backend is closed);
//   - with a backend that has loops of its own (a Runner: registry/redis
//     saves its state file every second), it runs them.
//
// With any other backend it only waits for ctx. It returns nil. Call Run
// once per Registry.
//
// Serving (every method, the HTTP API) does not need Run, and nothing
// waits without a bound when it is not running: a waiting acquire is
// woken in its own process by the release or revocation there, and is
// otherwise woken by its own timers (the holder's expiry, the wait's
// deadline), which is all a lost notification ever costs. What a shared
// backend misses without Run is latency (a lease released on another
// process reaches this process's waiter only at the holder's expiry) and
// what the backend's loops keep (registry/redis: the other processes'
// announcements that raise this process's watermark, and the periodic
// save of its state file). A process sharing its backend must run it.
func (r *Registry) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if n, ok := r.opt.Backend.(Notifier); ok {
		ch := n.Subscribe(ctx)
		wg.Go(func() { r.waiters.follow(ch) })
	}
	if rn, ok := r.opt.Backend.(Runner); ok {
		wg.Go(func() {
			if err := rn.Run(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("the backend's loops stopped before the registry's", zap.Error(err))
			}
		})
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}
