package storetest

import (
	"testing"

	"github.com/fencegate/fencegate/store"
)

// Reopener closes s and opens the same stored data again, for backends that
// are durable; it registers its own cleanup with tb.
type Reopener func(tb testing.TB, s store.Store) store.Store

// RunReopen checks what must survive a reopen of a durable backend: the
// enforcement ledger, the trust pins, the generation and the effect of
// Compact.
func RunReopen(t *testing.T, newStore Factory, reopen Reopener) {
	t.Run("EnforcementSurvivesReopen", func(t *testing.T) { runEnforcementReopen(t, newStore, reopen) })
	t.Run("TrustSurvivesReopen", func(t *testing.T) { runTrustReopen(t, newStore, reopen) })
	t.Run("GenerationSurvivesReopen", func(t *testing.T) { runGenerationReopen(t, newStore, reopen) })
	t.Run("CompactionSurvivesReopen", func(t *testing.T) { runCompactReopen(t, newStore, reopen) })
}
