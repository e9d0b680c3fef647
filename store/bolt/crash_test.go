//go:build unix

package bolt

import (
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/internal/crashtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// The crash test (storetest.RunCrash) on a store file: the child is
// killed with SIGKILL at random moments, the file reopened and checked,
// bbolt's own consistency check included.

const crashEnv = "FENCEGATE_STORE_BOLT_CRASH_CHILD"

func openCrash(path string) (store.Store, error) { return Open(path, Options{}) }

// TestHelperProcess is the child of TestCrashSafety; it does nothing in a
// normal run.
func TestHelperProcess(t *testing.T) {
	path := crashtest.Child(t, crashEnv)
	storetest.CrashChild(func() (store.Store, error) { return openCrash(path) })
}

func TestCrashSafety(t *testing.T) {
	storetest.RunCrash(t, storetest.Crash{Env: crashEnv, Where: filepath.Join(t.TempDir(), "crash.db"), Open: openCrash,
		Check: checkBoltFile, Rounds: 40, After: 60 * time.Millisecond})
}

// checkBoltFile runs bbolt's consistency check of the file.
func checkBoltFile(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.(*Store).db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("bbolt consistency check: %v", err)
	}
}
