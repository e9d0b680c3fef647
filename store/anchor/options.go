package anchor

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// Defaults of Options.
const (
	// DefaultRecheckInterval is how often a lost store re-registers.
	DefaultRecheckInterval = 10 * time.Second
	// DefaultCallTimeout bounds one registry call.
	DefaultCallTimeout = 10 * time.Second
	// DefaultRepairWindow is the repair window when none is given.
	DefaultRepairWindow = time.Minute
	// DefaultAuditInterval is how often Run audits a ready store against
	// its anchors.
	DefaultAuditInterval = 5 * time.Minute
)

// Options configure Wrap.
type Options struct {
	// Store is the fenced store's name at the registry (the sidecar's
	// store.service; fencegate.ValidateStoreName). Required.
	Store string
	// Logger receives the losses (error level), the repairs and the
	// registry failures. Default: none.
	Logger *zap.Logger
	// Metrics is where the wrapper's collectors are registered. Default: a
	// private registry.
	Metrics prometheus.Registerer
	// Clock is the time of repairs and of the recheck loop. Default: the
	// real clock.
	Clock clock.Clock
	// RecheckInterval is how often Run re-registers a lost store (at most
	// once per interval). Default DefaultRecheckInterval.
	RecheckInterval time.Duration
	// CallTimeout bounds each registry call. Default DefaultCallTimeout.
	CallTimeout time.Duration
	// AuditInterval is how often Run audits a ready store against every
	// anchor (Audit): a resource that lost data and sees no write is
	// found within it. Default DefaultAuditInterval; negative: never.
	AuditInterval time.Duration
	// RepairWindow is how long a mutation put back as UNKNOWN by a repair
	// may still be applied by the backend (the sidecar passes
	// backend.timeout + backend.maxApplyDelay); 0..store.MaxInFlightWindow.
	// Default DefaultRepairWindow.
	RepairWindow time.Duration
	// Upgrade is what an earlier version of the sidecar kept on the pod,
	// taken into account at Open (see Upgrade).
	Upgrade Upgrade
	// OnRegistryTime, when set, is given the registry's clock (the Now of
	// its answers) after every call it answered: the sidecar's lower bound
	// on the time (authn.TimeBound), kept fresh by calls made at start and
	// for every forwarded write.
	OnRegistryTime func(time.Time)
}

// Upgrade is the local state of an earlier version of the sidecar (the
// Redis generation file and the checkpoints of store/guard), which Open
// takes into account once: Generation is registered before the store's
// own when the registry holds none (so a Redis that lost data before the
// upgrade is caught), and each checkpoint the store's record does not
// show is anchored (same fence and root: a SEED of its last segment, then
// a repair) or paused (FENCE_REGRESSION, as the guard did: a checkpoint
// has no operation root or payload digest to anchor). Done is called once
// both were taken into account (the sidecar renames the files); not
// before, so a sidecar that stops first takes them into account again.
type Upgrade struct {
	Generation  string
	Checkpoints []Checkpoint
	Done        func() error
}

// Checkpoint is one resource's checkpoint of the earlier store/guard: the
// highest fence and last segment the sidecar saw accepted, the mutation it
// saw UNKNOWN and not settled, and whether it saw the resource paused.
type Checkpoint struct {
	Resource     string
	Fence, Seq   uint64
	UnknownFence uint64
	UnknownSeq   uint64
	Paused       bool
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = prometheus.NewRegistry()
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.RecheckInterval == 0 {
		o.RecheckInterval = DefaultRecheckInterval
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.AuditInterval == 0 {
		o.AuditInterval = DefaultAuditInterval
	}
	if o.RepairWindow == 0 {
		o.RepairWindow = DefaultRepairWindow
	}
}

func (o Options) validate() error {
	var errs []error
	if err := fencegate.ValidateStoreName(o.Store); err != nil {
		errs = append(errs, fmt.Errorf("store: %w", err))
	}
	if o.RecheckInterval < 0 || o.CallTimeout < 0 {
		errs = append(errs, errors.New("recheckInterval and callTimeout must not be negative"))
	}
	if o.RepairWindow < 0 || o.RepairWindow > store.MaxInFlightWindow {
		errs = append(errs, fmt.Errorf("repairWindow %s not in 0..%s", o.RepairWindow, store.MaxInFlightWindow))
	}
	if o.Upgrade.Generation != "" {
		if err := fencegate.ValidateGeneration(o.Upgrade.Generation); err != nil {
			errs = append(errs, fmt.Errorf("upgrade generation: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store/anchor: options: %w", err)
	}
	return nil
}
