package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
)

// Tx is one transaction of a transactional key-value store. The memory
// and bbolt backends implement it; NewTxBackend turns it into a Backend
// whose every operation is one transaction: load the decision's snapshot,
// call the pure decision function, write its Change. Get methods report
// found=false for a missing key.
type Tx interface {
	Meta() (Meta, error)
	PutMeta(Meta) error
	Resource(id string) (rec ResourceRecord, found bool, err error)
	PutResource(ResourceRecord) error
	Lease(id string) (rec LeaseRecord, found bool, err error)
	PutLease(LeaseRecord) error
	// LeaseByRequest and LeaseByDigest are the secondary indexes.
	LeaseByRequest(owner, requestID string) (leaseID string, found bool, err error)
	PutRequest(owner, requestID, leaseID string) error
	LeaseByDigest(digest string) (leaseID string, found bool, err error)
	PutDigest(digest, leaseID string) error
	Policies() ([]fencegate.Policy, error)
	PutPolicy(fencegate.Policy) error
	// EachLease calls fn for every stored lease, in no particular order.
	EachLease(fn func(LeaseRecord) error) error
	// ListLeases calls fn for every stored lease, in no particular order
	// (a lease listing, Backend.Leases). Unlike EachLease it walks them
	// all, and like AnchorsAfter it is a listing, not a decision's read:
	// a backend need not make the transaction conflict with later writes
	// of what it listed.
	ListLeases(fn func(LeaseRecord) error) error
	// DeleteLease removes a lease and its request and digest index entries.
	DeleteLease(l LeaseRecord) error

	// The anchors of fenced stores (anchor.go). They are not registry
	// writes a grant or a proof states: none of them touches the meta.

	// Lineage is Meta().Lineage. A backend may read it without making the
	// transaction conflict with later writes of the meta (the lineage is
	// written once and never changed), as the anchor steps do: they must
	// not conflict with lease writes. When it is "", the caller reads
	// Meta() (which such a backend watches) before writing the lineage.
	Lineage() (string, error)
	// StoreRecord reads a fenced store's record.
	StoreRecord(store string) (rec StoreRecord, found bool, err error)
	PutStoreRecord(StoreRecord) error
	// Ledger reads a store's enforcement ledger (nil when none).
	Ledger(store string) ([]fencegate.LedgerEntry, error)
	PutLedger(LedgerRecord) error
	// Anchors reads the anchors of resources of store: the map holds the
	// ones stored. A backend reads them together (one round trip).
	Anchors(store string, resources []string) (map[string]fencegate.Progress, error)
	PutAnchor(AnchorRecord) error
	// AnchorsAfter lists up to limit anchors of store whose resource is
	// after after ("" from the first), in resource (byte) order. It is a
	// listing, not a decision's read: a backend need not make the
	// transaction conflict with later writes of what it listed.
	AnchorsAfter(store, after string, limit int) ([]fencegate.ResourceAnchor, error)
	// AnchorCount counts the resources anchored for store (like
	// AnchorsAfter, without conflicts).
	AnchorCount(store string) (uint64, error)
}

// TxStore runs functions in transactions. Update is atomic and durable
// when it returns nil; a returned error rolls everything back.
type TxStore interface {
	Update(ctx context.Context, fn func(Tx) error) error
	View(ctx context.Context, fn func(Tx) error) error
	Close() error
}

// NewTxBackend makes a Backend out of a TxStore.
func NewTxBackend(s TxStore) Backend { return txBackend{s} }

type txBackend struct{ s TxStore }

// errRollback ends an Update whose decision writes nothing.
var errRollback = errors.New("registry: rollback")

// decide runs one read-write step: fn loads a snapshot, decides and
// returns the change, which is written in the same transaction. An empty
// change rolls back (nothing to write, no fsync).
func (b txBackend) decide(ctx context.Context, fn func(Tx) (Change, error)) error {
	return retrySealPending(func() error { return b.decideOnce(ctx, fn) })
}

