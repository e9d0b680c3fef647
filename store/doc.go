// Package store defines the fenced store: the one place where "stale" is
// decided. For every resource it keeps the highest accepted fence token, the
// operation root that fence belongs to, the last accepted segment, a receipt
// per accepted segment (with the workload identity that owned it), the
// mutation currently in flight, and a pause state.
//
// The package holds domain types, validation, sentinel errors and the pure
// decision logic; it imports no backend. Backends live in their own packages
// (store/memory, store/bolt, store/redis, store/postgres) and all of them
// decide through the
// same pure functions in this package:
//
//   - Decide (Begin): the decision table of the acceptance pipeline (docs/design.md, "applyFencedMutation"
//     step 4, over (record, the receipt stored for (fence, seq), input);
//   - DecideCommit, DecideMarkUnknown, DecideAbort, DecideResolve, DecidePause,
//     DecideResume, DecideRepair: the other transitions of a record;
//   - DecideEnforcement and DecideTrust: the enforcement ledger and the trust
//     pins.
//
// Each function reads at most the resource's record and one receipt (the
// ledger entry, the pin set), and returns a Change (record, receipt,
// quarantine entry, ledger entry, pins) that a backend writes in one atomic
// step.
//
// # Backends: a transaction and a codec
//
// The operations themselves are written once too, in the registry's shape
// (registry/tx.go): NewTxBackend makes a Store out of a backend's TxStore,
// and every Store method is one transaction (tx.go, tx_ops.go, tx_read.go,
// tx_ledger.go, tx_compact.go) that validates the input, loads the
// decision's snapshot through the Tx (Load reads a record and a receipt
// together, so a backend makes them one round trip), calls the pure
// function at the transaction's time (Tx.Now: the backend's clock when it
// has one, tx_time.go) and writes the Change it returns with the Tx's Put
// methods. A backend is its TxStore (how a transaction runs: bbolt's group
// commit, with a read-only first run for all but Begin and Commit, Redis's compare-and-write step with
// retries, a mutex) and its Tx over its own keys and encoding; that shape
// is what lets store/redis apply the very same functions to the values it
// last saw of those keys and have a generic script check them and write
// the Change in one round trip (WATCH and MULTI/EXEC for compaction), with
// no second implementation of the rules to drift. A new backend is one
// package implementing TxStore and Tx, checked by storetest: store/postgres
// is one transaction per operation (the resource's record locked, or
// SERIALIZABLE for whole sets), retried on serialization
// failures.
//
// # Begin's decision table
//
// Checks run in this order, atomically per resource:
//
//  0. an in-flight marker whose deadline has passed is turned into
//     MUTATION_UNKNOWN (cause DEADLINE) and written back, whatever the
//     decision: an expired marker is never silently stolen, because the
//     mutation it guards may have reached the backend;
//  1. paused → PAUSED (the Pause says why, e.g. FENCE_REGRESSION);
//     a mutation whose outcome is unknown → MUTATION_UNKNOWN, except an exact
//     retry of it (same fence, root, seq and payload digest) with
//     BeginInput.RetryUnknown set, which proceeds again under the same
//     operation ID (the route honours Idempotency-Key);
//  2. a receipt exists for (fence, seq): under another operation root →
//     FENCE_REGRESSION and the resource pauses (see below); same root and
//     payload digest → REPLAY with the stored receipt and response, even if a
//     newer fence took over since; same root, other payload →
//     SEGMENT_CONFLICT and a quarantine entry;
//  3. fence < highest, the grant's issuer lineage and the highest fence's
//     both known and different → STALE_OWNER when the grant's lineage is
//     one of the record's PriorLineages (a registry that a new one
//     continued above) and the fence is at most the one the store had
//     accepted under it when it was superseded; else FENCE_REGRESSION and
//     the resource pauses (a registry that did not continue above the
//     highest fence: a new one, or a superseded one rolled back and
//     issuing again), whatever the evidence and whatever retention
//     deleted;
//     fence < highest otherwise (one lineage, or either unknown) →
//     STALE_OWNER, or FENCE_REGRESSION when the attempt's evidence shows
//     the registry issued it after the highest fence (a higher issuer
//     epoch, or the same epoch and a higher backend revision): the
//     resource is then paused in the same step;
//  4. fence = highest under another operation root than the record's →
//     FENCE_REGRESSION and the resource pauses, even while a mutation is in
//     flight;
//  5. another mutation in flight → BUSY (with that mutation and its deadline);
//  6. fence > highest → only segment 1, else SEGMENT_GAP (on PROCEED the
//     old highest fence's lineage, if known and another, joins
//     PriorLineages with the old highest fence, the newest
//     MaxPriorLineages kept);
//  7. fence = highest → seq = lastSeq+1, else SEGMENT_GAP (another root gets
//     SEGMENT_GAP only under a record without a root, which Decide never
//     writes);
//  8. PROCEED: the mutation is marked in flight.
//
// # A fence issued twice: FENCE_REGRESSION
//
// The registry issues each fence once, to one grant, whose operation root
// binds the resource, the fence and the grant ID; renewing a grant keeps its
// token, so its root never changes. Begin's input is authenticated (the
// grant's signature was checked before Begin), so an accepted fence arriving
// under another root proves the registry issued it twice: typically a
// registry restored from an old snapshot handing out tokens it had already
// issued. Steps 2 and 4 catch that wherever the store can see it (the receipt
// of that very segment, or the highest fence's own root); a lower fence with
// neither is caught by its evidence (step 3) or is STALE_OWNER, refused all
// the same.
//
// The attempt is refused and the resource pauses in the same atomic step
// (PauseFenceRegression, with the attempted fence, its evidence and a detail
// naming both roots and the leases or the receipt, cut at MaxDetailLen), so
// the restore alarm fires (ListPaused). Until an operator resumes, every Begin
// is PAUSED, the legitimate owner's included: the store cannot tell which of
// the two grants the registry now believes in. The pause is the record; no
// quarantine entry is written (quarantine is for a payload conflicting with
// an accepted segment; here the registry is at fault, not the segment), and
// the same attempt after a resume pauses again.
//
// Nothing else changes: the highest fence, its root and segment stay, and a
// mutation already in flight is left alone. It was begun before the evidence
// arrived and may have reached the backend, so its Commit, MarkUnknown, Abort
// or Resolve is still recorded under the pause (a receipt written, the segment
// advanced); only new Begins wait for the operator. That is why step 4 comes
// before BUSY: the evidence is made durable at once instead of waiting for a
// mutation that may be slow to settle. A pause or an unknown outcome (step 1)
// still comes first: either already refuses every attempt.
//
// # Issuer lineages
//
// Every registry data set has a lineage, a random ID written at its first
// start and never changed, which its grants carry (Evidence.Lineage). An
// issuer epoch or a backend revision only orders grants of one lineage: a
// new or replaced registry starts its own counters. Such a registry is
// required to continue above every fence already accepted (its fence
// floor); when it does, its first grant is a higher fence (step 6) and the
// old lineage becomes a prior one, so the old registry's grants are merely
// stale from then on. When it does not, its grant below the highest fence
// comes from a lineage the record never saw superseded: FENCE_REGRESSION
// and a pause, from the first such grant on and with no receipt needed.
// Grants of registries that predate lineages carry none (""): between them
// and any lineage, the rules stay those of one lineage.
//
// # When a new fence becomes the highest: at Begin
//
// A fence above the highest is recorded as the new highest at Begin, in the
// same atomic step that marks its first segment in flight, not at Commit.
//
// Safety argument. The property to keep is: once a fence F has been accepted,
// no write with a fence below F is ever accepted. Raising at Begin is strictly
// stronger: from the moment F's first segment may reach the backend, every
// lower fence is already STALE_OWNER, so an old owner can never slip a write in
// between F's Begin and F's Commit. (Raising at Commit would leave exactly
// that window open: the old owner's Begin would see the old highest while F's
// write is already at the backend.) Raising early never accepts anything
// extra; it can only reject more, and what it rejects is a fence the registry
// has already superseded by issuing F.
//
// If F's mutation is then Aborted (proven never sent) or resolved as not
// applied, the highest fence stays F with lastSeq 0: it is never lowered.
// F's owner may retry segment 1; lower fences stay rejected, which is correct
// because the registry issued F after them. Another grant carrying F (another
// root) is FENCE_REGRESSION, not a new owner: F was issued once already.
// There is no API that lowers HighestFence or resets a resource; Resume
// clears a pause and keeps it, and FENCE_REGRESSION never changes it.
//
// # Owners
//
// BeginInput.Owner is the caller's workload identity, which the caller has
// checked equals the grant's owner. It travels with the in-flight Mutation
// into the Receipt that Commit or Resolve writes, so that receipts can be
// shown only to the owner whose grant produced them. A receipt (or marker)
// stored before owners were kept reads back with Owner "": it belongs to no
// worker.
//
// # Unknown outcomes and reconciliation
//
// MarkUnknown records that the in-flight mutation may or may not have been
// applied. The resource then blocks (MUTATION_UNKNOWN) until Resolve says it
// was applied (a receipt is written and the segment advances) or proves it was
// not (the marker is cleared and the segment does not advance). Commit is still
// accepted for an unknown mutation: an answer that arrives late is the truth.
// Abort is only for a request proven never sent; it is refused once the caller
// itself has declared the outcome unknown, and when the marker carries earlier
// attempts (a RetryUnknown) Abort returns it to UNKNOWN instead of clearing it,
// because the earlier attempt may still have landed.
//
// # Not applied only when it is stable
//
// "Not found yet" is not "never will be": a backend may still apply a request
// after the sidecar gave up on its answer (its own queues, a slow database).
// So every Begin carries QuietAt, the caller's promise that no attempt of the
// mutation can take effect after it (the forward's own deadline, taken before
// Begin, plus the backend's declared apply delay); a RetryUnknown raises it,
// never lowers it. Resolve as not applied is accepted only on evidence
// gathered at or after the marker's quiet time (Mutation.QuietBy), the
// evidence's time being Now minus ResolveInput.EvidenceAge; earlier it is
// refused with a *NotQuietError (ErrNotQuiet) and writes nothing. The one
// exception is evidence that closes the operation (ResolveInput.Closed: the
// backend recorded that it will never apply the mutation). Applied, and a
// late Commit, are accepted at any time. A marker without QuietAt (stored by
// an earlier version, or begun without one) is quiet LegacyQuietDelay after
// its Deadline.
//
// # Time and identifiers
//
// Backends never read a clock: every input carries Now (and Begin a
// Deadline and a QuietAt). Times are stored in UTC without a monotonic reading. Receipt and
// quarantine IDs are derived from their inputs (ReceiptID, QuarantineID), so a
// deterministic simulation replays identically.
//
// # Retention and compaction
//
// Receipts and quarantine entries would grow without bound; Compact deletes
// those past a retention (an age, a count per resource), at most MaxDeletes
// per call. PlanCompaction decides for one resource, reading its record, its
// receipts from the oldest (fence, seq) and its quarantine entries, and
// returns what to delete in one atomic step with that read. Compact never
// writes a record: the highest fence, its root, the last segment, the
// mutation in flight or unknown and the pause all stay. It only ever deletes
// the receipt of a segment (f, s) with f < HighestFence, or f = HighestFence
// and s < LastSeq; so the receipt of the last accepted segment (HighestFence,
// LastSeq), and that of the mutation in flight (HighestFence, LastSeq+1),
// are always kept, and a retry of the last segment still gets REPLAY.
//
// Safety argument: a compacted segment can never be accepted again. Take a
// deleted receipt (f, s) of a resource whose record, at deletion, has highest
// fence H and last segment L; then f < H, or f = H and s < L. Neither can go
// back afterwards: H never decreases, and L only grows while H stays under
// its root (a new, higher fence replaces both, and then f < H). The one
// exception is Repair of a fence the registry issued twice: the record then
// takes the anchor's root and last segment, which may be lower; a segment of
// the replaced root is refused by step 4 (the highest fence under another
// root pauses), so the argument holds per root. Decide answers PROCEED in
// exactly three places: a fence above the highest at segment 1 (excluded,
// f <= H); the highest fence under its own root at segment lastSeq+1
// (excluded, s <= L < L+1); and the RetryUnknown of the unknown mutation,
// whose segment is (H, L+1) (excluded likewise). So a later Begin of (f, s),
// now without a receipt, is refused: STALE_OWNER when f < H (or
// FENCE_REGRESSION, which pauses, when its evidence says the registry issued
// it later), SEGMENT_GAP when f = H (a replay carries the root fence H was
// accepted under; a block such as PAUSED, BUSY or MUTATION_UNKNOWN may
// answer first). What compaction takes away is
// only a replay's stored response: the client gets STALE_OWNER or
// SEGMENT_GAP instead of REPLAY. Quarantine entries are evidence for
// operators and never read by a decision, so deleting them changes no
// answer.
//
// # Store loss and repair
//
// A fenced store that loses data (a Redis restarted empty or restored from
// an older RDB/AOF, a bbolt file replaced) would accept again what it
// forgot. So the sidecar keeps, outside the store (at the registry), a
// fencegate.Progress per resource that the store's record must always
// cover: ProgressOf(record) is what a record shows, BeginResult.Prior and
// BeginResult.Record the step a Begin took, and a mutation is forwarded
// only once the anchor accepted that step (Prior covering it). A store
// found behind its anchor is repaired: Repair (DecideRepair) raises the
// record to the anchor, never lowering anything, puts back as UNKNOWN
// (cause STORE_LOSS) a mutation the anchor says may have reached the
// backend, and pauses the resource with reason STORE_LOSS; Begin then
// answers PAUSED, whose code is FENCE_REGRESSION, until an operator
// resumes. The one case where a highest fence goes down is the caller's
// own Begin that found the loss (RepairInput.Withdraw): when it raised the
// fence above the anchored one over an anchored pending mutation, it is
// withdrawn (it was neither anchored nor forwarded), so that mutation comes
// back UNKNOWN instead of hiding under a fence nothing was forwarded with.
// Generation names the store's data set (another one, or none,
// is a loss of the whole store), and Records pages through every record
// (to seed a new anchor).
//
// # Trust pins
//
// The store keeps the keys the sidecar trusts (TrustedKeys, RecordTrust,
// DecideTrust): kid, RFC 7638 thumbprint, algorithm, when and how each was
// pinned, and until when a grant it signed may still be held. They are
// shared by the replicas of a store and survive restarts. A store without
// pins trusts the first bundle it is shown (FIRST_USE, atomically: one
// bundle wins); any later key is pinned only by an operator or a bundle
// signed by a pinned key; a key in use is unpinned only by force, and the
// last pins never. The pin set also keeps a signed-bundle watermark
// (TrustedKey.BundleSeq, in every pin, so it outlives any one of them): a
// signed bundle pins keys only at a sequence above it, so an old signed
// bundle replayed cannot bring back a key removed since.
//
// # The enforcement ledger
//
// The store also keeps the sidecar's enforcement ledger: per route shape,
// whether it is enforced and since when, with a bounded history (see
// DecideEnforcement). It lives with the fenced store so that every replica
// sharing the store, and a fresh pod on an empty disk, see the same ledger.
// Each shape's entry is its own unit of atomicity.
//
// # Bad input
//
// Inputs are validated before anything is read or written. Out-of-range values
// (fence 0, seq 0, empty or oversized strings, malformed digests, a deadline
// not after Now) return an *InputError wrapping ErrInvalidInput; nothing is
// written. The limits are the exported constants in limits.go.
package store
