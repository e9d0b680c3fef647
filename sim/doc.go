// Package sim is the deterministic simulation of fencegate: the real
// registry, verifier, fenced store and sidecar code, run in one process on
// a virtual clock, under a simulated network, crashes, restores and
// attacks, with the safety properties of docs/design.md section 13 checked
// after every step against an oracle that knows the ground truth.
// `fencegate sim` runs it; the 100,000-round gate is e2e/sim_gate_test.go.
//
// # The model
//
// A run is a number of independent rounds. Round i is seeded by (seed, i)
// alone, so rounds run in parallel and a failing round replays by itself;
// the report is aggregated in round order and does not depend on the
// number of workers.
//
// A round builds a world: a registry (registry.New over a snapshotting
// registry.TxStore, with a seeded random source and the virtual clock;
// real Ed25519 keys derived from the seed, whose signatures are
// deterministic), one fenced store (store/memory), one to three sidecar
// replicas sharing it (proxy.New, driven by calling ServeHTTP; none of
// their background loops is started), a recording backend that is the
// sidecars' http.RoundTripper, and two or three scripted workers. One
// goroutine runs the round from a priority queue of steps ordered by
// virtual time, then a seeded tie-break, then scheduling order. Each
// request is served to completion at one instant of virtual time; a
// sidecar that waits for a busy resource advances the clock by its wait
// (simClock).
//
// The round's script, drawn from its seed, is a list of input events:
// workers' acquires, and per worker a plan (writes of segments 1..k with
// the SDK's headers, renewals, a release, pauses past the TTL after which
// the worker sends anyway), sidecar crashes, registry snapshots and
// restores, and attacks. Each event carries its network fate (delay, so
// reordering; loss of the request or of the answer; a duplicate
// delivered later; a lost status read between sidecar and registry) and
// its backend fate (connection refused; applied and the answer lost;
// applied and 503; 500 before any effect; the sidecar process dying
// between forward and commit). Everything else follows from the script:
// workers resend a segment whose answer is lost (same payload), poll a
// held lease, refresh a stale proof, stop when told they no longer own
// the resource; an operator settles unknown outcomes by the backend's
// truth (section 8, step 4; "not applied" only from the mutation's quiet
// time on, the sidecar refusing it earlier) and recovers from a restore (section 10:
// epoch bump, fence floor, resume). A sidecar crash builds a new
// proxy.Proxy over the same store: its memory (learned epochs, ended
// grants) is lost, a mutation it had begun stays in flight until its
// deadline. Attacks: a grant signed by an untrusted key (its own kid, or
// the trusted kid with another key), a real grant with changed payload
// bytes, a valid grant and proof of another resource, and a grant (with
// its last proof) replayed after the registry's epoch was bumped.
//
// # The invariants, and why each is the safety property
//
// The oracle records what the registry did, when: every grant issued (by
// operation root), every lease's expiry as renewed, its release, its
// revocation by an epoch bump, its loss in a restore (and a restore's
// resurrection of leases the snapshot knew), and every HELD status proof
// the registry signed. The backend checks each write before applying it:
//
//   - Stale writes accepted = 0. A write is stale when its fence is below
//     a fence the backend already applied for the resource (the old owner
//     overwrites the new one: the problem of section 1), or when its lease
//     was not held when the sidecar accepted it. In registry status mode
//     the sidecar read the status at that instant, so the lease must be
//     held then. In proof mode the documented window applies (section
//     6.4): a HELD proof the registry signed for this lease must cover the
//     instant (now < exp, now - iat <= status.maxAge), and nothing is
//     accepted more than maxAge after a release, revocation or restore.
//     Nothing looser is allowed and nothing stricter is demanded.
//   - Forged writes accepted = 0: a write applied under an operation root
//     the registry never issued (forged or tampered grant), under a grant
//     of another resource, or under a revoked grant outside the window.
//     Authentication is what makes a fence mean anything.
//   - Authentication failures that changed a highest fence = 0: every
//     answer of steps 6.3 and 6.4 (GRANT_INVALID, RESOURCE_MISMATCH,
//     EPOCH_REVOKED, GRANT_NOT_HELD, STATUS_STALE, REGISTRY_UNAVAILABLE,
//     ...) leaves the store's record exactly as it was, and a STALE_OWNER
//     leaves the highest fence. Otherwise an attacker could raise the
//     fence and lock the real owner out, or lower it.
//   - Protected mutations that skipped authentication or the fence check
//     = 0: every write reaching the backend carries the sidecar's fence
//     headers and is, at that instant, the store's in-flight mutation
//     under the resource's highest fence, so Begin decided PROCEED for it.
//     This is "100% checked": nothing reaches the service around the
//     fence transaction (shadow mode would, and the gate fails).
//   - Segment gaps accepted = 0: a new fence starts at segment 1, and
//     under one fence segment n+1 follows n (an idempotent retry of an
//     applied operation is answered by the backend, not applied twice).
//     A gap means a long task's middle went missing.
//   - Regressions accepted = 0: the same fence under two operation roots
//     (issued twice, after a restore), or a lower fence issued later, are
//     never applied after the higher one.
//   - At the end of the round, after the operator settled every unknown
//     outcome, the backend's data is exactly the store's receipts, in
//     (fence, seq) order: every applied write has its receipt with the
//     same payload digest, and no receipt exists for a write never applied.
//
// Measured, not invariants: the longest virtual time a mutation stayed
// UNKNOWN (the gate requires it under the 15-minute target), and the
// hand-off latency: from the end of one owner's lease (release or expiry)
// to the next owner's first write applied, p50 and p99 in virtual time.
//
// # Replay and shrinking
//
// The same seed replays exactly: the same scripts, the same tie-breaks,
// the same keys and IDs, the same table and (with Options.History) the
// same hash of every round's history. When a round fails, it is run again
// with its history recorded, then shrunk by delta debugging (removing
// chunks of script events, halving their size, while the round still
// fails), and the shortest failing script is printed with its history.
//
// Sabotage options break one part on purpose (a route in shadow mode, a
// status source that says HELD for an ended lease, a trust bundle that
// trusts the attacker's key, a store whose read writes), so tests show
// that the gate can fail, each on the counter that part protects. The
// sidecars' own Coverage() is cross-checked too: every mutation the
// backend received from a sidecar process must be counted by it as
// forwarded and covered (grant authentication and fence check passed).
package sim