func (b txBackend) decideOnce(ctx context.Context, fn func(Tx) (Change, error)) error {
	err := b.s.Update(ctx, func(tx Tx) error {
		ch, err := fn(tx)
		if err != nil {
			return err
		}
		if ch.Empty() {
			return errRollback
		}
		return writeChange(tx, ch)
	})
	if errors.Is(err, errRollback) {
		err = nil
	}
	return err
}

func (b txBackend) read(ctx context.Context, fn func(Tx) error) error { return b.s.View(ctx, fn) }

func (b txBackend) Close() error { return b.s.Close() }

func (b txBackend) Acquire(ctx context.Context, in AcquireInput, seal SealFunc) (AcquireResult, error) {
	if err := in.validate(); err != nil {
		return AcquireResult{}, err
	}
	if s, ok := b.s.(StagedTxStore); ok {
		return b.acquireStaged(ctx, s, in, seal)
	}
	var res AcquireResult
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadAcquire(tx, in)
		if err != nil {
			return Change{}, err
		}
		var ch Change
		res, ch, err = DecideAcquire(snap, in)
		if err != nil {
			return Change{}, err
		}
		return ch, SealGrant(&res, &ch, in.Issuer, seal)
	})
	if err != nil {
		return AcquireResult{}, err
	}
	return res, nil
}

func (b txBackend) Renew(ctx context.Context, in RenewInput) (RenewResult, error) {
	var res RenewResult
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadLease(tx, in.Lease, true)
		if err != nil {
			return Change{}, err
		}
		var ch Change
		res, ch, err = DecideRenew(snap, in)
		return ch, err
	})
	if err != nil {
		return RenewResult{}, err
	}
	return res, nil
}

func (b txBackend) Release(ctx context.Context, in ReleaseInput) (ReleaseResult, error) {
	var res ReleaseResult
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadLease(tx, in.Lease, true)
		if err != nil {
			return Change{}, err
		}
		var ch Change
		res, ch, err = DecideRelease(snap, in)
		return ch, err
	})
	if err != nil {
		return ReleaseResult{}, err
	}
	return res, nil
}

func (b txBackend) Lease(ctx context.Context, q LeaseQuery) (LeaseView, error) {
	var v LeaseView
	err := b.read(ctx, func(tx Tx) error {
		id, err := leaseID(tx, q)
		if err != nil {
			return err
		}
		snap, err := loadLease(tx, id, false)
		if err != nil {
			return err
		}
		v, err = DecideStatus(snap, q)
		return err
	})
	return v, err
}

func (b txBackend) Resource(ctx context.Context, resource string, now time.Time) (ResourceView, error) {
	var v ResourceView
	err := b.read(ctx, func(tx Tx) error {
		snap, err := loadResource(tx, resource)
		if err != nil {
			return err
		}
		v, err = DecideResource(snap, resource, now)
		return err
	})
	return v, err
}

func (b txBackend) BumpEpoch(ctx context.Context) (Meta, error) {
	var m Meta
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		cur, err := tx.Meta()
		if err != nil {
			return Change{}, err
		}
		var ch Change
		m, ch, err = DecideBumpEpoch(cur)
		return ch, err
	})
	return m, err
}

func (b txBackend) RaiseFenceFloor(ctx context.Context, resource string, floor uint64) (Meta, ResourceRecord, error) {
	var m Meta
	var r ResourceRecord
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		var snap FenceFloorSnapshot
		var err error
		if snap.Meta, err = tx.Meta(); err != nil {
			return Change{}, err
		}
		if resource != "" {
			if snap.Resource, _, err = tx.Resource(resource); err != nil {
				return Change{}, err
			}
		}
		var ch Change
		m, r, ch, err = DecideFenceFloor(snap, FenceFloorInput{Resource: resource, Floor: floor})
		return ch, err
	})
	return m, r, err
}

func (b txBackend) PutPolicy(ctx context.Context, p fencegate.Policy, now time.Time) (fencegate.Policy, error) {
	var out fencegate.Policy
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		m, err := tx.Meta()
		if err != nil {
			return Change{}, err
		}
		var ch Change
		out, ch, err = DecidePutPolicy(m, p, now)
		return ch, err
	})
	return out, err
}

