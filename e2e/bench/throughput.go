package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// throughputResult is acquire+release pairs per second on one registry
// backend at one concurrency.
type throughputResult struct {
	Backend     string  `json:"backend"`
	Concurrency int     `json:"concurrency"`
	Pairs       int     `json:"pairs"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"pairsPerSecond"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	// RegistryCPU, RedisCPU and EtcdCPU (the etcd member's) are
	// core-seconds per 1,000 pairs.
	RegistryCPU float64 `json:"registryCpuCoreSecondsPer1k"`
	RedisCPU    float64 `json:"redisCpuCoreSecondsPer1k,omitempty"`
	EtcdCPU     float64 `json:"etcdCpuCoreSecondsPer1k,omitempty"`
}

// runThroughput measures acquire+release on the bolt, memory, redis and
// etcd registries that o selects (-registry-backends), sequentially and
// with 16 concurrent workers, each on its own resource (an acquire of a
// held resource would only measure waiting).
func (s *stack) runThroughput(ctx context.Context, o options, base http.RoundTripper, progress io.Writer) []throughputResult {
	var out []throughputResult
	for _, name := range []string{"EdDSA", "memory", "redis", "etcd"} {
		reg := s.registries[name]
		if reg == nil || !o.registryBackend(reg.backend) {
			continue
		}
		for _, conc := range []int{1, 16} {
			if ctx.Err() != nil {
				return out
			}
			r := s.throughput(ctx, reg, conc, o.TputDuration, base)
			out = append(out, r)
			fmt.Fprintf(progress, "registry %-6s concurrency %2d: %7.0f acquire+release/s (errors %d)\n", r.Backend, conc, r.PerSecond, r.Errors)
		}
	}
	return out
}

func (s *stack) throughput(ctx context.Context, reg *registryProc, conc int, d time.Duration, base http.RoundTripper) throughputResult {
	res := throughputResult{Backend: reg.backend, Concurrency: conc, Seconds: d.Seconds()}
	c, err := client.New(reg.url, client.WithIdentityHeader(identity.DefaultHeader, workerOwner),
		client.WithHTTPClient(&http.Client{Transport: base, Timeout: 30 * time.Second}))
	if err != nil {
		res.FirstError = err.Error()
		return res
	}
	cpu0 := s.cpuOf(reg)
	began := s.ck.Now()
	end := began.Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resource := "bench/tput-c" + strconv.Itoa(conc) + "-w" + strconv.Itoa(w)
			pairs, errs := 0, 0
			var first string
			for k := 0; s.ck.Now().Before(end) && ctx.Err() == nil; k++ {
				l, err := c.Acquire(ctx, client.AcquireRequest{Resource: resource, TTL: 10 * time.Second,
					RequestID: "tput-" + strconv.Itoa(conc) + "-" + strconv.Itoa(w) + "-" + strconv.Itoa(k)})
				if err == nil {
					_, err = c.Release(ctx, l.Lease)
				}
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				pairs++
			}
			mu.Lock()
			res.Pairs += pairs
			res.Errors += errs
			if res.FirstError == "" {
				res.FirstError = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The pairs in flight at the end count, and so does their time.
	res.Seconds = s.ck.Now().Sub(began).Seconds()
	res.PerSecond = float64(res.Pairs) / res.Seconds
	cpu1 := s.cpuOf(reg)
	if res.Pairs > 0 {
		res.RegistryCPU = (cpu1[0] - cpu0[0]) / float64(res.Pairs) * 1000
		switch reg.backend {
		case "redis":
			res.RedisCPU = (cpu1[1] - cpu0[1]) / float64(res.Pairs) * 1000
		case "etcd":
			res.EtcdCPU = (cpu1[2] - cpu0[2]) / float64(res.Pairs) * 1000
		}
	}
	return res
}

// cpuOf is the CPU seconds of a registry, of redis-server and of the etcd
// member.
func (s *stack) cpuOf(reg *registryProc) [3]float64 {
	var v [3]float64
	v[0], _ = readCPUSeconds(reg.proc.pid())
	v[1], _ = readCPUSeconds(s.redis.pid())
	if s.etcd != nil {
		v[2], _ = readCPUSeconds(s.etcd.pid())
	}
	return v
}
