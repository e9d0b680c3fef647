package registrytest

import (
	"context"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// Start runs reg.Run in the background, as a registry process's server
// does (registry/server), until the returned stop is called or the test
// ends (t.Cleanup calls it). stop cancels Run and waits for it to return,
// so a test stops it before closing the backend; calling it again does
// nothing.
func Start(tb testing.TB, reg *registry.Registry) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = reg.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	tb.Cleanup(stop)
	return stop
}
