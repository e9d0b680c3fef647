package redis

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

var prefixes atomic.Int64

// factory returns a storetest.Factory of stores over srv, each under a
// fresh key prefix (so each is empty) and with its own client.
func factory(srv *redistest.Server) storetest.Factory {
	return func(tb testing.TB) store.Store {
		return openPrefix(tb, srv, "t"+strconv.FormatInt(prefixes.Add(1), 10))
	}
}

// openPrefix opens a store with its own client over srv under prefix. It
// decides by the caller's clock: the conformance suite drives virtual time
// (time_test.go covers the server's clock).
func openPrefix(tb testing.TB, srv *redistest.Server, prefix string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), Options{Addr: srv.Addr(), Prefix: prefix, CallerClock: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, factory(srv))
}

// Reopen closes the store's client and opens a new one over the same
// server and prefix: everything is still there.
func TestReopen(t *testing.T) {
	srv := redistest.Start(t)
	storetest.RunReopen(t, factory(srv), func(tb testing.TB, s store.Store) store.Store {
		prefix := s.(*Store).k.prefix
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
		return openPrefix(tb, srv, prefix)
	})
}
