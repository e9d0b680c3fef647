package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestRunReturnsShutdownError: when the drain of in-flight requests
// does not finish within the shutdown timeout, Run logs it and returns
// the error (nothing else failed) instead of dropping it.
func TestRunReturnsShutdownError(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release // held until Run has returned
	}))
	defer back.Close()
	defer close(release) // runs before back.Close

	cfg := testConfig(t, back.URL)
	core, logs := observer.New(zap.InfoLevel)
	s, err := New(cfg, zap.New(core), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.shutdownTimeout = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Run(ctx) }()

	// A read passes through to the backend, which holds it: the request is
	// in flight when the shutdown starts.
	go func() {
		if resp, err := http.Get("http://" + s.Addr() + "/v1/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the read never reached the backend")
	}
	cancel()
	select {
	case err = <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run returned %v, want the inbound shutdown's context.DeadlineExceeded", err)
	}
	if logs.FilterMessageSnippet("shutdown of the inbound listener did not finish").FilterLevelExact(zap.ErrorLevel).Len() != 1 {
		t.Fatalf("the shutdown failure was not logged: %v", logs.All())
	}
}
