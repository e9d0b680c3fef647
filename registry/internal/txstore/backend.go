package txstore

import (
	"context"

	"github.com/fencegate/fencegate/registry"
)

// Store is a shared-store backend's Store, as Backend needs it.
type Store interface {
	registry.TxStore
	Notify(ctx context.Context, resource string) error
	Subscribe(ctx context.Context) <-chan string
	Run(ctx context.Context) error
	Restores() uint64
	Seen() (revision, fence uint64)
}

// Backend is the registry.Backend of a Store's OpenBackend: the
// TxStore's backend (registry.NewTxBackend), plus the Store's wake-ups
// across processes (registry.Notifier), its state-file flusher
// (registry.Runner) and its rollback counts.
type Backend struct {
	registry.Backend
	// TxStore is the Store behind it.
	TxStore Store
}

// NewBackend returns the Backend of s.
func NewBackend(s Store) Backend { return Backend{Backend: registry.NewTxBackend(s), TxStore: s} }

// Notify implements registry.Notifier.
func (b Backend) Notify(ctx context.Context, resource string) error {
	return b.TxStore.Notify(ctx, resource)
}

// Subscribe implements registry.Notifier.
func (b Backend) Subscribe(ctx context.Context) <-chan string { return b.TxStore.Subscribe(ctx) }

// Run implements registry.Runner (the Store's state-file flusher).
func (b Backend) Run(ctx context.Context) error { return b.TxStore.Run(ctx) }

// Restores reports how many rollbacks of the store's state this process
// detected and recovered.
func (b Backend) Restores() uint64 { return b.TxStore.Restores() }

// Seen reports the highest revision and fence this process has seen.
func (b Backend) Seen() (revision, fence uint64) { return b.TxStore.Seen() }
