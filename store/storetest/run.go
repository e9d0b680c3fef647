package storetest

import (
	"testing"

	"github.com/fencegate/fencegate/store"
)

// Factory returns a new, empty store with default options. It registers its
// own cleanup (Close, temporary files) with tb.
type Factory func(tb testing.TB) store.Store

// Option tunes Run.
type Option func(*config)

type config struct {
	rapidRounds int
}

// RapidRounds runs the rapid stateful check n times (each runs -rapid.checks
// sequences, 100 by default). Cheap backends raise it for more coverage.
func RapidRounds(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.rapidRounds = n
		}
	}
}

// Run runs the conformance suite against the backend made by newStore.
func Run(t *testing.T, newStore Factory, opts ...Option) {
	cfg := config{rapidRounds: 1}
	for _, o := range opts {
		o(&cfg)
	}
	t.Run("Decisions", func(t *testing.T) { runDecisions(t, newStore) })
	t.Run("Lifecycle", func(t *testing.T) { runLifecycle(t, newStore) })
	t.Run("Quiet", func(t *testing.T) { runQuiet(t, newStore) })
	t.Run("Owner", func(t *testing.T) { runOwner(t, newStore) })
	t.Run("BadInput", func(t *testing.T) { runBadInput(t, newStore) })
	t.Run("InFlightExclusive", func(t *testing.T) { runExclusive(t, newStore) })
	t.Run("Stateful", func(t *testing.T) { runStateful(t, newStore, cfg.rapidRounds) })
	t.Run("Linearizable", func(t *testing.T) { runLinearizable(t, newStore) })
	t.Run("Enforcement", func(t *testing.T) { runEnforcement(t, newStore) })
	t.Run("Repair", func(t *testing.T) { runRepair(t, newStore) })
	t.Run("Records", func(t *testing.T) { runRecords(t, newStore) })
	t.Run("Receipts", func(t *testing.T) { runReceipts(t, newStore) })
	t.Run("Generation", func(t *testing.T) { runGeneration(t, newStore) })
	t.Run("Trust", func(t *testing.T) { runTrust(t, newStore) })
	t.Run("Compact", func(t *testing.T) { runCompact(t, newStore) })
	t.Run("CompactAtCommit", func(t *testing.T) { runCompactAtCommit(t, newStore) })
}

// cases runs each named case as a subtest on a fresh store.
func cases(t *testing.T, newStore Factory, cs []testCase) {
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			c.run(newFixture(t, newStore(t)))
		})
	}
}

type testCase struct {
	name string
	run  func(f *fixture)
}
