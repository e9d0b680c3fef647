package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/clock"
)

// Timeouts of the wake-up watch: how long Subscribe waits for etcd to
// confirm it, and how long it waits before watching again after etcd
// cancelled it (a member that lost its leader, a compacted revision).
const (
	watchConfirmTimeout = 5 * time.Second
	rewatchDelay        = 100 * time.Millisecond
)

// Notify writes the wake-up key of every resource (resource "": an epoch
// bump or a policy change) for the other processes' waiters. The end of
// one resource's lease is written by the transaction that ends it (see
// tx.finish): it exists exactly when the end does and costs no round trip
// of its own; Notify of a resource therefore writes nothing.
func (s *Store) Notify(ctx context.Context, resource string) error {
	if resource != "" {
		return nil
	}
	if _, err := s.c.Put(ctx, s.keys.ended(""), s.origin); err != nil {
		return fmt.Errorf("registry/etcd: notify: %w", err)
	}
	return nil
}

// Subscribe watches the wake-up keys (<prefix>/ended/) and returns the
// resources whose lease another process ended ("" for every resource).
// It waits for etcd's confirmation of the watch, so a lease ended after
// Subscribe returns is delivered. When etcd cancels the watch (its member
// lost the leader: the watch requires one; a compaction) it watches again,
// every rewatchDelay until etcd confirms, from the revision after the last
// one it saw, so the ends committed meanwhile are delivered once it is
// back; only after a compaction of those revisions does it start at the
// current one, and the wake-ups meanwhile are lost, which only delays a
// waiter until its own timer. When the Store recovered from a rollback
// (restartWatches) it watches again at once from etcd's current revision:
// after a restore without --bump-revision the revision it had reached is
// one the restored cluster has yet to reach. The channel is closed when
// ctx ends or the Store is closed.
func (s *Store) Subscribe(ctx context.Context) <-chan string {
	out := make(chan string, 64)
	wctx, cancel := context.WithCancel(ctx)
	id, ok := s.addWatch(cancel)
	if !ok {
		cancel()
		close(out)
		return out
	}
	one, restart, next := s.watchOnce(wctx, 0, true)
	go func() {
		defer close(out)
		defer s.dropWatch(id)
		for {
			var ended bool
			next, ended = s.follow(one, out, restart, next)
			s.watchEnds.Add(1)
			if !ended {
				next = 0 // restarted after a recovery: from the current revision
			} else if !s.pause(wctx) {
				return
			}
			if wctx.Err() != nil {
				return
			}
			// Warned once per outage: a member without a leader refuses
			// every watch again, each rewatchDelay.
			one, restart, next = s.watchOnce(wctx, next, one.confirmed)
		}
	}()
	return out
}

// oneWatch is one watch of the wake-up keys, under a context of its own
// (cancelled to watch again after a recovery).
type oneWatch struct {
	ctx       context.Context
	cancel    context.CancelFunc
	wch       clientv3.WatchChan
	confirmed bool
}

// watchOnce starts one watch from revision from (watch) and returns it
// with the channel that a recovery closes (restartWatches) and the
// revision the following watch starts from.
func (s *Store) watchOnce(ctx context.Context, from int64, warn bool) (oneWatch, <-chan struct{}, int64) {
	s.wmu.Lock()
	restart := s.restart
	s.wmu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	wch, confirmed, next := s.watch(wctx, from, warn)
	return oneWatch{ctx: wctx, cancel: cancel, wch: wch, confirmed: confirmed}, restart, next
}

// restartWatches makes every wake-up watch of this Store watch again from
// etcd's current revision (after a recovery: see recover.go).
func (s *Store) restartWatches() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	close(s.restart)
	s.restart = make(chan struct{})
}

