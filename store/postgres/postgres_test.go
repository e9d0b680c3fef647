package postgres

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

var schemas atomic.Int64

// factory returns a storetest.Factory of stores in dsn's database, each
// in a fresh schema (so each is empty) with its own pool.
func factory(dsn string) storetest.Factory {
	return func(tb testing.TB) store.Store {
		return openSchema(tb, dsn, "s"+strconv.FormatInt(schemas.Add(1), 10))
	}
}

// openSchema opens a store with its own pool over dsn in schema. It
// decides by the caller's clock: the conformance suite drives virtual
// time (time_test.go covers the server's clock).
func openSchema(tb testing.TB, dsn, schema string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), Options{DSN: dsn, Schema: schema, CallerClock: true, MaxConns: 8})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, factory(pgtest.Database(t)))
}

// Reopen closes the store's pool and opens a new one over the same
// schema: everything is still there.
func TestReopen(t *testing.T) {
	dsn := pgtest.Database(t)
	storetest.RunReopen(t, factory(dsn), func(tb testing.TB, s store.Store) store.Store {
		schema := s.(*Store).schema
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
		return openSchema(tb, dsn, schema)
	})
}
