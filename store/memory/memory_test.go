package memory_test

import (
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

func newStore(tb testing.TB) store.Store {
	s := memory.New(memory.Options{})
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore, storetest.RapidRounds(20))
}
