package bolt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// BenchmarkAcquireReleaseHTTP is BenchmarkAcquireReleaseParallel through
// the registry's HTTP API (httpapi, in-process over loopback TCP with
// httptest; plain HTTP, identity by header): 16 clients, each an acquire
// and a release of a resource of its own per op. The difference with the
// in-process figure is what HTTP and the JSON of the wire add.
func BenchmarkAcquireReleaseHTTP(b *testing.B) {
	be, _ := openBoltBench(b)
	k, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := keys.NewSigner(k)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := registry.New(registry.Options{Backend: be, Signer: signer, Metrics: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	registrytest.Start(b, reg)
	idr, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		b.Fatal(err)
	}
	jwks, err := keys.Bundle(false, k)
	if err != nil {
		b.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Options{Registry: reg, Identity: idr, JWKS: jwks, Metrics: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	const clients = 16
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	b.Cleanup(hc.CloseIdleConnections)
	post := func(path, body string, out any) error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+path, bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(identity.DefaultHeader, "bench-owner")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("%s: %d %s", path, resp.StatusCode, raw)
		}
		return json.Unmarshal(raw, out)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime(b)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; next.Add(1) <= int64(b.N); i++ {
				var l fencegate.Lease
				if err := post("/v1/leases", fmt.Sprintf(`{"resource":"bench/%d","requestId":"%d-%d","ttlMs":10000}`, w, w, i), &l); err != nil {
					b.Errorf("acquire: %v", err)
					return
				}
				if err := post("/v1/leases/"+l.Lease+"/release", "", &l); err != nil {
					b.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/pair")
}
