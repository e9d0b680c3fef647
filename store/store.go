package store

import (
	"context"
	"time"
)

// Store is a fenced store backend. Every method is atomic per resource and
// linearizable; writes are durable when the method returns (for backends that
// are durable at all). Methods validate their input first and return an
// *InputError, writing nothing, on bad input. A context already done when a
// call starts returns its error; a write that has started is not abandoned.
type Store interface {
	// Begin decides an authenticated attempt (see Decide) and, on PROCEED,
	// marks the mutation in flight in the same atomic step.
	Begin(ctx context.Context, in BeginInput) (BeginResult, error)
	// Commit stores the receipt, advances the segment and clears the
	// in-flight marker in one transaction (see DecideCommit).
	Commit(ctx context.Context, in CommitInput) (Receipt, error)
	// MarkUnknown declares the in-flight mutation's outcome unknown; the
	// resource blocks until it is resolved (see DecideMarkUnknown).
	MarkUnknown(ctx context.Context, in MarkUnknownInput) (Mutation, error)
	// Resolve settles an unknown mutation: applied with its receipt, or
	// proven not applied (see DecideResolve).
	Resolve(ctx context.Context, in ResolveInput) (ResolveResult, error)
	// Abort withdraws an in-flight mutation proven never sent (see
	// DecideAbort). The highest fence is kept.
	Abort(ctx context.Context, in AbortInput) (Record, error)
	// Pause pauses a resource (see DecidePause).
	Pause(ctx context.Context, in PauseInput) (Record, error)
	// Resume clears a pause and keeps the highest fence (see DecideResume).
	Resume(ctx context.Context, resource string) (Record, error)
	// Repair raises a resource's record to what the store's outside anchor
	// says it accepted and pauses it (STORE_LOSS), never lowering anything
	// (see DecideRepair); it returns the record as stored.
	Repair(ctx context.Context, in RepairInput) (Record, error)

	// Record returns a resource's record, or ErrNotFound.
	Record(ctx context.Context, resource string) (Record, error)
	// Receipt returns the receipt of an accepted segment, or ErrNotFound.
	Receipt(ctx context.Context, key ReceiptKey) (Receipt, error)
	// ReceiptsByOperation returns the receipts stored under an operation ID
	// (root + "/" + seq) of a resource, by ascending fence; more than one
	// only if a root was reused under several fences. ErrNotFound if none.
	ReceiptsByOperation(ctx context.Context, resource, operationID string) ([]Receipt, error)
	// ReceiptsOf returns one page of a resource's receipts in (fence, seq)
	// order (see ReceiptsQuery); none is an empty page, not ErrNotFound.
	ReceiptsOf(ctx context.Context, q ReceiptsQuery) ([]Receipt, error)
	// ReceiptByID returns the receipt of resource whose ID is id (the
	// Fence-Receipt header's value, ReceiptID), or ErrNotFound. It reads
	// the resource's receipts until it finds it: the cost of a lookup
	// grows with the receipts the resource keeps (compaction bounds them).
	ReceiptByID(ctx context.Context, resource, id string) (Receipt, error)
	// ListUnknown returns the mutations that need reconciliation at now:
	// UNKNOWN ones and IN_FLIGHT ones past their deadline, by resource.
	ListUnknown(ctx context.Context, now time.Time) ([]Mutation, error)
	// ListPaused returns the records of paused resources, by resource.
	ListPaused(ctx context.Context) ([]Record, error)
	// ListQuarantined returns the quarantine entries of a resource, or of
	// all resources when resource is "", by resource then ID.
	ListQuarantined(ctx context.Context, resource string) ([]Quarantine, error)
	// Records returns one page of records in resource order (see
	// RecordsQuery): every record, paused-only ones included.
	Records(ctx context.Context, q RecordsQuery) ([]Record, error)

	// Generation returns the store's generation: a random ID of its data
	// set, made when the data set was (an empty Redis, a new bbolt file, a
	// new memory store), 1..fencegate.MaxGenerationLen bytes of
	// [0-9a-z]. The same data set always answers the same ID; another ID
	// means another data set. The outside anchor registers it.
	Generation(ctx context.Context) (string, error)

	// Enforcements returns the enforcement ledger: the entry of every route
	// shape ever enforced, by shape.
	Enforcements(ctx context.Context) ([]Enforcement, error)
	// RecordEnforcement applies an ENFORCE or FORCED_DOWNGRADE to the
	// ledger entry of a shape (see DecideEnforcement) and returns the entry
	// as stored. The entry is its own unit of atomicity.
	RecordEnforcement(ctx context.Context, in EnforcementInput) (Enforcement, error)

	// TrustedKeys returns the trust pins (the keys the sidecar trusts),
	// by kid.
	TrustedKeys(ctx context.Context) ([]TrustedKey, error)
	// RecordTrust applies a PIN, UNPIN or IN_USE to the trust pins (see
	// DecideTrust) and returns the pins after it, by kid. The whole pin set
	// is one unit of atomicity.
	RecordTrust(ctx context.Context, in TrustInput) ([]TrustedKey, error)

	// Compact deletes receipts and quarantine entries past their retention,
	// at most in.MaxDeletes per call (see PlanCompaction). It never changes
	// a record. Each resource is compacted atomically with the read of its
	// record; a call may span several resources.
	Compact(ctx context.Context, in CompactInput) (CompactResult, error)
	// Stats returns the store's size.
	Stats(ctx context.Context) (Stats, error)

	// Close releases the store; later calls return ErrClosed.
	Close() error
}
