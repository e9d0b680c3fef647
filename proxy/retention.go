package proxy

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// RetentionConfig bounds what the fenced store keeps. A Commit that takes
// a resource over MaxPerResource deletes its oldest receipts in its own
// transaction (store.CommitInput.KeepReceipts); receipts past MaxAge, and
// quarantine entries past either bound, are deleted in the background.
// Each resource's record (the highest fence, its operation root, the last
// accepted segment, an in-flight or unknown mutation, a pause) is kept for
// ever, and so is the receipt of the last accepted segment. A replay of a
// deleted segment is therefore never forwarded again: below the highest
// fence it is STALE_OWNER, at the highest fence SEGMENT_GAP. Workers that
// need an answer replayed must ask within the retention.
type RetentionConfig struct {
	// MaxAge deletes receipts accepted, and quarantine entries last seen,
	// longer ago than this (default 168h; 0 after defaults is not allowed).
	MaxAge time.Duration `yaml:"maxAge"`
	// MaxPerResource keeps at most this many receipts (and quarantine
	// entries) per resource, the newest (default 1000).
	MaxPerResource int `yaml:"maxPerResource"`
	// Interval is how often compaction runs (default 1m).
	Interval time.Duration `yaml:"interval"`
	// BatchSize bounds the deletions of one store transaction of the
	// background pass (default 1000). A batch shares its group
	// transaction with the writes waiting then. Since Commits keep the
	// count bound themselves, a pass deletes only what aged out (and a
	// backlog a Commit has not caught up with); before that, the soak
	// (e2e/bench -soak, bolt store, 1,000 requests/s) measured 1.5-1.8 s
	// in p99 once a minute while a pass deleted a minute's receipts.
	BatchSize int `yaml:"batchSize"`
}

// Retention defaults.
const (
	DefaultRetentionMaxAge         = 7 * 24 * time.Hour
	DefaultRetentionMaxPerResource = 1000
	DefaultRetentionInterval       = time.Minute
	DefaultRetentionBatchSize      = 1000
)

func (c *RetentionConfig) setDefaults() {
	setDur(&c.MaxAge, DefaultRetentionMaxAge)
	setDur(&c.Interval, DefaultRetentionInterval)
	if c.MaxPerResource == 0 {
		c.MaxPerResource = DefaultRetentionMaxPerResource
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultRetentionBatchSize
	}
}

func (c RetentionConfig) validate() []error {
	var errs []error
	if c.MaxAge <= 0 {
		errs = append(errs, fmt.Errorf("retention.maxAge: must be positive"))
	}
	if c.MaxPerResource < 1 {
		errs = append(errs, fmt.Errorf("retention.maxPerResource: must be at least 1"))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("retention.interval: must be positive"))
	}
	if c.BatchSize < 1 || c.BatchSize > store.MaxCompactDeletes {
		errs = append(errs, fmt.Errorf("retention.batchSize: must be in 1..%d", store.MaxCompactDeletes))
	}
	return errs
}

// maxCompactBatches bounds one compaction pass, so that a huge backlog is
// worked off over several intervals instead of holding the store busy.
const maxCompactBatches = 100

// compactOnce runs one compaction pass and refreshes the store-size gauges.
func (p *Proxy) compactOnce(ctx context.Context) (store.CompactResult, error) {
	c := p.cfg.Retention
	var total store.CompactResult
	for range maxCompactBatches {
		start := p.now()
		res, err := p.store.Compact(ctx, store.CompactInput{Now: p.now(), MaxAge: c.MaxAge, MaxPerResource: c.MaxPerResource, MaxDeletes: c.BatchSize})
		p.m.storeDur.WithLabelValues("compact").Observe(clock.Since(p.clk, start).Seconds())
		if err != nil {
			return total, fmt.Errorf("proxy: compaction: %w", err)
		}
		p.m.compacted.WithLabelValues("receipt").Add(float64(res.Receipts))
		p.m.compacted.WithLabelValues("quarantine").Add(float64(res.Quarantine))
		total.Receipts += res.Receipts
		total.Quarantine += res.Quarantine
		total.More = res.More
		if !res.More {
			break
		}
	}
	st, err := p.store.Stats(ctx)
	if err != nil {
		return total, fmt.Errorf("proxy: store stats: %w", err)
	}
	p.m.storeResources.Set(float64(st.Resources))
	p.m.storeReceipts.Set(float64(st.Receipts))
	p.m.storeQuarantined.Set(float64(st.Quarantined))
	p.m.storeBytes.Set(float64(st.Bytes))
	return total, nil
}

// compactLoop runs compactOnce every retention interval until ctx ends.
func (p *Proxy) compactLoop(ctx context.Context) {
	t := p.clk.NewTicker(p.cfg.Retention.Interval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.Retention.Interval)
		res, err := p.compactOnce(cctx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			// Cancelled by the shutdown: not a failure.
		case err != nil:
			p.log.Error("store compaction failed; receipts are kept until the next pass", zap.Error(err))
		case res.Receipts+res.Quarantine > 0:
			p.log.Info("store compacted", zap.Int("receipts", res.Receipts), zap.Int("quarantine", res.Quarantine), zap.Bool("more", res.More))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}
