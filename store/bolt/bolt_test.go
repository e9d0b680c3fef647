package bolt

import (
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

func newStore(tb testing.TB) store.Store {
	s, err := Open(filepath.Join(tb.TempDir(), "fence.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore, storetest.RapidRounds(10))
}
