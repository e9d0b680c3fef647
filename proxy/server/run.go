package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"go.uber.org/zap"
)

// Run serves the three listeners (inbound, admin, health) and runs the
// sidecar's background loops (proxy.Proxy.Run, the anchor's recheck, a
// local store's claim) until ctx ends or a listener fails. Then, in
// order, it drains in-flight requests (so their mutations settle), stops
// the loops and waits for them, and only then closes the store: nothing
// the Server started still uses the store when it closes. Last it
// releases a local store's claim, so the next pod of the service starts
// at once. It returns the first
// failure: a listener's, else a drain that did not finish within the
// shutdown timeout (the store then closes under the requests still in
// flight; their mutations may be left unknown), else closing the store's.
// Every failure is logged. Call Run once.
func (s *Server) Run(ctx context.Context) error {
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var loops, listeners sync.WaitGroup
	loops.Go(func() { _ = s.proxy.Run(loopCtx) })
	if s.anchor != nil {
		// Rechecks a lost store at the registry and repairs it once the
		// loss is acknowledged there.
		loops.Go(func() { _ = s.anchor.Run(loopCtx) })
	}
	if s.claim != nil {
		// Logs a lost claim and claims the service again once it ended.
		loops.Go(func() { _ = s.claim.Run(loopCtx) })
	}

	errc := make(chan error, 3)
	listeners.Go(func() {
		if s.in.TLSConfig != nil {
			errc <- s.in.ServeTLS(s.inLn, "", "")
		} else {
			errc <- s.in.Serve(s.inLn)
		}
	})
	listeners.Go(func() { errc <- s.admin.Serve(s.adminLn) })
	listeners.Go(func() { errc <- s.health.Serve(s.healthLn) })

	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err != nil {
		s.log.Error("a listener failed; shutting down", zap.Error(err))
		err = fmt.Errorf("proxy: serve: %w", err)
	}
	if serr := s.drain(); err == nil {
		err = serr
	}
	listeners.Wait()
	stopLoops()
	loops.Wait()
	if cerr := s.store.Close(); cerr != nil {
		s.log.Error("closing the store failed", zap.Error(cerr))
		if err == nil {
			err = fmt.Errorf("proxy: close store: %w", cerr)
		}
	}
	if s.claim != nil {
		s.claim.Release()
	}
	return err
}

// drain shuts the listeners down, waiting up to the shutdown timeout for
// the requests in flight. It returns the first listener's failure.
func (s *Server) drain() error {
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancel()
	var err error
	for _, srv := range []struct {
		name string
		srv  *http.Server
	}{{"inbound", s.in}, {"admin", s.admin}, {"health", s.health}} {
		if serr := srv.srv.Shutdown(sctx); serr != nil {
			s.log.Error("shutdown of the "+srv.name+" listener did not finish: requests still in flight (the store closes under them; their mutations may be left unknown until reconciled)",
				zap.Duration("timeout", s.shutdownTimeout), zap.Error(serr))
			if err == nil {
				err = fmt.Errorf("proxy: shutdown of the %s listener: %w", srv.name, serr)
			}
		}
	}
	return err
}