func (b txBackend) DeletePolicy(ctx context.Context, pattern string, now time.Time) (fencegate.Policy, error) {
	var out fencegate.Policy
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		var snap PolicySnapshot
		var err error
		if snap.Meta, err = tx.Meta(); err != nil {
			return Change{}, err
		}
		ps, err := tx.Policies()
		if err != nil {
			return Change{}, err
		}
		for _, p := range ps {
			if p.Pattern == pattern {
				snap.Existing = &p
			}
		}
		var ch Change
		out, ch, err = DecideDeletePolicy(snap, pattern, now)
		return ch, err
	})
	return out, err
}

func (b txBackend) Policies(ctx context.Context) ([]fencegate.Policy, error) {
	var out []fencegate.Policy
	err := b.read(ctx, func(tx Tx) error {
		var err error
		out, err = tx.Policies()
		return err
	})
	return out, err
}

func (b txBackend) Meta(ctx context.Context) (Meta, error) {
	var m Meta
	err := b.read(ctx, func(tx Tx) error {
		var err error
		m, err = tx.Meta()
		return err
	})
	return m.current(), err
}

func (b txBackend) Init(ctx context.Context, in InitInput) (Meta, error) {
	var m Meta
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		cur, err := tx.Meta()
		if err != nil {
			return Change{}, err
		}
		var ch Change
		m, ch, err = DecideInit(cur, in)
		return ch, err
	})
	return m, err
}

// errCompactLimit stops the lease walk once enough candidates are found.
var errCompactLimit = errors.New("registry: compact limit reached")

