//go:build unix

package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/crashtest"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// The crash test (storetest.RunCrash) on a database: the child (a
// sidecar) is killed with SIGKILL at random moments, its connections drop
// mid-transaction and PostgreSQL rolls those back; the store is opened
// again and checked.

const crashEnv = "FENCEGATE_STORE_POSTGRES_CRASH_CHILD"

func openCrash(dsn string) (store.Store, error) {
	return Open(context.Background(), Options{DSN: dsn, Schema: "crash", MaxConns: storetest.CrashResources})
}

// TestHelperProcess is the child of TestCrashSafety; it does nothing in a
// normal run.
func TestHelperProcess(t *testing.T) {
	dsn := crashtest.Child(t, crashEnv)
	storetest.CrashChild(func() (store.Store, error) { return openCrash(dsn) })
}

func TestCrashSafety(t *testing.T) {
	storetest.RunCrash(t, storetest.Crash{Env: crashEnv, Where: pgtest.Database(t), Open: openCrash,
		Rounds: 15, After: 200 * time.Millisecond})
}
