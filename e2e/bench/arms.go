package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// arm is one thing the load is sent to: the backend directly, the plain
// proxy, or one fencegate sidecar configuration.
type arm struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // direct, plain, fencegate
	Store  string `json:"store,omitempty"`
	Status string `json:"status,omitempty"`
	Alg    string `json:"alg,omitempty"`

	url      string        // where requests go
	admin    string        // the sidecar's admin API (fencegate arms)
	proxy    *child        // the proxy process; nil for direct
	registry *registryProc // grants come from here (and status reads)
	redis    bool          // its store is the redis-server

	exitNoted bool // exitNote reported the proxy's exit

	// Per repetition: one lease per worker on bench/<Name>-w<i>, and the
	// next segment to send under it.
	holders []*client.Holder
	hcs     []*http.Client
	next    []uint64
}

// workerOwner is the identity every worker acquires and writes as.
const workerOwner = "bench-worker"

// leaseTTL outlives a repetition, so no renewal runs while arms are
// measured; the SDK renews after a third of it if a repetition is longer.
const leaseTTL = 10 * time.Minute

// resourceID is worker i's resource path parameter on arm a.
func (a *arm) resourceID(i int) string { return a.Name + "-w" + strconv.Itoa(i) }

// acquire takes n leases for this repetition, through the SDK's Holder as
// a worker does, and builds each worker's sending client: the Holder's
// Transport (grant headers; a fresh proof on proof-mode routes) over the
// shared keep-alive transport base.
func (a *arm) acquire(ctx context.Context, n int, base http.RoundTripper) error {
	reg, err := client.New(a.registry.url, client.WithIdentityHeader(identity.DefaultHeader, workerOwner),
		client.WithHTTPClient(&http.Client{Transport: base, Timeout: 30 * time.Second}))
	if err != nil {
		return err
	}
	a.holders = make([]*client.Holder, n)
	a.hcs = make([]*http.Client, n)
	a.next = make([]uint64, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			h, err := reg.Hold(ctx, "bench/"+a.resourceID(i), client.WithTTL(leaseTTL))
			if err != nil {
				errs[i] = fmt.Errorf("bench: %s: hold worker %d: %w", a.Name, i, err)
				return
			}
			opts := []client.TransportOption{client.WithBase(base), client.WithHeader(identity.DefaultHeader, workerOwner)}
			if a.Status == "proof" {
				opts = append(opts, client.WithStatusProof(proofMaxAge))
			}
			a.holders[i] = h
			a.hcs[i] = h.Transport(opts...).Client()
			a.next[i] = 1
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// release ends this repetition's leases.
func (a *arm) release(ctx context.Context) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, h := range a.holders {
		if h == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_ = h.Release(ctx)
		}()
	}
	wg.Wait()
	a.holders, a.hcs, a.next = nil, nil, nil
}

// buildArms starts every proxy and returns the arms in their round-robin
// order. A postgres arm without the run's database (s.pgSkip says why)
// is not started but recorded in s.skipped. The direct and plain arms send the same requests (grant headers
// included, which the backend ignores) so that the load generator does the
// same work for every arm.
func (s *stack) buildArms(only *regexp.Regexp) ([]*arm, error) {
	ed := s.registries["EdDSA"]
	arms := []*arm{
		{Name: "direct", Kind: "direct", url: s.backendURL, registry: ed},
		{Name: "plain-proxy", Kind: "plain", url: s.plainURL, proxy: s.plain, registry: ed},
	}
	for _, f := range fencegateArms() {
		name := f.name()
		if !only.MatchString(name) {
			continue
		}
		reg := s.registries[f.alg]
		sp := sidecarSpec{name: name, store: f.store, status: f.status, reg: reg}
		if f.store == "postgres" {
			if s.pg == nil {
				s.skipped = append(s.skipped, skippedArm{Arm: name, Reason: s.pgSkip})
				continue
			}
			sp.pgDSNFile = s.pg.dsnFile
		}
		c, url, admin, err := s.startSidecar(sp)
		if err != nil {
			return nil, err
		}
		arms = append(arms, &arm{Name: name, Kind: "fencegate", Store: f.store, Status: f.status, Alg: f.alg,
			url: url, admin: admin, proxy: c, registry: reg, redis: f.store == "redis"})
	}
	return arms, nil
}

// fgArm is one fencegate sidecar configuration among the arms.
type fgArm struct{ store, status, alg string }

// name is the arm's name: fg-STORE-STATUS-ALG.
func (f fgArm) name() string { return "fg-" + f.store + "-" + f.status + "-" + f.alg }

// fencegateArms are the sidecar configurations in their round-robin
// order: every store (memory, bolt, Redis, PostgreSQL) in registry and
// proof status modes with EdDSA, then bolt registry mode with ES256 and
// HS256.
func fencegateArms() []fgArm {
	var fgs []fgArm
	for _, st := range []string{"memory", "bolt", "redis", "postgres"} {
		for _, mode := range []string{"registry", "proof"} {
			fgs = append(fgs, fgArm{st, mode, "EdDSA"})
		}
	}
	return append(fgs, fgArm{"bolt", "registry", "ES256"}, fgArm{"bolt", "registry", "HS256"})
}

// exitNote describes the arm's proxy process once it has exited (only
// once): the runs after it are invalid, and its last output says why.
func (a *arm) exitNote() string {
	if a.proxy == nil || a.exitNoted {
		return ""
	}
	select {
	case <-a.proxy.done:
	default:
		return ""
	}
	a.exitNoted = true
	return fmt.Sprintf("%s: the proxy process exited during the run (%v): %s",
		a.Name, a.proxy.cmd.ProcessState, crashSummary(a.proxy.stderr()+a.proxy.stdout()))
}

// crashSummary is the panic (or fatal error) of a Go program's output
// with the first frames of the goroutine that raised it; else the last
// lines.
func crashSummary(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			end := min(i+14, len(lines))
			return strings.Join(lines[i:end], " | ")
		}
	}
	return tail(out)
}

// needsPostgres reports whether a run whose -arms is only selects
// anything that runs on PostgreSQL: a postgres arm or the library phase.
func needsPostgres(only *regexp.Regexp) bool {
	for _, f := range fencegateArms() {
		if f.store == "postgres" && only.MatchString(f.name()) {
			return true
		}
	}
	return only.MatchString(libraryArm)
}

// noteSkipped moves the arms skipped so far into rep: its Skipped list, a
// note and a progress line each.
func (s *stack) noteSkipped(rep *report, progress io.Writer) {
	for _, sk := range s.skipped {
		rep.Skipped = append(rep.Skipped, sk)
		rep.Notes = append(rep.Notes, sk.Arm+": skipped: "+sk.Reason)
		fmt.Fprintf(progress, "bench: %s skipped: %s\n", sk.Arm, sk.Reason)
	}
	s.skipped = nil
}

// skippedReasons maps each skipped arm to why.
func skippedReasons(sk []skippedArm) map[string]string {
	m := make(map[string]string, len(sk))
	for _, a := range sk {
		m[a.Arm] = a.Reason
	}
	return m
}
