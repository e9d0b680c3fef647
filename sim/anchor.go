package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
)

// The fenced store's outside anchor in a round: every sidecar process runs
// the shared store through its own store/anchor wrapper (as
// proxy/server wires it for every store with store.service and
// registry.url), over the round's registry of the moment (a rotation or a
// restart replaces it), so a store emptied or put back to an older save is
// caught by every replica, a new process included (issue 19, stories 2 and
// 3).

// storeName is the fenced store's name at the registry (store.service).
const storeName = "sim"

// anchorRecheck is the wrappers' RecheckInterval: how often a lost store
// registers again (the sidecar's default is 10 s).
const anchorRecheck = 2 * time.Second

// anchorAudit is the wrappers' AuditInterval (the sidecar's default is 5
// minutes): a resource the store lost and no write touches is found then.
const anchorAudit = 20 * time.Second

// roundRegistry is anchor.Registry over the round's current registry.
type roundRegistry struct {
	r      *round
	caller string
}

func (g roundRegistry) reg() anchor.Registry { return anchor.FromRegistry(g.r.reg, g.caller) }

func (g roundRegistry) RegisterStore(ctx context.Context, st, gen string) (fencegate.StoreAnchor, bool, error) {
	return g.reg().RegisterStore(ctx, st, gen)
}
func (g roundRegistry) StoreAnchor(ctx context.Context, st string) (fencegate.StoreAnchor, error) {
	return g.reg().StoreAnchor(ctx, st)
}
func (g roundRegistry) AnchorProgress(ctx context.Context, st string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	return g.reg().AnchorProgress(ctx, st, req)
}
func (g roundRegistry) RecordLedger(ctx context.Context, st string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	return g.reg().RecordLedger(ctx, st, ev)
}
func (g roundRegistry) StoreAnchors(ctx context.Context, st, after string, limit int) (fencegate.AnchorPage, error) {
	return g.reg().StoreAnchors(ctx, st, after, limit)
}

// The generation check of a process's store: once the anchor told it the
// generation to expect, every call fails while the shared store holds
// another one, until the wrapper expects the new one (after an operator
// acknowledged the loss at the registry). On store/memory it is the
// simulation's (markerCheck, store/redis's marker check); on
// store/postgres it is the store's own (its marker read in every
// transaction).

// ExpectGeneration is what store/anchor calls after a registration.
func (s *processStore) ExpectGeneration(ctx context.Context, gen string) error {
	return s.gen.ExpectGeneration(ctx, gen)
}

// GenerationLoss is the loss this process's store detected, if any.
func (s *processStore) GenerationLoss() error { return s.gen.GenerationLoss() }

// CheckGeneration reads the shared store's generation now.
func (s *processStore) CheckGeneration(ctx context.Context) error { return s.gen.CheckGeneration(ctx) }

// enter is the check before every call: a dead process, or a store whose
// generation changed.
func (s *processStore) enter() error {
	if s.dead {
		return errProcessDead
	}
	return s.gen.enter()
}

func (s *processStore) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	if err := s.enter(); err != nil {
		return store.Record{}, err
	}
	v, err := s.Store.Pause(ctx, in)
	return v, s.gen.explain(err)
}
func (s *processStore) Resume(ctx context.Context, resource string) (store.Record, error) {
	if err := s.enter(); err != nil {
		return store.Record{}, err
	}
	v, err := s.Store.Resume(ctx, resource)
	return v, s.gen.explain(err)
}
func (s *processStore) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	if err := s.enter(); err != nil {
		return store.Record{}, err
	}
	v, err := s.Store.Repair(ctx, in)
	return v, s.gen.explain(err)
}
func (s *processStore) Receipt(ctx context.Context, key store.ReceiptKey) (store.Receipt, error) {
	if err := s.enter(); err != nil {
		return store.Receipt{}, err
	}
	v, err := s.Store.Receipt(ctx, key)
	return v, s.gen.explain(err)
}
func (s *processStore) ReceiptsByOperation(ctx context.Context, resource, op string) ([]store.Receipt, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.ReceiptsByOperation(ctx, resource, op)
	return v, s.gen.explain(err)
}
func (s *processStore) ReceiptsOf(ctx context.Context, q store.ReceiptsQuery) ([]store.Receipt, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.ReceiptsOf(ctx, q)
	return v, s.gen.explain(err)
}
func (s *processStore) ReceiptByID(ctx context.Context, resource, id string) (store.Receipt, error) {
	if err := s.enter(); err != nil {
		return store.Receipt{}, err
	}
	v, err := s.Store.ReceiptByID(ctx, resource, id)
	return v, s.gen.explain(err)
}
func (s *processStore) ListUnknown(ctx context.Context, now time.Time) ([]store.Mutation, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.ListUnknown(ctx, now)
	return v, s.gen.explain(err)
}
func (s *processStore) ListPaused(ctx context.Context) ([]store.Record, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.ListPaused(ctx)
	return v, s.gen.explain(err)
}
func (s *processStore) ListQuarantined(ctx context.Context, resource string) ([]store.Quarantine, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.ListQuarantined(ctx, resource)
	return v, s.gen.explain(err)
}
func (s *processStore) Records(ctx context.Context, q store.RecordsQuery) ([]store.Record, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.Records(ctx, q)
	return v, s.gen.explain(err)
}
func (s *processStore) Enforcements(ctx context.Context) ([]store.Enforcement, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.Enforcements(ctx)
	return v, s.gen.explain(err)
}
func (s *processStore) RecordEnforcement(ctx context.Context, in store.EnforcementInput) (store.Enforcement, error) {
	if err := s.enter(); err != nil {
		return store.Enforcement{}, err
	}
	v, err := s.Store.RecordEnforcement(ctx, in)
	return v, s.gen.explain(err)
}
func (s *processStore) RecordTrust(ctx context.Context, in store.TrustInput) ([]store.TrustedKey, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	v, err := s.Store.RecordTrust(ctx, in)
	return v, s.gen.explain(err)
}
func (s *processStore) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	if err := s.enter(); err != nil {
		return store.CompactResult{}, err
	}
	v, err := s.Store.Compact(ctx, in)
	return v, s.gen.explain(err)
}

