package registry

import (
	"context"
	"time"
)

// Tx is one transaction of a transactional store. The memory and bbolt
// backends implement it; NewTxBackend turns it into a Backend whose every
// operation is one transaction running the shared decision code, so both
// decide identically. Get methods report found=false for a missing key.
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
	Policies() ([]Policy, error)
	PutPolicy(Policy) error
	// EachLease calls fn for every stored lease, in no particular order.
	EachLease(fn func(LeaseRecord) error) error
	// DeleteLease removes a lease and its request and digest index entries.
	DeleteLease(l LeaseRecord) error
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

func (b txBackend) Close() error { return b.s.Close() }

func (b txBackend) Acquire(ctx context.Context, in AcquireInput, seal SealFunc) (AcquireResult, error) {
	if err := in.validate(); err != nil {
		return AcquireResult{}, err
	}
	var res AcquireResult
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		res, err = ApplyAcquire(tx, in, seal)
		if res.Busy {
			return errRollback // nothing to write
		}
		return err
	})
	if err == errRollback {
		err = nil
	}
	return res, err
}

func (b txBackend) Renew(ctx context.Context, in RenewInput) (LeaseView, error) {
	var v LeaseView
	var decision error
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		v, decision, err = ApplyRenew(tx, in)
		return err
	})
	if err != nil {
		return v, err
	}
	return v, decision
}

func (b txBackend) Release(ctx context.Context, in ReleaseInput) (LeaseView, error) {
	var v LeaseView
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		v, err = ApplyRelease(tx, in)
		return err
	})
	return v, err
}

func (b txBackend) Lease(ctx context.Context, q LeaseQuery) (LeaseView, error) {
	var v LeaseView
	err := b.s.View(ctx, func(tx Tx) error {
		var err error
		v, err = ReadLease(tx, q)
		return err
	})
	return v, err
}

func (b txBackend) Resource(ctx context.Context, resource string, now time.Time) (ResourceView, error) {
	var v ResourceView
	err := b.s.View(ctx, func(tx Tx) error {
		var err error
		v, err = ReadResource(tx, resource, now)
		return err
	})
	return v, err
}

func (b txBackend) BumpEpoch(ctx context.Context) (Meta, error) {
	var m Meta
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		m, err = ApplyBumpEpoch(tx)
		return err
	})
	return m, err
}

func (b txBackend) RaiseFenceFloor(ctx context.Context, resource string, floor uint64) (Meta, ResourceRecord, error) {
	var m Meta
	var r ResourceRecord
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		m, r, err = ApplyFenceFloor(tx, resource, floor)
		return err
	})
	return m, r, err
}

func (b txBackend) PutPolicy(ctx context.Context, p Policy, now time.Time) (Policy, error) {
	var out Policy
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		out, err = ApplyPutPolicy(tx, p, now)
		return err
	})
	return out, err
}

func (b txBackend) DeletePolicy(ctx context.Context, pattern string, now time.Time) (Policy, error) {
	var out Policy
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		out, err = ApplyDeletePolicy(tx, pattern, now)
		return err
	})
	return out, err
}

func (b txBackend) Policies(ctx context.Context) ([]Policy, error) {
	var out []Policy
	err := b.s.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.Policies()
		return err
	})
	return out, err
}

func (b txBackend) Meta(ctx context.Context) (Meta, error) {
	var m Meta
	err := b.s.View(ctx, func(tx Tx) error {
		var err error
		m, err = tx.Meta()
		return err
	})
	return m, err
}

func (b txBackend) Compact(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	var n int
	err := b.s.Update(ctx, func(tx Tx) error {
		var err error
		n, err = ApplyCompact(tx, endedBefore, limit)
		return err
	})
	return n, err
}
