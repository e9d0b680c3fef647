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
	// Name is the configuration, handoffName(backend, status).
	Name string `json:"name"`
	// Registry is the registry's name and backend; Store and Status the
	// sidecar's store and status mode.
	Registry   string         `json:"registry"`
	Backend    string         `json:"registryBackend"`
	Store      string         `json:"store"`
	Status     string         `json:"status"`
	Handoffs   int            `json:"handoffs"`
	ToGrant    latencySummary `json:"releaseToGrant"`
	ToWrite    latencySummary `json:"releaseToFirstAcceptedWrite"`
	FirstError string         `json:"firstError,omitempty"`
}

// handoffConfig is one handoff measurement: the registry (by its name in
// the stack, and so its backend) and the status mode of the sidecar the
// waiter writes through. Each configuration gets its own sidecar, whose
// store is the registry's backend where that is a store (bolt with the
// bolt registry on one pod, Redis with the Redis registry for every
// replica) and bolt with the etcd registry (etcd is no fenced store; the
// same store as the bolt rows, so the two differ by the registry alone),
// so the handoff does not depend on -arms.
type handoffConfig struct {
	registry string // key in stack.registries
	backend  string // the registry's backend
	store    string // the sidecar's store
	status   string // proof, registry
}

// handoffConfigs are the handoffs measured, in order: the bolt, Redis and
// etcd registries, each with a proof-mode sidecar (judged for bolt and
// Redis, targets.go) and a registry-mode one (shown).
func handoffConfigs() []handoffConfig {
	return []handoffConfig{
		{"EdDSA", "bolt", "bolt", "proof"}, {"EdDSA", "bolt", "bolt", "registry"},
		{"redis", "redis", "redis", "proof"}, {"redis", "redis", "redis", "registry"},
		{"etcd", "etcd", "bolt", "proof"}, {"etcd", "etcd", "bolt", "registry"},
	}
}

// handoffName names a handoff configuration: handoff-BACKEND-STATUS, also
// its sidecar's name and its resource (bench/NAME).
func handoffName(backend, status string) string { return "handoff-" + backend + "-" + status }

// handoffOutcome is what the waiting acquirer saw.
type handoffOutcome struct {
	h                 *client.Holder
	granted, accepted time.Time
	err               error
}

// runHandoffs measures every handoff configuration whose registry
// backend o selects (-registry-backends) in turn, each through a sidecar
// of its own started for it and stopped after. A configuration that fails
// keeps its error in FirstError (and what it measured before).
func (s *stack) runHandoffs(ctx context.Context, o options, base http.RoundTripper, progress io.Writer) []handoffResult {
	var out []handoffResult
	for _, hc := range handoffConfigs() {
		if ctx.Err() != nil {
			break
		}
		if !o.registryBackend(hc.backend) {
			continue
		}
		res := s.runHandoff(ctx, o, hc, base, progress)
		if res.FirstError != "" {
			fmt.Fprintf(progress, "bench: %s: %s\n", res.Name, res.FirstError)
		}
		out = append(out, res)
	}
	return out
}

// runHandoff alternates one resource between two owners o.Handoffs times
// through hc's sidecar. Each time the next owner's acquire is already
// parked at the registry (its waiting-acquires gauge says so) before the
// holder releases.
func (s *stack) runHandoff(ctx context.Context, o options, hc handoffConfig, base http.RoundTripper, progress io.Writer) handoffResult {
	name := handoffName(hc.backend, hc.status)
	reg := s.registries[hc.registry]
	res := handoffResult{Name: name, Backend: hc.backend, Store: hc.store, Status: hc.status}
	if reg == nil {
		res.FirstError = fmt.Sprintf("%v: no registry %s", errHandoff, hc.registry)
		return res
	}
	res.Registry = reg.name + " (" + reg.backend + ")"
	c, sidecarURL, _, err := s.startSidecar(sidecarSpec{name: name, store: hc.store, status: hc.status, reg: reg})
	if err != nil {
		res.FirstError = err.Error()
		return res
	}
	defer stopChild(s.ck, c)
	if err := s.handoffLoop(ctx, o, reg, hc.status, sidecarURL+itemsPath+name, "bench/"+name, base, &res); err != nil {
		res.FirstError = err.Error()
	}
	if res.Handoffs > 0 {
		fmt.Fprintf(progress, "handoff x%d via %s: release->grant p50 %.2f ms p99 %.2f ms; release->first accepted write p50 %.2f ms p99 %.2f ms\n",
			res.Handoffs, name, res.ToGrant.P50, res.ToGrant.P99, res.ToWrite.P50, res.ToWrite.P99)
	}
	return res
}

