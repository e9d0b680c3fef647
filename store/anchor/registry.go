package anchor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
)

// Registry is the registry's store anchor API as the wrapper uses it: the
// shape of client.StoreAnchorAPI (docs/registry-api.md, "Fenced stores"),
// called with the sidecar's own identity. Implementations return errors
// matching ErrRegistryLost when the registry answers STORE_LOST (another
// generation is anchored) and ErrUnregistered when it does not know the
// store (a new or replaced registry); any other error leaves the outcome
// of an anchor request unknown. FromRegistry and FromClient are the two
// implementations.
type Registry interface {
	// RegisterStore registers the store's generation; created reports
	// that the registry held none and anchored this one.
	RegisterStore(ctx context.Context, store, generation string) (anchor fencegate.StoreAnchor, created bool, err error)
	// StoreAnchor reads the registry's record of the store and its ledger.
	StoreAnchor(ctx context.Context, store string) (fencegate.StoreAnchor, error)
	// AnchorProgress decides a batch of anchor steps in one transaction.
	AnchorProgress(ctx context.Context, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error)
	// RecordLedger records an enforcement ledger event.
	RecordLedger(ctx context.Context, store string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error)
	// StoreAnchors reads a page of the store's anchors after after.
	StoreAnchors(ctx context.Context, store, after string, limit int) (fencegate.AnchorPage, error)
}

// Errors a Registry returns (wrapped).
var (
	// ErrRegistryLost: the registry anchored another generation of the
	// store (STORE_LOST): the store lost its data or is another data set.
	ErrRegistryLost = errors.New("store/anchor: the registry anchored another generation of this store (STORE_LOST)")
	// ErrUnregistered: the registry holds no generation of the store (a
	// new or replaced registry, or one restored from a backup older than
	// the store's registration).
	ErrUnregistered = errors.New("store/anchor: the registry does not know this store")
)

// FromRegistry is a Registry over an in-process *registry.Registry (tests,
// the simulation), calling as caller.
func FromRegistry(r *registry.Registry, caller string) Registry {
	return localRegistry{r: r, caller: caller}
}

type localRegistry struct {
	r      *registry.Registry
	caller string
}

func localErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, registry.ErrStoreLost):
		return fmt.Errorf("%w: %w", ErrRegistryLost, err)
	case errors.Is(err, registry.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrUnregistered, err)
	}
	return err
}

func (l localRegistry) RegisterStore(ctx context.Context, store, generation string) (fencegate.StoreAnchor, bool, error) {
	res, err := l.r.RegisterStore(ctx, l.caller, store, generation)
	return res.View.Wire(), err == nil && res.Created, localErr(err)
}

func (l localRegistry) StoreAnchor(ctx context.Context, store string) (fencegate.StoreAnchor, error) {
	v, err := l.r.Store(ctx, l.caller, store)
	return v.Wire(), localErr(err)
}

func (l localRegistry) AnchorProgress(ctx context.Context, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	resp, err := l.r.Anchor(ctx, l.caller, store, req)
	return resp, localErr(err)
}

func (l localRegistry) RecordLedger(ctx context.Context, store string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	v, err := l.r.RecordLedger(ctx, l.caller, store, ev)
	return v.Wire(), localErr(err)
}

func (l localRegistry) StoreAnchors(ctx context.Context, store, after string, limit int) (fencegate.AnchorPage, error) {
	p, err := l.r.Anchors(ctx, l.caller, store, after, limit)
	return p, localErr(err)
}

// FromClient is a Registry over the registry's HTTP API (the sidecar's
// registry client, whose identity is its mTLS certificate or identity
// header).
func FromClient(c client.StoreAnchorAPI) Registry { return remoteRegistry{c: c} }

type remoteRegistry struct{ c client.StoreAnchorAPI }

func remoteErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrStoreLost):
		return fmt.Errorf("%w: %w", ErrRegistryLost, err)
	case errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrUnregistered, err)
	}
	return err
}

func (r remoteRegistry) RegisterStore(ctx context.Context, store, generation string) (fencegate.StoreAnchor, bool, error) {
	a, created, err := r.c.RegisterStore(ctx, store, generation)
	return a, created, remoteErr(err)
}

func (r remoteRegistry) StoreAnchor(ctx context.Context, store string) (fencegate.StoreAnchor, error) {
	a, err := r.c.StoreAnchor(ctx, store)
	return a, remoteErr(err)
}

func (r remoteRegistry) AnchorProgress(ctx context.Context, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	resp, err := r.c.AnchorProgress(ctx, store, req)
	return resp, remoteErr(err)
}

func (r remoteRegistry) RecordLedger(ctx context.Context, store string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	a, err := r.c.RecordLedger(ctx, store, ev)
	return a, remoteErr(err)
}

func (r remoteRegistry) StoreAnchors(ctx context.Context, store, after string, limit int) (fencegate.AnchorPage, error) {
	p, err := r.c.StoreAnchors(ctx, store, after, limit)
	return p, remoteErr(err)
}

// timedRegistry hands the registry's clock of every answer to observe
// (Options.OnRegistryTime).
type timedRegistry struct {
	Registry
	observe func(time.Time)
}

func (t timedRegistry) saw(ms int64) {
	if ms > 0 {
		t.observe(time.UnixMilli(ms))
	}
}

func (t timedRegistry) RegisterStore(ctx context.Context, store, generation string) (fencegate.StoreAnchor, bool, error) {
	a, created, err := t.Registry.RegisterStore(ctx, store, generation)
	t.saw(a.Now)
	return a, created, err
}

func (t timedRegistry) StoreAnchor(ctx context.Context, store string) (fencegate.StoreAnchor, error) {
	a, err := t.Registry.StoreAnchor(ctx, store)
	t.saw(a.Now)
	return a, err
}

func (t timedRegistry) AnchorProgress(ctx context.Context, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	r, err := t.Registry.AnchorProgress(ctx, store, req)
	t.saw(r.Now)
	return r, err
}

func (t timedRegistry) RecordLedger(ctx context.Context, store string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	a, err := t.Registry.RecordLedger(ctx, store, ev)
	t.saw(a.Now)
	return a, err
}
