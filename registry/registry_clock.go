package registry

import (
	"time"

	"go.uber.org/zap"
)

// decided is the time a step that read the view v decided at (v.At), the
// time its proof is signed at, and records how the process's clock,
// local when the step began, stood against the registry's time it read.
func (r *Registry) decided(local time.Time, v LeaseView) time.Time {
	r.observeClock(local, v.Meta)
	return laterOf(v.At, local)
}

// laterOf is the later of at and local: a view of a backend that did not
// say when it decided (At zero) is proven at the process's clock, never
// before it.
func laterOf(at, local time.Time) time.Time {
	if at.Before(local) {
		return local
	}
	return at
}

// observeClock sets fencegate_registry_clock_behind_seconds to how far
// local is behind m's time beyond the skew budget, and logs when that
// starts (an error: this process then decides before the registry's
// time) and when it ends.
func (r *Registry) observeClock(local time.Time, m Meta) {
	behind := ClockBehind(local, m, r.opt.MaxClockSkew)
	r.m.clockBehind.Set(behind.Seconds())
	switch {
	case behind > 0 && r.behind.CompareAndSwap(false, true):
		r.log.Error("this registry process's clock is behind the registry's time by more than maxClockSkew: it decides at its clock plus maxClockSkew, so the lease states it answers can be behind the other processes' by the excess (fences are not affected); fix the clock of whichever process is wrong",
			zap.Duration("behind", behind), zap.Duration("maxClockSkew", r.opt.MaxClockSkew),
			zap.Time("registryTime", time.UnixMilli(m.Time)), zap.Time("clock", local))
	case behind == 0 && r.behind.CompareAndSwap(true, false):
		r.log.Info("this registry process's clock is back within maxClockSkew of the registry's time", zap.Duration("maxClockSkew", r.opt.MaxClockSkew))
	}
}
