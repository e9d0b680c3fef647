package pgfence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store/postgres"
)

// ErrConfig is matched by New's error on options it cannot run with.
var ErrConfig = errors.New("pgfence: configuration")

// Fence is library mode's acceptance point over a store/postgres Store:
// Apply inside a caller's transaction, Handler around a Go service's own
// HTTP handler. It is safe for concurrent use. New starts nothing; Run
// watches the trust bundle file.
type Fence struct {
	st   *postgres.Store
	auth *authn.Authenticator
	o    options
	m    *metrics
}

// New builds a Fence on st, the store whose tables (in the service's own
// database) hold the records, receipts and trust pins; its pool also runs
// the store's own transactions (the trust pins, what a refusal keeps). It
// loads the trust bundle file and pins it on first use, as the sidecar
// does.
func New(ctx context.Context, st *postgres.Store, opts ...Option) (*Fence, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(st); err != nil {
		return nil, err
	}
	reg := o.reg
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	au, err := authn.New(ctx, authn.Config{
		Bundle: o.bundle, AllowHS256: o.allowHS256, ClockSkew: o.skew, MaxTokenBytes: o.maxTokenBytes,
		MinIssuerEpoch: o.minEpoch, RegistryTimeout: o.registryTimeout, MaxProofAge: o.rule.MaxAge,
	}, authn.Deps{
		Store: st, Status: o.registry, Identity: o.ident, Clock: o.clk, Log: o.log,
		Metrics: m.authn, Registerer: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("pgfence: %w", err)
	}
	return &Fence{st: st, auth: au, o: o, m: m}, nil
}

func (o options) validate(st *postgres.Store) error {
	var errs []error
	if st == nil {
		errs = append(errs, errors.New("a store is required"))
	}
	if o.bundle == "" {
		errs = append(errs, errors.New("a trust bundle is required (WithTrustBundle)"))
	}
	if o.rule.Mode == authn.StatusRegistry && o.registry == nil {
		errs = append(errs, errors.New("registry status needs a StatusSource (WithRegistryStatus)"))
	}
	if o.skew < 0 || o.keepReceipts < 0 || o.maxTokenBytes <= 0 {
		errs = append(errs, errors.New("clock skew, kept receipts and the token limit must not be negative"))
	}
	if o.clk == nil || o.log == nil {
		errs = append(errs, errors.New("a clock and a logger are required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// Run re-reads the trust bundle file and the pins every interval (a
// rotated key, a signed bundle, an operator's acceptance) until ctx ends.
func (f *Fence) Run(ctx context.Context, interval time.Duration) {
	f.auth.Run(ctx, interval)
}

// Reload re-reads the trust bundle file and the pins now.
func (f *Fence) Reload(ctx context.Context) (bool, error) { return f.auth.Reload(ctx, false) }

// now is the Fence's clock.
func (f *Fence) now() time.Time { return f.o.clk.Now() }

// since is the time since start on the Fence's clock.
func (f *Fence) since(start time.Time) time.Duration { return clock.Since(f.o.clk, start) }

// logRefusal logs a refusal: a fence regression (the registry issued a
// fence twice, or was rolled back) is an error, the rest information.
func (f *Fence) logRefusal(resource string, code fencegate.Code, detail string) {
	lvl := zap.InfoLevel
	if code == fencegate.CodeFenceRegression {
		lvl = zap.ErrorLevel
	}
	f.o.log.Log(lvl, "pgfence: write refused", zap.String("resource", resource), zap.String("code", string(code)), zap.String("detail", detail))
}