func (b txBackend) Compact(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	in := CompactInput{EndedBefore: endedBefore, Limit: limit}
	if err := in.Validate(); err != nil {
		return 0, err
	}
	var n int
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		var snap CompactSnapshot
		err := tx.EachLease(func(l LeaseRecord) error {
			if Compactable(l, endedBefore) {
				snap.Leases = append(snap.Leases, l)
				if len(snap.Leases) >= limit {
					return errCompactLimit
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errCompactLimit) {
			return Change{}, err
		}
		var ch Change
		n, ch, err = DecideCompact(snap, in)
		return ch, err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// loadAcquire reads an AcquireSnapshot: the keys come from in.
func loadAcquire(tx Tx, in AcquireInput) (AcquireSnapshot, error) {
	var s AcquireSnapshot
	var err error
	if s.Meta, err = tx.Meta(); err != nil {
		return s, err
	}
	if s.Policy, err = loadPolicy(tx, in.Resource); err != nil {
		return s, err
	}
	id, found, err := tx.LeaseByRequest(in.Owner, in.RequestID)
	if err != nil {
		return s, err
	}
	if found {
		s.RequestIndex = id
		if s.Requested, err = loadLeaseRecord(tx, id); err != nil {
			return s, err
		}
	}
	if s.Resource, _, err = tx.Resource(in.Resource); err != nil {
		return s, err
	}
	if s.Resource.Holder != "" {
		// The holder may be a grant of this group transaction not sealed
		// yet: DecideAcquire never hands out the holder's token (a busy
		// answer blanks it; an ended holder is rewritten, and its Finish
		// still seals it), so it decides on it.
		if s.Holder, err = loadAnyLeaseRecord(tx, s.Resource.Holder); err != nil {
			return s, err
		}
	}
	return s, nil
}

// leaseID resolves a query to a lease ID through the index it names; a
// missing index entry reads as ErrNotFound.
func leaseID(tx Tx, q LeaseQuery) (string, error) {
	var id string
	var found bool
	var err error
	switch {
	case q.Lease != "":
		return q.Lease, nil
	case q.Digest != "":
		id, found, err = tx.LeaseByDigest(q.Digest)
	case q.Owner != "" && q.RequestID != "":
		id, found, err = tx.LeaseByRequest(q.Owner, q.RequestID)
	default:
		return "", fmt.Errorf("%w: empty lease query", ErrInvalidInput)
	}
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: lease", ErrNotFound)
	}
	return id, nil
}

// loadLease reads a LeaseSnapshot of lease id: the meta, the lease, the
// policy of its resource and, with withResource, its resource's record.
func loadLease(tx Tx, id string, withResource bool) (LeaseSnapshot, error) {
	var s LeaseSnapshot
	var err error
	if s.Meta, err = tx.Meta(); err != nil {
		return s, err
	}
	if s.Lease, err = loadLeaseRecord(tx, id); err != nil || s.Lease == nil {
		return s, err
	}
	if s.Policy, err = loadPolicy(tx, s.Lease.Resource); err != nil {
		return s, err
	}
	if withResource {
		rec, found, err := tx.Resource(s.Lease.Resource)
		if err != nil {
			return s, err
		}
		if found {
			s.Resource = &rec
		}
	}
	return s, nil
}

// loadResource reads a ResourceSnapshot.
func loadResource(tx Tx, resource string) (ResourceSnapshot, error) {
	var s ResourceSnapshot
	var err error
	if s.Meta, err = tx.Meta(); err != nil {
		return s, err
	}
	if s.Resource, _, err = tx.Resource(resource); err != nil {
		return s, err
	}
	if s.Policy, err = loadPolicy(tx, resource); err != nil {
		return s, err
	}
	if s.Resource.Holder != "" {
		if s.Holder, err = loadLeaseRecord(tx, s.Resource.Holder); err != nil {
			return s, err
		}
	}
	return s, nil
}

// loadLeaseRecord reads a lease for a decision. A lease without a token
// is a grant of the same group transaction whose Finish has not run
// (acquireStaged): errSealPending, never decided on.
func loadLeaseRecord(tx Tx, id string) (*LeaseRecord, error) {
	l, found, err := tx.Lease(id)
	if err != nil || !found {
		return nil, err
	}
	if l.Token == "" {
		return nil, errSealPending
	}
	return &l, nil
}

// loadAnyLeaseRecord is loadLeaseRecord for a decision that never hands
// out the lease's token: an unsealed grant is read as it is.
func loadAnyLeaseRecord(tx Tx, id string) (*LeaseRecord, error) {
	l, found, err := tx.Lease(id)
	if err != nil || !found {
		return nil, err
	}
	return &l, nil
}

func loadPolicy(tx Tx, resource string) (fencegate.Policy, error) {
	ps, err := tx.Policies()
	if err != nil {
		return fencegate.Policy{}, err
	}
	return MatchPolicy(ps, resource), nil
}

// writeChange writes ch in tx. An unsealed grant is never written.
func writeChange(tx Tx, ch Change) error {
	if g := ch.Grant; g != nil && (g.Token == "" || g.Digest == "") {
		return fmt.Errorf("%w: grant of lease %s is not sealed", ErrBackend, g.Lease)
	}
	if ch.Meta != nil {
		if err := tx.PutMeta(*ch.Meta); err != nil {
			return err
		}
	}
	if ch.Resource != nil {
		if err := tx.PutResource(*ch.Resource); err != nil {
			return err
		}
	}
	for _, l := range ch.Leases {
		if err := tx.PutLease(l); err != nil {
			return err
		}
	}
	if g := ch.Grant; g != nil {
		for _, err := range []error{tx.PutLease(*g), tx.PutRequest(g.Owner, g.RequestID, g.Lease), tx.PutDigest(g.Digest, g.Lease)} {
			if err != nil {
				return err
			}
		}
	}
	if ch.Policy != nil {
		if err := tx.PutPolicy(*ch.Policy); err != nil {
			return err
		}
	}
	for _, l := range ch.Delete {
		if err := tx.DeleteLease(l); err != nil {
			return err
		}
	}
	if ch.Store != nil {
		if err := tx.PutStoreRecord(*ch.Store); err != nil {
			return err
		}
	}
	for _, a := range ch.Anchors {
		if err := tx.PutAnchor(a); err != nil {
			return err
		}
	}
	if ch.Ledger != nil {
		if err := tx.PutLedger(*ch.Ledger); err != nil {
			return err
		}
	}
	return nil
}