// openAnchor wraps replica i's new process store ps in its outside anchor
// and opens it at the round's registry, as the sidecar does at start (a
// sidecar that cannot open it does not start; in a round the registry
// always answers).
func (r *round) openAnchor(i int, ps *processStore, clk clock.Clock, repair time.Duration, bound *authn.TimeBound) (*anchor.Store, error) {
	an, err := anchor.Wrap(ps, roundRegistry{r: r, caller: fmt.Sprintf("sidecar-%d", i)}, anchor.Options{
		Store: storeName, Clock: clk, Metrics: discardMetrics{}, RecheckInterval: anchorRecheck,
		RepairWindow: repair, OnRegistryTime: bound.ObserveRegistryTime,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: anchor: %w", ErrSetup, err)
	}
	if err := an.Open(context.Background()); err != nil {
		return nil, fmt.Errorf("%w: anchor: %w", ErrSetup, err)
	}
	if err := an.Lost(); err != nil {
		r.logf("sidecar replica %d: its store is LOST at start: %v", i, err)
	}
	return an, nil
}

// lossWatch is how long after a store loss the round keeps its background
// going for it (the rechecks, the operator's looks): the operator's delay
// and the settling of what the repair put back UNKNOWN fit in it.
const lossWatch = MaxUnknownBudget + time.Minute

// attending reports whether the round's background should keep running
// for the last store loss: until every process audited its store since,
// then while some replica's store is lost or the main resource is paused
// by the repair, and the watch has not run out.
func (r *round) attending() bool {
	if !r.lost || r.now() >= r.lostAt+lossWatch {
		return false
	}
	if r.now() < r.lostAt+2*anchorAudit {
		return true // a loss no write met yet: every process audits once
	}
	for _, sc := range r.sidecars {
		if sc.an != nil && !sc.st.dead && sc.an.Lost() != nil {
			return true
		}
	}
	rec, err := r.st.Record(context.Background(), mainResource)
	return err == nil && rec.Pause != nil && rec.Pause.Reason == store.PauseStoreLoss
}

// lossLook is the operator answering the page of a store loss
// (fencegate_proxy_store_data_lost, a STORE_LOSS pause), by the runbook
// (docs/operations.md, "Redis lost its data"): acknowledge the loss at the
// registry with the generation a lost sidecar reports its store presents
// (fencegate store acknowledge-loss --sidecar), let the unknown mutations
// the repair put back be settled (the operator's look and the reconcile
// loop do that), and resume a STORE_LOSS pause once no mutation of the
// resource is unknown. It looks again while the loss is not dealt with.
func (r *round) lossLook() {
	r.lossLooking = false
	ctx := context.Background()
	for i, sc := range r.sidecars {
		if sc.an == nil || sc.st.dead || sc.an.Lost() == nil {
			continue
		}
		gen, err := sc.an.Generation(ctx)
		if err == nil {
			_, err = r.reg.AcknowledgeLoss(ctx, storeName, gen)
		}
		r.logf("operator: sidecar replica %d reports its store lost; acknowledged generation %s at the registry (%v)", i, gen, err)
		break
	}
	if p := r.sidecars[0].p; p != nil && !r.sidecars[0].st.dead {
		paused, err := p.Paused(ctx)
		if err == nil {
			unknown, uerr := p.Unknown(ctx)
			for _, rec := range paused {
				if rec.Pause.Reason != store.PauseStoreLoss || uerr != nil || rec.InFlight != nil || hasUnknown(unknown, rec.Resource) {
					continue
				}
				_, err := p.Resume(ctx, rec.Resource)
				r.logf("operator: resumed %s (paused STORE_LOSS, nothing unknown): %v", rec.Resource, err)
			}
		}
	}
	if r.attending() {
		r.lossLooking = true
		r.background(r.now()+operatorAgain, "the operator looks at the store loss again", r.lossLook)
	}
}

func hasUnknown(list []store.Mutation, resource string) bool {
	for _, m := range list {
		if m.Resource == resource {
			return true
		}
	}
	return false
}
