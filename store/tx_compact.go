package store

import "context"

// Compact of NewTxBackend's Store: store.PlanCompaction over each
// resource's CompactSnapshot, its deletions written in the transaction of
// that read. All resources of one call share one transaction, or with
// TxOptions.CompactEachResource each has its own; either way resources go
// in resource order until MaxDeletes, and when the budget runs out the
// call looks on for a resource with something to delete, to set More.
func (b *txBackend) Compact(ctx context.Context, in CompactInput) (CompactResult, error) {
	if err := in.Validate(); err != nil {
		return CompactResult{}, err
	}
	if !b.eachResource {
		var res CompactResult
		err := b.s.Update(ctx, "compact", func(tx Tx) error {
			res = CompactResult{}
			resources, err := tx.CompactResources()
			if err != nil {
				return err
			}
			for _, resource := range resources {
				done, err := compactStep(tx, resource, in, &res)
				if err != nil || done {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return CompactResult{}, err
		}
		return res, nil
	}
	var resources []string
	err := b.s.View(ctx, func(tx Tx) error {
		var err error
		resources, err = tx.CompactResources()
		return err
	})
	if err != nil {
		return CompactResult{}, err
	}
	var res CompactResult
	for _, resource := range resources {
		step := b.s.Update
		if res.Receipts+res.Quarantine == in.MaxDeletes {
			step = func(ctx context.Context, _ string, fn func(Tx) error) error { return b.s.View(ctx, fn) }
		}
		var done bool
		err := step(ctx, "compact", func(tx Tx) error {
			r := res
			var err error
			done, err = compactStep(tx, resource, in, &r)
			if err == nil {
				res = r
			}
			return err
		})
		if err != nil {
			return res, err
		}
		if done {
			break
		}
	}
	return res, nil
}

// compactStep compacts resource within the budget res leaves, adding what
// it deleted to res. With the budget spent it only looks: something to
// delete sets res.More, and done says the call is over.
func compactStep(tx Tx, resource string, in CompactInput, res *CompactResult) (done bool, err error) {
	snap, err := tx.CompactSnapshot(resource)
	if err != nil {
		return false, err
	}
	now, err := tx.Now()
	if err != nil {
		return false, err
	}
	in.Now = at(in.Now, now)
	budget := in.MaxDeletes - res.Receipts - res.Quarantine
	look := budget == 0
	if look {
		budget = 1
	}
	p, err := PlanCompaction(snap.Record, snap.Receipts, tx.Stamps(resource), snap.Quarantine, in, budget)
	if err != nil {
		return false, err
	}
	if look {
		res.More = p.Deletes() > 0
		return res.More, nil
	}
	for _, st := range p.Receipts {
		if err := tx.DeleteReceipt(st); err != nil {
			return false, err
		}
	}
	if len(p.Quarantine) > 0 {
		if err := tx.DeleteQuarantine(resource, p.Quarantine); err != nil {
			return false, err
		}
	}
	res.Receipts += len(p.Receipts)
	res.Quarantine += len(p.Quarantine)
	res.More = res.More || p.More
	return p.More, nil
}
