// Package pgfence is library mode: the sidecar's acceptance point run
// inside a Go service's own PostgreSQL transaction, so that the business
// change, the fence's record and the receipt commit together or not at
// all.
//
//	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//		rc, err := fence.Apply(ctx, tx, pgfence.Request{...})
//		if err != nil {
//			return err // a *fencegate.Problem (or a replay: errors.Is(err, pgfence.ErrReplayed))
//		}
//		_, err = tx.Exec(ctx, "UPDATE invoices SET total = $1 WHERE batch = $2", total, batch)
//		return err
//	})
//
// Apply authenticates the grant as the sidecar does (package authn: the
// trust bundle pinned in the store, a fresh lockStatus.v1 proof or a
// linearizable registry read, the grant's binding to the resource and the
// caller), then decides on the fence and the segment with the store's own
// rules (store.DecideAccept: store.Decide, and on PROCEED the commit of
// the receipt at once) over the tables of a store/postgres Store, in the
// caller's transaction. There is no MUTATION_UNKNOWN: nothing is in flight
// between the decision and the write, and a transaction that rolls back
// leaves nothing.
//
//   - A refusal is a *fencegate.Problem with the sidecar's code and status
//     (STALE_OWNER, SEGMENT_GAP, SEGMENT_CONFLICT, FENCE_REGRESSION,
//     GRANT_NOT_HELD, ...), and changes nothing in the caller's
//     transaction. What the store keeps of a refusal whatever happens to
//     the service's transaction (the pause of a FENCE_REGRESSION, the
//     quarantine entry of a SEGMENT_CONFLICT) is written in a transaction
//     of the store's own (store.KeepRejection).
//   - A replay of an accepted (fence, segment) with the same payload is an
//     error too, errors.Is(err, ErrReplayed), carrying the stored receipt
//     (*Replayed): returning it rolls the transaction back, so a caller
//     that does not look for replays never applies a write twice.
//   - A failure of the database is an error that is also a
//     STORE_UNAVAILABLE *fencegate.Problem; postgres.IsRetryable reports
//     the ones after which the whole transaction runs again (a
//     serialization failure, a deadlock, a record created concurrently).
//     Fence.RunTx runs a transaction with those retries.
//
// Apply runs at any isolation level: it locks the resource's record row
// for the rest of the transaction (postgres.Store.TxFor), inside a
// savepoint that a refusal rolls back, releasing the lock.
//
// Handler is the same for a Go service that owns its HTTP handler: it
// reads the request contract (Fence-Grant, Fence-Segment, Fence-Status,
// Content-Digest), establishes the caller's identity, runs the handler in
// the transaction and stores its response as the receipt, answering
// replays from it, and refusals as the sidecar does (problem+json).
//
// pgfence imports the contract, authn (with verify, identity and clock),
// store (with its codec), store/postgres and the sidecar's
// request-contract packages proxy/inbound and proxy/outbound (the header
// parsers, the stored-response rules: they import the contract and store
// only); never the sidecar or the registry (TestLibraryModeImportsNoServer).
package pgfence
