package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
)

// payload is every request's body: 1 KiB.
var payload = bytes.Repeat([]byte("fencegate-bench-"), 64)

// loadTransport is the load generator's transport, shared by every arm:
// enough idle connections per host for 64 workers and more, no
// compression.
func loadTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// loadSpec is one run's load.
type loadSpec struct {
	// Mode is "closed" (each worker sends its next request when the last
	// one answered) or "open" (each worker follows a fixed schedule).
	Mode string
	// Label names the load in tables instead of its mode and rate: the
	// per-arm open-loop phases run each arm at a rate of its own.
	Label   string
	Workers int
	// Rate is the open loop's total request rate (per second).
	Rate float64
	// Warmup is run but not measured; Duration is measured.
	Warmup, Duration time.Duration
	// Observe, when set, is called by every worker after every request
	// (warm-up included, concurrently) with the time it ended, its latency
	// as the loop counts it (open loop: from its intended start), and its
	// outcome: the soak (soak.go) keeps per-interval figures with it.
	Observe func(done time.Time, latency time.Duration, status int, err error)
}

// loadResult is what one run measured.
type loadResult struct {
	// Samples are latencies (ns): in the closed loop of the requests sent
	// in the measured window, from their send; in the open loop of the
	// requests answered in or after the window's start, from their
	// intended start (no coordinated omission).
	Samples []int64
	// Non2xx counts answers outside 200-299 and Errors requests with no
	// answer (a rejection the SDK turned into an error counts as Non2xx),
	// over the whole run, warm-up included.
	Non2xx, Errors int
	FirstError     string
	// Answered counts 2xx answers over the whole run, warm-up included
	// (what the proxy's memory served).
	Answered int
	// Missed counts the open loop's backlog at the window's end: requests
	// scheduled before it but never sent because the arm fell behind.
	Missed int
}

// hooks run at the start and end of the measured window (CPU and memory
// snapshots).
type hooks struct {
	start, end func()
}

// runLoad sends spec's load to arm a with its first spec.Workers workers.
func runLoad(ctx context.Context, ck clock.Clock, a *arm, spec loadSpec, h hooks) loadResult {
	t0 := ck.Now()
	mStart := t0.Add(spec.Warmup)
	mEnd := mStart.Add(spec.Duration)
	var wg sync.WaitGroup
	results := make([]loadResult, spec.Workers)
	for w := range spec.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = worker(ctx, ck, a, w, spec, t0, mStart, mEnd)
		}()
	}
	// The window's snapshots are taken on their own timers, not by a worker.
	clock.Sleep(ck, clock.Until(ck, mStart), ctx.Done())
	h.start()
	clock.Sleep(ck, clock.Until(ck, mEnd), ctx.Done())
	h.end()
	wg.Wait()
	var out loadResult
	for _, r := range results {
		out.Samples = append(out.Samples, r.Samples...)
		out.Non2xx += r.Non2xx
		out.Errors += r.Errors
		out.Missed += r.Missed
		out.Answered += r.Answered
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	return out
}

// worker is one worker: it owns resource a.resourceID(w) and sends its
// segments in order, each after the previous one answered.
func worker(ctx context.Context, ck clock.Clock, a *arm, w int, spec loadSpec, t0, mStart, mEnd time.Time) loadResult {
	var r loadResult
	hc := a.hcs[w]
	url := a.url + itemsPath + a.resourceID(w)
	var interval time.Duration
	if spec.Mode == "open" {
		interval = time.Duration(float64(spec.Workers) / spec.Rate * float64(time.Second))
	}
	for k := 0; ctx.Err() == nil; k++ {
		var intended time.Time
		if spec.Mode == "open" {
			// Staggered: worker w starts w/Workers of an interval late.
			intended = t0.Add(interval*time.Duration(k) + interval*time.Duration(w)/time.Duration(spec.Workers))
			if !intended.Before(mEnd) {
				break
			}
			if now := ck.Now(); now.Before(intended) {
				clock.Sleep(ck, intended.Sub(now), ctx.Done())
			} else if !now.Before(mEnd) {
				// Fallen behind past the window: what was scheduled in it
				// and not sent is missed.
				for ; intended.Before(mEnd); intended = intended.Add(interval) {
					r.Missed++
				}
				break
			}
		} else {
			intended = ck.Now()
			if !intended.Before(mEnd) {
				break
			}
		}
		status, err := send(ctx, hc, url, a.next[w])
		done := ck.Now()
		if spec.Observe != nil {
			spec.Observe(done, done.Sub(intended), status, err)
		}
		switch {
		case err != nil:
			var rej *client.RejectionError
			if errors.As(err, &rej) {
				r.Non2xx++
			} else {
				r.Errors++
			}
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
			// No hot loop on a broken arm; the run is invalid anyway.
			clock.Sleep(ck, 10*time.Millisecond, ctx.Done())
			continue
		case status/100 != 2:
			r.Non2xx++
			if r.FirstError == "" {
				r.FirstError = "HTTP " + http.StatusText(status)
			}
		default:
			a.next[w]++
			r.Answered++
		}
		// Closed loop: the requests sent in the window. Open loop: those
		// answered in it, so an arm that fell behind in the warm-up shows
		// its backlog as latency instead of showing nothing.
		if (spec.Mode == "open" && !done.Before(mStart)) || (spec.Mode != "open" && !intended.Before(mStart)) {
			r.Samples = append(r.Samples, int64(done.Sub(intended)))
		}
	}
	return r
}

// send PUTs the payload as segment seq and reads the whole answer.
func send(ctx context.Context, hc *http.Client, url string, seq uint64) (int, error) {
	req, err := http.NewRequestWithContext(client.ContextWithSegment(ctx, seq), http.MethodPut, url, bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := client.ResponseError(resp); err != nil {
		return 0, err // the sidecar refused: a *client.RejectionError
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
