package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// The backend and the plain reverse proxy run as subcommands of this
// binary, each in its own process, so that their CPU is counted apart from
// the load generator's and the proxy's.

// backendAnswer is what the backend answers to every request: small, like
// an API's acknowledgement of a stored batch.
var backendAnswer = []byte(`{"ok":true}` + "\n")

// backendHandler reads the whole body and answers 200 with backendAnswer.
func backendHandler(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(backendAnswer)
}

// runBackend is "bench backend": the legacy service every arm ends at.
func runBackend(args []string) error {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return serve(http.HandlerFunc(backendHandler), "backend")
}

// bufferPool lends the plain proxy's copy buffers (httputil.BufferPool).
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// newPlainProxy is the baseline a user would run instead of fencegate: a
// standard httputil.ReverseProxy tuned for one local backend under high
// concurrency: keep-alive with enough idle connections per host that none
// is closed and redialled under load, no compression, pooled buffers.
func newPlainProxy(target *url.URL) *httputil.ReverseProxy {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   4096,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: 30 * time.Second,
		ForceAttemptHTTP2:     false,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: &bufferPool{},
	}
}

// runPlainProxy is "bench plainproxy -backend URL".
func runPlainProxy(args []string) error {
	fs := flag.NewFlagSet("plainproxy", flag.ContinueOnError)
	backend := fs.String("backend", "", "backend URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*backend)
	if err != nil || u.Host == "" {
		return fmt.Errorf("plainproxy: -backend %q: want http://host:port", *backend)
	}
	return serve(newPlainProxy(u), "plainproxy")
}

// serve listens on a loopback port the kernel picks, prints
// "NAME listening on ADDR" for the parent, and serves h until SIGTERM or
// SIGINT.
func serve(h http.Handler, name string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	fmt.Printf("%s listening on %s\n", name, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