// handoffLoop runs the handoffs of resource, written at url, into res.
func (s *stack) handoffLoop(ctx context.Context, o options, reg *registryProc, status, url, resource string, base http.RoundTripper, res *handoffResult) error {
	p, err := newHandoffParty(reg.url, status, url, resource, base)
	if err != nil {
		return err
	}
	metrics := &http.Client{Transport: base, Timeout: 5 * time.Second}
	cur, err := p.firstHold(ctx)
	if err != nil {
		return err
	}
	var toGrant, toWrite []int64
	// What was measured counts even when a later handoff fails.
	defer func() {
		res.Handoffs = len(toWrite)
		res.ToGrant, res.ToWrite = summarize(toGrant), summarize(toWrite)
	}()
	for i := range o.Handoffs {
		if ctx.Err() != nil {
			break
		}
		out, t0, err := s.handoffStep(ctx, p, metrics, reg.url, cur, (i+1)%2)
		if err != nil {
			return err
		}
		toGrant = append(toGrant, int64(out.granted.Sub(t0)))
		toWrite = append(toWrite, int64(out.accepted.Sub(t0)))
		cur = out.h
	}
	_ = cur.Release(ctx)
	return nil
}

// handoffStep hands the resource from cur to owner next: next's acquire
// is started and parked at the registry (its waiting-acquires gauge at
// regURL says so) before cur is released at t0. On success the outcome
// holds the new holder; on an error every lease it took is released
// (cur too, unless its release is what failed).
func (s *stack) handoffStep(ctx context.Context, p *handoffParty, metrics *http.Client, regURL string, cur *client.Holder, next int) (handoffOutcome, time.Time, error) {
	ch := make(chan handoffOutcome, 1)
	go func() { ch <- p.takeOver(ctx, s.ck, next) }()
	if err := s.awaitWaiter(ctx, metrics, regURL); err != nil {
		_ = cur.Release(ctx)
		if out := <-ch; out.h != nil {
			_ = out.h.Release(ctx)
		}
		return handoffOutcome{}, time.Time{}, err
	}
	t0 := s.ck.Now()
	if err := cur.Release(ctx); err != nil {
		return handoffOutcome{}, t0, fmt.Errorf("%w: release: %w", errHandoff, err)
	}
	out := <-ch
	if out.err != nil {
		if out.h != nil {
			_ = out.h.Release(ctx)
		}
		return handoffOutcome{}, t0, out.err
	}
	return out, t0, nil
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

// handoffParty is what the steps of a handoff loop share: the two owners
// the resource alternates between, their registry clients, and where and
// how they write (the sidecar's URL for the resource, its status mode).
type handoffParty struct {
	owners   [2]string
	clients  [2]*client.Client
	base     http.RoundTripper
	status   string // proof, registry
	url      string
	resource string
}

// newHandoffParty makes the two owners' clients of the registry at regURL.
func newHandoffParty(regURL, status, url, resource string, base http.RoundTripper) (*handoffParty, error) {
	p := &handoffParty{owners: [2]string{"bench-handoff-a", "bench-handoff-b"}, base: base, status: status, url: url, resource: resource}
	for i, ow := range p.owners {
		c, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, ow),
			client.WithHTTPClient(&http.Client{Transport: base, Timeout: 30 * time.Second}))
		if err != nil {
			return nil, err
		}
		p.clients[i] = c
	}
	return p, nil
}

// writer is owner i's HTTP client writing under h's grant, through the
// SDK's Transport (refreshing the status proof in proof mode).
func (p *handoffParty) writer(h *client.Holder, i int) *http.Client {
	opts := []client.TransportOption{client.WithBase(p.base), client.WithHeader(identity.DefaultHeader, p.owners[i])}
	if p.status == "proof" {
		opts = append(opts, client.WithStatusProof(proofMaxAge))
	}
	return h.Transport(opts...).Client()
}

// firstHold is owner 0's lease and its first accepted write; the lease is
// released again when that write is not accepted.
func (p *handoffParty) firstHold(ctx context.Context) (*client.Holder, error) {
	cur, err := p.clients[0].Hold(ctx, p.resource, client.WithTTL(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("%w: first hold: %w", errHandoff, err)
	}
	if st, err := send(ctx, p.writer(cur, 0), p.url, 1); err != nil || st/100 != 2 {
		_ = cur.Release(ctx)
		return nil, fmt.Errorf("%w: first write: %d %v", errHandoff, st, err)
	}
	return cur, nil
}

// takeOver is owner i's waiting acquire (20 s at most) and its first
// write, with the times (on ck) the grant came and the write was
// accepted; the outcome's holder is set whenever the lease was granted.
func (p *handoffParty) takeOver(ctx context.Context, ck clock.Clock, i int) handoffOutcome {
	var out handoffOutcome
	out.h, out.err = p.clients[i].Hold(ctx, p.resource, client.WithTTL(30*time.Second), client.WithWait(20*time.Second))
	out.granted = ck.Now()
	if out.err == nil {
		var st int
		st, out.err = send(ctx, p.writer(out.h, i), p.url, 1)
		if out.err == nil && st/100 != 2 {
			out.err = fmt.Errorf("%w: first write answered %d", errHandoff, st)
		}
	}
	out.accepted = ck.Now()
	return out
}
