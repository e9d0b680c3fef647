package proxy

import (
	"context"

	"github.com/fencegate/fencegate/store"
)

// ReceiptsOf returns one page of resource's receipts in (fence, seq)
// order (store.ReceiptsQuery): the admin API's receipts of a resource.
func (p *Proxy) ReceiptsOf(ctx context.Context, q store.ReceiptsQuery) ([]store.Receipt, error) {
	return p.store.ReceiptsOf(ctx, q)
}

// ReceiptByID returns resource's receipt whose ID is id, the value of the
// Fence-Receipt header the worker got (store.ErrNotFound when none).
func (p *Proxy) ReceiptByID(ctx context.Context, resource, id string) (store.Receipt, error) {
	return p.store.ReceiptByID(ctx, resource, id)
}
