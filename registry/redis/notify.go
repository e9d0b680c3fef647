package redis

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// subscribeTimeout bounds Subscribe's wait for the server's confirmation.
const subscribeTimeout = 5 * time.Second

// Notify publishes on the "<prefix>:ended" channel that every resource's
// lease may have ended (resource "": an epoch bump), for the other
// processes' waiters. The end of one resource's lease is published by the
// MULTI of the step that writes it (a release, a revocation, a renewal
// that records an expiry): the message leaves with the commit, one round
// trip earlier than a PUBLISH after it, and exists exactly when the end
// does; Notify of a resource therefore publishes nothing. The message is
// "<origin> <resource>".
func (s *Store) Notify(ctx context.Context, resource string) error {
	if resource != "" {
		return nil
	}
	if err := s.c.Publish(ctx, s.keys.ended(), s.origin+" "+resource).Err(); err != nil {
		return fmt.Errorf("registry/redis: publish: %w", err)
	}
	return nil
}

// Subscribe opens this Store's one SUBSCRIBE connection to "<prefix>:ended"
// and returns the resources the other processes publish. The same
// connection hears "<prefix>:state", the other processes' announcements
// of the state they committed, which raise this process's watermark (see
// watermark.go). It waits for the
// server's confirmation, so a lease ended after Subscribe returns is
// delivered. go-redis reconnects and resubscribes a lost connection;
// messages published meanwhile are lost (a waiter then waits for its
// timer). The channel is closed when ctx ends or the Store is closed.
func (s *Store) Subscribe(ctx context.Context) <-chan string {
	out := make(chan string, 64)
	ps := s.c.Subscribe(ctx, s.keys.ended(), s.keys.state())
	if _, err := ps.ReceiveTimeout(ctx, subscribeTimeout); err != nil {
		s.log.Warn("registry/redis: subscribe: waiters of this process will not be woken by other processes until it reconnects", "err", err)
	}
	if err := s.shell.Exclusive(func() error { s.subs = append(s.subs, ps); return nil }); err != nil {
		ps.Close() // closed
		close(out)
		return out
	}
	msgs := ps.Channel()
	go func() {
		defer close(out)
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				origin, resource, found := strings.Cut(m.Payload, " ")
				if !found || origin == s.origin {
					continue
				}
				if m.Channel == s.keys.state() {
					s.wm.heard(m.Payload)
					continue
				}
				select {
				case out <- resource:
				default:
					// The follower is behind: this wake-up is dropped, the
					// waiter's timer still catches the end.
				}
			}
		}
	}()
	return out
}
