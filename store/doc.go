// Package store defines the fenced store: the one place where "stale" is
// decided. For every resource it keeps the highest accepted fence token, the
// operation root that fence belongs to, the last accepted segment, a receipt
// per accepted segment, the mutation currently in flight, and a pause state.
//
// The package holds domain types, validation, sentinel errors and the pure
// decision logic; it imports no backend. Backends live in their own packages
// (store/memory, store/bolt, later Redis) and all of them decide through the
// same pure functions in this package:
//
//   - Decide (Begin): the decision table of DESIGN.md "applyFencedMutation"
//     step 4, over (record, the receipt stored for (fence, seq), input);
//   - ApplyCommit, ApplyMarkUnknown, ApplyAbort, ApplyResolve, ApplyPause,
//     ApplyResume: the other transitions.
//
// Each function reads at most the resource's record and one receipt, and
// returns a Change (record, receipt, quarantine entry) that a backend writes in
// one atomic step. That shape is what lets a single Redis Lua script implement
// a decision later: it mirrors Decide, reading the same two keys.
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
//  2. a receipt exists for (fence, seq): same payload digest and root →
//     REPLAY with the stored receipt and response, even if a newer fence took
//     over since; anything else → SEGMENT_CONFLICT and a quarantine entry;
//  3. fence < highest → STALE_OWNER, or FENCE_REGRESSION when the attempt's
//     evidence shows the registry issued it after the highest fence (a higher
//     issuer epoch, or the same epoch and a higher backend revision): the
//     resource is then paused in the same step;
//  4. another mutation in flight → BUSY (with that mutation and its deadline);
//  5. fence > highest → only segment 1, else SEGMENT_GAP;
//  6. fence = highest → only the same root (else SEGMENT_GAP, detail
//     "operation root differs") and seq = lastSeq+1 (else SEGMENT_GAP);
//  7. PROCEED: the mutation is marked in flight.
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
// because the registry issued F after them. There is no API that lowers
// HighestFence or resets a resource; Resume clears a pause and keeps it.
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
// # Time and identifiers
//
// Backends never read a clock: every input carries Now (and Begin a
// Deadline). Times are stored in UTC without a monotonic reading. Receipt and
// quarantine IDs are derived from their inputs (ReceiptID, QuarantineID), so a
// deterministic simulation replays identically.
//
// # Bad input
//
// Inputs are validated before anything is read or written. Out-of-range values
// (fence 0, seq 0, empty or oversized strings, malformed digests, a deadline
// not after Now) return an *InputError wrapping ErrInvalidInput; nothing is
// written. The limits are the exported constants in limits.go.
package store
