package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate"
)

// StagedTxStore is a TxStore whose writes can leave work to run outside
// the serial part of their transaction (registry/bolt, where concurrent
// operations share one group transaction that its leader runs one
// function after another). UpdateStaged is Update for a function that may
// return a TxStage: its Work runs in the caller's goroutine while the
// transaction goes on with the other operations grouped with it, and its
// Finish in the same transaction after every Work, before the commit;
// nothing is committed without its Finish, and a failed Work or Finish
// fails the transaction. Like fn, they may run more than once.
type StagedTxStore interface {
	TxStore
	UpdateStaged(ctx context.Context, fn func(Tx) (*TxStage, error)) error
}

// TxStage is what an UpdateStaged function leaves to do.
type TxStage struct {
	Work   func() error
	Finish func(Tx) error
}

// errSealPending: a decision read a lease granted in the same group
// transaction and not sealed yet (its Token and Digest are written by the
// grant's Finish). The operation writes nothing and runs again in a later
// transaction, where the grant is sealed or gone.
// It wraps ErrBackend: a read outside a write transaction never meets an
// unsealed lease, unless the store is corrupt.
var errSealPending = fmt.Errorf("%w: lease sealed later in this transaction", ErrBackend)

// maxSealRetries bounds those runs: the group that wrote the lease
// commits or rolls back before the next one starts, so one is enough.
const maxSealRetries = 3

// retrySealPending runs op again while it meets an unsealed lease.
func retrySealPending(op func() error) error {
	var err error
	for range maxSealRetries {
		if err = op(); !errors.Is(err, errSealPending) {
			return err
		}
	}
	return err
}

// acquireStaged is Acquire on a StagedTxStore: the grant is sealed in the
// caller's goroutine, off the group's serial path. The function decides
// as Acquire does and writes the Change with the granted lease and its
// request index entry, the lease without its Token and Digest; Work signs
// the lease's claims (SealGrant's); Finish sets Token and Digest on the
// lease as it is now in the transaction and writes the digest index entry.
// A lease is thus never committed unsealed, and an operation of the same
// group that reads it before its Finish meets errSealPending
// (loadLeaseRecord) and runs again after the commit. The fence is
// reserved by the same commit that makes the grant durable, and the grant
// is handed out only after it, as on every backend.
func (b txBackend) acquireStaged(ctx context.Context, s StagedTxStore, in AcquireInput, seal SealFunc) (AcquireResult, error) {
	var res AcquireResult
	err := retrySealPending(func() error {
		return s.UpdateStaged(ctx, func(tx Tx) (*TxStage, error) {
			snap, err := loadAcquire(tx, in)
			if err != nil {
				return nil, err
			}
			var ch Change
			if res, ch, err = DecideAcquire(snap, in); err != nil {
				return nil, err
			}
			if ch.Empty() {
				return nil, errRollback
			}
			g, err := writeUnsealed(tx, ch)
			if err != nil || g == nil {
				return nil, err
			}
			return sealStage(g, in.Issuer, seal, &res), nil
		})
	})
	if errors.Is(err, errRollback) {
		err = nil
	}
	if err != nil {
		return AcquireResult{}, err
	}
	return res, nil
}

// writeUnsealed writes ch, and its grant, if any, with its request index
// entry but without its Token, Digest and digest index entry, which the
// grant's sealStage writes. It returns the grant (nil when none).
func writeUnsealed(tx Tx, ch Change) (*LeaseRecord, error) {
	g := ch.Grant
	ch.Grant = nil
	if err := writeChange(tx, ch); err != nil || g == nil {
		return nil, err
	}
	if err := tx.PutLease(*g); err != nil {
		return nil, err
	}
	return g, tx.PutRequest(g.Owner, g.RequestID, g.Lease)
}

// sealStage signs g's claims (SealGrant's) in Work, and in Finish sets
// Token and Digest on the lease as it is now in the transaction (a later
// decision of the group may have ended it), writes its digest index entry
// and puts them in res.
func sealStage(g *LeaseRecord, issuer string, seal SealFunc, res *AcquireResult) *TxStage {
	var tok []byte
	return &TxStage{
		Work: func() error {
			claims := GrantClaims(*g, issuer)
			var err error
			if tok, err = seal(&claims); err != nil {
				return fmt.Errorf("registry: seal grant: %w", err)
			}
			return nil
		},
		Finish: func(tx Tx) error {
			cur, found, err := tx.Lease(g.Lease)
			if err != nil {
				return err
			}
			if !found || cur.GrantID != g.GrantID || cur.Token != "" {
				return fmt.Errorf("%w: grant of lease %s changed before it was sealed", ErrBackend, g.Lease)
			}
			cur.Token, cur.Digest = string(tok), fencegate.Digest(tok)
			if err := tx.PutLease(cur); err != nil {
				return err
			}
			res.View.Lease.Token, res.View.Lease.Digest = cur.Token, cur.Digest
			return tx.PutDigest(cur.Digest, cur.Lease)
		},
	}
}
