// Package registrytest is the conformance suite of registry backends. Run
// drives the real registry.Registry, with a real EdDSA signer from
// package keys and a manual Clock, over a backend made by the caller, and
// checks the registry's safety rules end to end: fences strictly increase
// and are never issued twice (across expiry, release, handoff, policy
// changes, epoch bumps and restarts), acquires are idempotent per
// (owner, requestId), at most one lease is held at any time, renew never
// resurrects a lease, waiting acquires hand off in FIFO order, status
// proofs are bounded and verifiable, fence floors and epoch bumps work,
// policies are enforced and revoke, and bad input changes nothing.
//
// A backend package calls it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		registrytest.Run(t, func(t *testing.T) registrytest.Opener {
//			path := filepath.Join(t.TempDir(), "registry.db")
//			return registrytest.Opener{Open: func() (registry.Backend, error) {
//				return bolt.OpenBackend(path, time.Second)
//			}}
//		})
//	}
//
// Backends that cannot reopen their state (memory) set Opener.NotDurable;
// the restart subtests are then skipped with that reason.
//
// Benchmarks shared by the backends: BenchAnchorBatch (anchor requests)
// and BenchHandoff (release to the waiting acquire's grant, the waiter's
// timers on a clock nobody advances, so only the release wakes it).
//
// The package is for tests only.
package registrytest
