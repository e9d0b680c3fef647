package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	fgregistry "github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// TestSidecarMemoryFlat runs the real sidecar on the memory store with
// retention on and sends FENCEGATE_RSS_WRITES accepted writes (default
// 20,000; the soak in the README uses 100,000), each answered with a 4 KiB
// body that the receipt keeps. It samples the process's resident memory
// (VmRSS) and asserts it stays flat: after warm-up it may not grow by more
// than 24 MiB, while keeping every receipt would grow it by about 4 KiB
// per write (60 MiB over the default run).
func TestSidecarMemoryFlat(t *testing.T) {
	writes := 20000
	if v := os.Getenv("FENCEGATE_RSS_WRITES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("FENCEGATE_RSS_WRITES=%q: want an integer >= 1000", v)
		}
		writes = n
	}
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	issuer := verifytest.NewIssuerFromKey(t, key)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "jwks.json")
	set, err := keys.Bundle(false, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Save(bundle, set); err != nil {
		t.Fatal(err)
	}
	answer := strings.Repeat("x", 4096)
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		io.WriteString(w, answer)
	}))
	defer back.Close()
	sc := startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+back.URL+`"}
routes:
  - {method: PUT, path: "/v1/rows/{id}", resource: "row/{id}", status: {mode: proof, maxAge: 1h}}
identity: {mode: insecure-header}
trust: {bundle: "`+bundle+`"}
store: {backend: memory}
retention: {maxPerResource: 50, interval: 100ms}
dataDir: "`+dir+`"
log: {level: warn}
`)
	pid := sc.cmd.Process.Pid

	const workers = 4
	per := writes / workers
	var done sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	samples := []rssSample{}
	sample := func() {
		rss, err := vmRSS(pid)
		if err != nil {
			t.Error(err)
			return
		}
		samples = append(samples, rssSample{writes: sent, rss: rss})
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	// The issuer is not safe for concurrent use: grants are made up front.
	grants := make([]fencegate.Grant, workers)
	tokens := make([][]byte, workers)
	for w := range workers {
		resource := fmt.Sprintf("row/%d", w)
		grants[w] = issuer.Grant(func(g *fencegate.Grant) {
			g.Resource, g.Owner, g.FenceToken = resource, "worker", 1
			g.OperationRoot = fgregistry.OperationRoot(resource, 1, g.GrantID)
			g.IssuedAt = uint64(time.Now().UnixMilli())
			g.TTLMs = uint64(time.Hour / time.Millisecond)
		})
		tokens[w] = issuer.Sign(grants[w])
	}
	var issuerMu sync.Mutex
	for w := range workers {
		done.Add(1)
		go func() {
			defer done.Done()
			resource := fmt.Sprintf("row/%d", w)
			g, tok := grants[w], tokens[w]
			var proof string
			var proofAt time.Time
			for seq := 1; seq <= per; seq++ {
				if time.Since(proofAt) > time.Second {
					proofAt = time.Now()
					issuerMu.Lock()
					proof = string(issuer.SignStatus(issuer.StatusFor(tok, g, proofAt)))
					issuerMu.Unlock()
				}
				req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/v1/rows/%d", sc.url, w), strings.NewReader("row "+strconv.Itoa(seq)))
				req.Header.Set("X-Fencegate-Identity", "worker")
				req.Header.Set("Fence-Grant", string(tok))
				req.Header.Set("Fence-Status", proof)
				req.Header.Set("Fence-Segment", strconv.Itoa(seq))
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("write %d of %s: %d", seq, resource, resp.StatusCode)
					return
				}
				mu.Lock()
				sent++
				if sent%(writes/20) == 0 {
					sample()
					t.Logf("%6d writes, RSS %6.1f MiB", sent, float64(samples[len(samples)-1].rss)/(1<<20))
				}
				mu.Unlock()
			}
		}()
	}
	done.Wait()
	if t.Failed() || len(samples) < 10 {
		t.Fatalf("only %d samples", len(samples))
	}
	// Warm-up: the first quarter. Flat: no later sample above it by more
	// than 24 MiB.
	warm := samples[len(samples)/4-1]
	peak := warm
	for _, s := range samples[len(samples)/4:] {
		if s.rss > peak.rss {
			peak = s
		}
	}
	t.Logf("RSS after %d writes %.1f MiB; peak after warm-up %.1f MiB (at %d writes)",
		warm.writes, float64(warm.rss)/(1<<20), float64(peak.rss)/(1<<20), peak.writes)
	if peak.rss-warm.rss > 24<<20 {
		t.Errorf("RSS grew by %.1f MiB after warm-up: retention does not bound the store", float64(peak.rss-warm.rss)/(1<<20))
	}
	// The store itself holds at most maxPerResource receipts per resource
	// once the last pass ran.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := metricValue(t, sc.admin, "fencegate_proxy_store_receipts")
		if n <= workers*50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store still holds %v receipts", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type rssSample struct {
	writes int
	rss    int64
}

var vmRSSRE = regexp.MustCompile(`VmRSS:\s+(\d+) kB`)

// vmRSS reads a process's resident set size from /proc.
func vmRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	m := vmRSSRE.FindSubmatch(raw)
	if m == nil {
		return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10, nil
}

// metricValue reads one unlabelled sample from a /metrics endpoint.
func metricValue(t *testing.T, admin, name string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}