// watch starts one watch of the wake-up keys from revision from (0: the
// current one) and waits for its confirmation; confirmed is false when
// etcd refused it or did not answer in time, which is logged when warn is
// set (the loop watches again). next is the revision the following watch
// starts from: from, or after the current revision for a watch from the
// current one, or 0 (the current one) after a compaction took from away.
func (s *Store) watch(ctx context.Context, from int64, warn bool) (wch clientv3.WatchChan, confirmed bool, next int64) {
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCreatedNotify()}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from))
	}
	wch = s.c.Watch(clientv3.WithRequireLeader(ctx), s.keys.ended(""), opts...)
	t := clock.Real().NewTimer(watchConfirmTimeout)
	defer t.Stop()
	select {
	case resp, ok := <-wch:
		if ok && resp.Err() == nil && resp.Created {
			s.watchStarts.Add(1)
			if from == 0 {
				from = resp.Header.Revision + 1
			}
			return wch, true, from
		}
		if ok && resp.CompactRevision > 0 {
			from = 0 // compacted away: the ends since are lost
		}
		if ok && warn {
			s.log.Warn("registry/etcd: wake-up watch refused; waiters of this process wait for their timers until it is back", "err", resp.Err())
		}
	case <-t.C():
		if warn {
			s.log.Warn("registry/etcd: wake-up watch not confirmed; waiters of this process may wait for their timers")
		}
	case <-ctx.Done():
	}
	return wch, false, from
}

// follow passes the resources of the watch's events to out until the
// watch ends (ended: pause before watching again) or restart is closed
// (watch again at once), and returns the revision after the last event it
// saw (next when none): a watch again from there misses no end committed
// meanwhile. The watch's context is cancelled either way.
func (s *Store) follow(w oneWatch, out chan<- string, restart <-chan struct{}, next int64) (int64, bool) {
	defer w.cancel()
	for {
		select {
		case <-restart:
			return next, false
		case resp, ok := <-w.wch:
			if !ok {
				return next, true
			}
			next = s.deliver(w.ctx, resp, out, next)
		}
	}
}

// deliver passes the resources of one watch response's events to out and
// returns the revision the next watch starts from.
func (s *Store) deliver(ctx context.Context, resp clientv3.WatchResponse, out chan<- string, next int64) int64 {
	s.readAt(0, resp.Header.Revision) // a revision the next step's reads must reach
	if resp.CompactRevision > 0 {
		next = 0 // compacted away: the next watch starts at the current revision
	}
	for _, ev := range resp.Events {
		next = ev.Kv.ModRevision + 1
		if ev.Type != mvccpb.PUT || string(ev.Kv.Value) == s.origin {
			continue // its own: this process already woke its waiters
		}
		select {
		case out <- strings.TrimPrefix(string(ev.Kv.Key), s.keys.ended("")):
		case <-ctx.Done():
			return next
		default:
			// The follower is behind: this wake-up is dropped, the
			// waiter's timer still catches the end.
		}
	}
	return next
}

// pause waits before watching again; false when ctx ended.
func (s *Store) pause(ctx context.Context) bool {
	t := clock.Real().NewTimer(rewatchDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

func (s *Store) addWatch(cancel context.CancelFunc) (int, bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.watches == nil {
		return 0, false // closed
	}
	s.nextW++
	s.watches[s.nextW] = cancel
	return s.nextW, true
}

func (s *Store) dropWatch(id int) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if c, ok := s.watches[id]; ok {
		c()
		delete(s.watches, id)
	}
}

// stopWatches cancels every watch; later Subscribes return a closed
// channel.
func (s *Store) stopWatches() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, c := range s.watches {
		c()
	}
	s.watches = nil
}

// Watches counts the wake-up watches running (for tests: Registry.Run
// has subscribed once it grew).
func (s *Store) Watches() int {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return len(s.watches)
}

// WatchCounts reports how many wake-up watches etcd confirmed and how many
// ended (cancelled by etcd, e.g. on a member that lost its leader, or
// closed) since the Store opened: a test's view of the watch being
// cancelled and established again.
func (s *Store) WatchCounts() (started, ended int64) {
	return s.watchStarts.Load(), s.watchEnds.Load()
}
