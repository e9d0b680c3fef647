package registry

import (
	"context"
	"time"

	"github.com/fencegate/fencegate"
)

// Backend stores the registry's state. Every method is one atomic,
// linearizable step of the same shape: load the snapshot the operation's
// decision reads (keys derived from the input), call the pure decision
// function of this package (DecideAcquire, DecideRenew, ...), write the
// Change it returns in the same transaction. memory, bbolt and Redis
// (WATCHed reads, one MULTI/EXEC) implement them with NewTxBackend over a
// transactional store; an etcd backend would use one transaction. Times come in the inputs; backends never read a
// clock.
type Backend interface {
	// Acquire grants the resource or reports its current holder. The same
	// (owner, requestId) always returns the same lease and grant. A grant is
	// sealed (SealGrant) between the decision and the write.
	Acquire(ctx context.Context, in AcquireInput, seal SealFunc) (AcquireResult, error)
	// Renew extends a HELD lease; a lease that is no longer held is
	// answered with RenewResult.NotHeld and its current view.
	Renew(ctx context.Context, in RenewInput) (RenewResult, error)
	// Release ends a lease; idempotent.
	Release(ctx context.Context, in ReleaseInput) (ReleaseResult, error)
	// Lease reads a lease by lease ID, grant digest or (owner, request ID).
	Lease(ctx context.Context, q LeaseQuery) (LeaseView, error)
	// Resource reads a resource's fence sequence and current holder.
	Resource(ctx context.Context, resource string, now time.Time) (ResourceView, error)
	// RevokeLease revokes one lease (DecideRevoke); idempotent.
	RevokeLease(ctx context.Context, in RevokeInput) (RevokeResult, error)
	// Leases lists a page of the stored leases (DecideLeases). It is a
	// listing, not a decision's read: it need not conflict with later
	// writes of what it listed.
	Leases(ctx context.Context, q LeasesQuery) (LeasePage, error)
	// BumpEpoch increments the issuer epoch, revoking every older grant.
	BumpEpoch(ctx context.Context) (Meta, error)
	// RaiseFenceFloor makes every later fence of resource (every resource
	// when resource is "") greater than floor. It never lowers anything.
	RaiseFenceFloor(ctx context.Context, resource string, floor uint64) (Meta, ResourceRecord, error)
	// PutPolicy creates or replaces a policy with a new generation.
	PutPolicy(ctx context.Context, p fencegate.Policy, now time.Time) (fencegate.Policy, error)
	// DeletePolicy replaces a policy with a tombstone of a new generation.
	DeletePolicy(ctx context.Context, pattern string, now time.Time) (fencegate.Policy, error)
	// Policies lists every policy, tombstones included.
	Policies(ctx context.Context) ([]fencegate.Policy, error)
	// Meta reads the registry-wide state (a new registry reads as issuer
	// epoch 1).
	Meta(ctx context.Context) (Meta, error)
	// Init is a registry process's start (DecideInit): the data set gets
	// its lineage if it has none, and the global fence floor is raised to
	// in.FenceFloor. It never changes a lineage or lowers a floor.
	Init(ctx context.Context, in InitInput) (Meta, error)
	// RegisterStore registers a fenced store's generation
	// (DecideRegisterStore).
	RegisterStore(ctx context.Context, in RegisterStoreInput) (RegisterStoreResult, error)
	// Store reads a fenced store's record, ledger and anchor count.
	Store(ctx context.Context, q StoreQuery) (StoreView, error)
	// Anchor decides a batch of anchor steps in one transaction
	// (DecideAnchor).
	Anchor(ctx context.Context, in AnchorInput) (fencegate.AnchorResponse, error)
	// RecordLedger records an enforcement ledger event (DecideLedger).
	RecordLedger(ctx context.Context, in LedgerInput) (StoreView, error)
	// AcknowledgeLoss adopts a store's new generation (DecideAcknowledge).
	AcknowledgeLoss(ctx context.Context, in AcknowledgeInput) (AcknowledgeResult, error)
	// Anchors lists a page of a store's anchors (DecideAnchors).
	Anchors(ctx context.Context, q AnchorsQuery) (fencegate.AnchorPage, error)
	// Compact deletes up to limit leases that ended (released, expired or
	// revoked, as stored) before endedBefore, with their request-ID and
	// digest index entries. Fence sequences are never touched: a compacted
	// lease only stops being found by Lookup and Status (NOT_FOUND).
	Compact(ctx context.Context, endedBefore time.Time, limit int) (int, error)
	// Close releases the backend.
	Close() error
}

