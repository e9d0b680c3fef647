package anchor

import (
	"context"
	"fmt"
	"sync"

	"github.com/fencegate/fencegate"
)

// The batcher: concurrent anchor steps of one wrapper share one registry
// call. At most one call is in flight; submissions arriving while it runs
// queue up and form the next call (at most fencegate.MaxAnchorBatch
// items; a submission is never split). There is no timer: a submission
// that finds no call in flight is sent at once. The caller whose
// submission heads the queue leads the next call; once it is answered,
// leadership passes to the submission now at the head, so a caller leads
// at most the one call that answers its own steps and never serves the
// others for ever.

// submission is one caller's steps, answered together.
type submission struct {
	items   []fencegate.AnchorItem
	results []fencegate.AnchorResult
	lineage string
	err     error
	done    chan struct{} // closed when answered
	lead    chan struct{} // closed when this submission must lead a call
}

type batcher struct {
	send func(ctx context.Context, items []fencegate.AnchorItem) (fencegate.AnchorResponse, error)

	mu    sync.Mutex
	queue []*submission
	busy  bool // a call is in flight, or a leader is forming one
}

// do answers items (1..fencegate.MaxAnchorBatch of them) in the request
// order, with the registry's lineage.
func (b *batcher) do(ctx context.Context, items []fencegate.AnchorItem) ([]fencegate.AnchorResult, string, error) {
	if len(items) == 0 || len(items) > fencegate.MaxAnchorBatch {
		return nil, "", fmt.Errorf("store/anchor: %d anchor steps in one submission (1..%d)", len(items), fencegate.MaxAnchorBatch)
	}
	s := &submission{items: items, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, s)
	leader := !b.busy
	b.busy = true
	b.mu.Unlock()
	if !leader {
		select {
		case <-s.done:
			return s.results, s.lineage, s.err
		case <-s.lead:
		}
	}
	b.run(ctx)
	<-s.done // s headed the queue: the call just made answered it
	return s.results, s.lineage, s.err
}

// run makes one call of the submissions at the head of the queue, answers
// them, and hands the lead to the next submission waiting (or ends the
// busy state).
func (b *batcher) run(ctx context.Context) {
	b.mu.Lock()
	var batch []*submission
	n := 0
	for len(b.queue) > 0 && (len(batch) == 0 || n+len(b.queue[0].items) <= fencegate.MaxAnchorBatch) {
		s := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		batch = append(batch, s)
		n += len(s.items)
	}
	b.mu.Unlock()

	items := make([]fencegate.AnchorItem, 0, n)
	for _, s := range batch {
		items = append(items, s.items...)
	}
	resp, err := b.send(ctx, items)
	if err == nil && len(resp.Results) != len(items) {
		err = fmt.Errorf("store/anchor: the registry answered %d results for %d anchor steps", len(resp.Results), len(items))
	}
	for i := 0; err == nil && i < len(items); i++ {
		if resp.Results[i].Resource != items[i].Resource {
			err = fmt.Errorf("store/anchor: anchor result %d is for %q, the step for %q", i, resp.Results[i].Resource, items[i].Resource)
		}
	}
	off := 0
	for _, s := range batch {
		if err != nil {
			s.err = err
		} else {
			s.results = resp.Results[off : off+len(s.items) : off+len(s.items)]
			s.lineage = resp.Lineage
		}
		off += len(s.items)
		close(s.done)
	}

	b.mu.Lock()
	if len(b.queue) > 0 {
		close(b.queue[0].lead)
	} else {
		b.busy = false
	}
	b.mu.Unlock()
}
