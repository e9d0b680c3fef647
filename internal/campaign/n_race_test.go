//go:build race

package campaign

// Under the race detector the checks are about ten times slower: smaller
// runs keep the package under ~20 s on two shared cores.
const (
	testN       = 2_000
	detN        = 600
	weakPerKind = 100
)
