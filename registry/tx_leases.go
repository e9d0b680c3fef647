package registry

import "context"

// The operator's lease operations of NewTxBackend's Backend.

func (b txBackend) RevokeLease(ctx context.Context, in RevokeInput) (RevokeResult, error) {
	var res RevokeResult
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadLease(tx, in.Lease, true)
		if err != nil {
			return Change{}, err
		}
		var ch Change
		res, ch, err = DecideRevoke(snap, in)
		return ch, err
	})
	if err != nil {
		return RevokeResult{}, err
	}
	return res, nil
}

// Leases reads every stored lease the query selects (Tx.ListLeases has no
// order, so a page costs one walk of the stored leases, which compaction
// bounds) and decides the page.
func (b txBackend) Leases(ctx context.Context, q LeasesQuery) (LeasePage, error) {
	if err := q.Validate(); err != nil {
		return LeasePage{}, err
	}
	var page LeasePage
	err := b.read(ctx, func(tx Tx) error {
		var snap LeasesSnapshot
		var err error
		if snap.Meta, err = tx.Meta(); err != nil {
			return err
		}
		if snap.Policies, err = tx.Policies(); err != nil {
			return err
		}
		err = tx.ListLeases(func(l LeaseRecord) error {
			if q.Selects(l) {
				snap.Leases = append(snap.Leases, l)
			}
			return nil
		})
		if err != nil {
			return err
		}
		page, err = DecideLeases(snap, q)
		return err
	})
	return page, err
}
