package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store/bolt"
)

// BenchmarkSidecarLatency measures the latency a worker sees at a fixed
// request rate (open loop: requests start on a ticker whatever the earlier
// ones do), directly against the backend and through the sidecar, and
// reports p50 and p99. Each request writes a resource of its own with its
// own grant, so requests never wait for each other in the store.
//
//	go test ./proxy -run '^$' -bench SidecarLatency -benchtime 2000x
func BenchmarkSidecarLatency(b *testing.B) {
	const rate = 200 // requests per second
	for _, tc := range []struct{ name, target, status, store string }{
		{"direct", "direct", "", ""},
		{"sidecar/proof/memory", "sidecar", "proof", "memory"},
		{"sidecar/proof/bolt", "sidecar", "proof", "bolt"},
		{"sidecar/registry/bolt", "sidecar", "registry", "bolt"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			t := &testing.T{}
			f := newFixture(t)
			if tc.store == "bolt" {
				st, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				f.store = st
				f.start(nil)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			type prepared struct {
				url string
				hdr http.Header
			}
			prepare := func(i int) prepared {
				switch tc.target {
				case "direct":
					return prepared{url: f.back.srv.URL + fmt.Sprintf("/v1/docs/%d", i), hdr: http.Header{}}
				}
				h := http.Header{idHeader: {"worker-a"}}
				if tc.status == "proof" {
					tok, g := f.crafted(fmt.Sprintf("doc/%d", i), "worker-a", 1)
					h.Set("Fence-Grant", string(tok))
					h.Set("Fence-Status", f.proof(tok, g))
					return prepared{url: f.srv.URL + fmt.Sprintf("/v1/docs/%d", i), hdr: h}
				}
				res, err := f.reg.Acquire(context.Background(), registry.AcquireRequest{Resource: fmt.Sprintf("item/%d", i), Owner: "worker-a", RequestID: fmt.Sprintf("r%d", i), TTL: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				h.Set("Fence-Grant", string(res.Grant))
				return prepared{url: f.srv.URL + fmt.Sprintf("/v1/items/%d", i), hdr: h}
			}
			// Grants are prepared ahead; proofs (5 s TTL) just before each send.
			reqs := make([]prepared, b.N)
			if tc.status != "proof" {
				for i := range reqs {
					reqs[i] = prepare(i)
				}
			}
			lat := make([]time.Duration, b.N)
			var failed int
			var mu sync.Mutex
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			b.ResetTimer()
			for i := range b.N {
				<-tick.C
				wg.Add(1)
				if tc.status == "proof" {
					reqs[i] = prepare(i)
				}
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest("PUT", reqs[i].url, strings.NewReader("payload"))
					req.Header = reqs[i].hdr
					start := time.Now()
					resp, err := client.Do(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					lat[i] = time.Since(start)
					if err != nil || resp.StatusCode != http.StatusCreated {
						mu.Lock()
						failed++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if failed > 0 {
				b.Fatalf("%d of %d requests failed", failed, b.N)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}