// SealFunc signs a grant's claims (see SealGrant). A backend calls it
// inside its atomic step once the decision has allocated the fence, so the
// stored lease and the issued grant are written together.
type SealFunc func(claims *fencegate.Grant) (token []byte, err error)

// AcquireInput asks for a lease. LeaseID and GrantID are fresh random IDs
// made by the caller; they are used only when a new lease is granted.
type AcquireInput struct {
	Resource  string
	Owner     string
	RequestID string
	OpClass   string
	TTL       time.Duration
	Issuer    string
	LeaseID   string
	GrantID   string
	// Lineage is a fresh random lineage, the meta's from this grant on
	// when it has none yet (see Meta.Lineage).
	Lineage string
	// Now is the process's clock; MaxSkew its skew budget: the step
	// decides at DecisionTime(Now, the meta read, MaxSkew).
	Now     time.Time
	MaxSkew time.Duration
}

// AcquireResult is Acquire's answer. Exactly one of Granted, Existing and
// Busy is true.
type AcquireResult struct {
	// Granted: a new lease was granted; View holds it.
	Granted bool
	// Existing: the (owner, requestId) pair was already granted; View holds
	// that lease, whatever its state now.
	Existing bool
	// Busy: the resource is held; Holder is the current lease (its token
	// and digest blanked).
	Busy   bool
	View   LeaseView
	Holder LeaseRecord
	// At is the time the step decided at (DecisionTime), and Meta the
	// registry-wide state it read (its Time: the registry's time).
	At   time.Time
	Meta Meta
	// Ended is the previous lease that this acquire found expired or
	// revoked and closed (for metrics), if any.
	Ended *LeaseRecord
	// FreedAt is when the resource became free before this grant (Unix ms;
	// zero when it never had a holder).
	FreedAt int64
}

// RenewInput extends lease by TTL from Now.
type RenewInput struct {
	Lease string
	Owner string
	// TTL is the new TTL from Now; zero renews by the lease's own TTL (the
	// ttlMs of its grant), as etcd and Consul do.
	TTL time.Duration
	Now time.Time
	// MaxSkew is the process's clock skew budget: the step decides at
	// DecisionTime(Now, the meta read, MaxSkew). 0 decides at Now.
	MaxSkew time.Duration
}

// RenewResult is Renew's answer.
type RenewResult struct {
	// View is the lease after the renewal, or as it stands when refused.
	View LeaseView
	// NotHeld: the lease is no longer held (View.State says whether it
	// expired, was released or was revoked) and was not extended. A
	// refusal is not an error of the backend: it commits the observed end
	// of the lease when that was not written yet.
	NotHeld bool
}

// ReleaseInput ends a lease.
type ReleaseInput struct {
	Lease string
	Owner string
	Now   time.Time
	// MaxSkew is the process's clock skew budget: the step decides at
	// DecisionTime(Now, the meta read, MaxSkew). 0 decides at Now.
	MaxSkew time.Duration
}

// ReleaseResult is Release's answer.
type ReleaseResult struct {
	// View is the lease after the release.
	View LeaseView
	// Released: this call ended a HELD lease. A repeated release, or the
	// release of a lease that had already expired or been revoked, leaves
	// it false.
	Released bool
}

// LeaseQuery selects one lease: by Lease, by Digest, or by Owner and
// RequestID. The effective state is computed at DecisionTime(Now, the
// meta read, MaxSkew).
type LeaseQuery struct {
	Lease     string
	Digest    string
	Owner     string
	RequestID string
	Now       time.Time
	MaxSkew   time.Duration
}

// Notifier is implemented by a Backend that several registry processes
// share (registry/redis): it carries "a lease on this resource ended"
// between them, so a waiting acquire on one process is woken when a lease
// is released on another. Notifications are only a latency hint: a lost
// or late one delays a waiter until its own timer (the holder's expiry)
// and never changes a decision, which is always the backend's.
type Notifier interface {
	// Notify tells every process that a lease on resource ended (""
	// means every resource: an epoch bump or a policy change). It is
	// called after the ending write committed; an error is only logged.
	// A backend whose ending writes carry the notification themselves
	// (registry/redis publishes in the write's MULTI) does nothing for
	// a resource.
	Notify(ctx context.Context, resource string) error
	// Subscribe returns the resources other processes notified; the
	// channel is closed when ctx ends or the backend is closed.
	// Registry.Run subscribes for as long as it runs.
	Subscribe(ctx context.Context) <-chan string
}

// Runner is implemented by a Backend with background work of its own
// (registry/redis saves its state file every second). Registry.Run runs
// it: Run works until ctx ends and returns only after all of it has
// returned. The backend serves without it; its documentation says what
// is then missing.
type Runner interface {
	Run(ctx context.Context) error
}
