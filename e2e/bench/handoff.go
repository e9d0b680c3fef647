package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
)

// errHandoff is returned when a handoff does not complete.
var errHandoff = errors.New("bench: handoff")

// handoffResult is the lease handoff: from the holder's release to the
// waiting acquirer's grant, and on to its first write accepted by the
// sidecar.
type handoffResult struct {
	Arm        string         `json:"arm"`
	Registry   string         `json:"registry"`
	Handoffs   int            `json:"handoffs"`
	ToGrant    latencySummary `json:"releaseToGrant"`
	ToWrite    latencySummary `json:"releaseToFirstAcceptedWrite"`
	FirstError string         `json:"firstError,omitempty"`
}

// handoffArm is the sidecar the handoff writes through: the default
// deployment (bolt store, registry status, EdDSA).
const handoffArm = "fg-bolt-registry-EdDSA"

// handoffOutcome is what the waiting acquirer saw.
type handoffOutcome struct {
	h                 *client.Holder
	granted, accepted time.Time
	err               error
}

// runHandoff alternates one resource between two owners o.Handoffs times.
// Each time the next owner's acquire is already parked at the registry
// (its waiting-acquires gauge says so) before the holder releases.
func (s *stack) runHandoff(ctx context.Context, o options, arms []*arm, base http.RoundTripper, progress io.Writer) (*handoffResult, error) {
	var a *arm
	for _, x := range arms {
		if x.Name == handoffArm {
			a = x
		}
	}
	if a == nil {
		return nil, fmt.Errorf("%w: no arm %s", errHandoff, handoffArm)
	}
	reg := a.registry
	res := &handoffResult{Arm: a.Name, Registry: reg.name + " (" + reg.backend + ")"}
	owners := []string{"bench-handoff-a", "bench-handoff-b"}
	clients := make([]*client.Client, 2)
	for i, ow := range owners {
		c, err := client.New(reg.url, client.WithIdentityHeader(identity.DefaultHeader, ow),
			client.WithHTTPClient(&http.Client{Transport: base, Timeout: 30 * time.Second}))
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	metrics := &http.Client{Transport: base, Timeout: 5 * time.Second}
	const resource = "bench/handoff"
	url := a.url + itemsPath + "handoff"
	writer := func(h *client.Holder, owner string) *http.Client {
		return h.Transport(client.WithBase(base), client.WithHeader(identity.DefaultHeader, owner)).Client()
	}
	cur, err := clients[0].Hold(ctx, resource, client.WithTTL(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("%w: first hold: %w", errHandoff, err)
	}
	if st, err := send(ctx, writer(cur, owners[0]), url, 1); err != nil || st/100 != 2 {
		return nil, fmt.Errorf("%w: first write: %d %v", errHandoff, st, err)
	}
	var toGrant, toWrite []int64
	for i := range o.Handoffs {
		if ctx.Err() != nil {
			break
		}
		next := (i + 1) % 2
		ch := make(chan handoffOutcome, 1)
		go func() {
			var out handoffOutcome
			out.h, out.err = clients[next].Hold(ctx, resource, client.WithTTL(30*time.Second), client.WithWait(20*time.Second))
			out.granted = s.ck.Now()
			if out.err == nil {
				var st int
				st, out.err = send(ctx, writer(out.h, owners[next]), url, 1)
				if out.err == nil && st/100 != 2 {
					out.err = fmt.Errorf("%w: first write answered %d", errHandoff, st)
				}
			}
			out.accepted = s.ck.Now()
			ch <- out
		}()
		if err := s.awaitWaiter(ctx, metrics, reg.url); err != nil {
			return res, err
		}
		t0 := s.ck.Now()
		if err := cur.Release(ctx); err != nil {
			return res, fmt.Errorf("%w: release: %w", errHandoff, err)
		}
		out := <-ch
		if out.err != nil {
			if res.FirstError == "" {
				res.FirstError = out.err.Error()
			}
			return res, out.err
		}
		toGrant = append(toGrant, int64(out.granted.Sub(t0)))
		toWrite = append(toWrite, int64(out.accepted.Sub(t0)))
		cur = out.h
	}
	_ = cur.Release(ctx)
	res.Handoffs = len(toWrite)
	res.ToGrant, res.ToWrite = summarize(toGrant), summarize(toWrite)
	fmt.Fprintf(progress, "handoff x%d via %s: release->grant p50 %.2f ms p99 %.2f ms; release->first accepted write p50 %.2f ms p99 %.2f ms\n",
		res.Handoffs, a.Name, res.ToGrant.P50, res.ToGrant.P99, res.ToWrite.P50, res.ToWrite.P99)
	return res, nil
}

// awaitWaiter polls the registry's waiting-acquires gauge until one
// acquire waits (5 s at most).
func (s *stack) awaitWaiter(ctx context.Context, hc *http.Client, regURL string) error {
	deadline := s.ck.Now().Add(5 * time.Second)
	for s.ck.Now().Before(deadline) {
		n, err := waitingAcquires(ctx, hc, regURL)
		if err != nil {
			return fmt.Errorf("%w: %w", errHandoff, err)
		}
		if n > 0 {
			return nil
		}
		clock.Sleep(s.ck, 500*time.Microsecond, ctx.Done())
	}
	return fmt.Errorf("%w: no acquire waiting at the registry after 5 s", errHandoff)
}
