package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/proxy"
)

// The soak (-soak DURATION) runs instead of the usual phases: each
// selected sidecar arm in turn, started as the normal run starts it (same
// backend, registry and configuration, port 0, pinning) plus an explicit
// retention section, takes the open loop of load.go at a fixed rate for
// the whole duration, and every sample interval the proxy's resident set
// (anonymous and file-backed apart: a bolt store's mmap is file-backed),
// its CPU per 1,000 requests over the interval, the store's receipts and
// the interval's latency are recorded. It answers issue 12's steady-state
// target, which the 2 s runs cannot: <= 0.25 core-seconds per 1,000
// requests and <= 40 MB RSS, flat over a 10-minute run, at 1,000/s.

// Soak defaults.
const (
	defaultSoakArms   = `^fg-(bolt|redis)-proof-EdDSA$`
	defaultSoakRate   = 1000.0
	defaultSoakSample = 30 * time.Second
	soakWorkers       = openWorkers
	soakLoad          = "soak"
	// soakWindowWidth is the width of the windows whose p99 the no-stall rule
	// compares (issue 22), apart from the sample interval.
	soakWindowWidth = 10 * time.Second
)

// errSoak is returned for soak flags that make no soak.
var errSoak = errors.New("bench: soak")

// addSoakFlags declares the soak's flags on fs.
func addSoakFlags(fs *flag.FlagSet, o *options) {
	fs.DurationVar(&o.Soak, "soak", 0, "run only the soak, this long per arm (0: no soak, the usual phases run); see SOAK.md")
	fs.StringVar(&o.SoakArms, "soak-arms", defaultSoakArms, "the soak's arms: the fencegate arms whose name matches this regular expression, one after the other")
	fs.Float64Var(&o.SoakRate, "soak-rate", defaultSoakRate, "the soak's open-loop rate, requests per second")
	fs.DurationVar(&o.SoakSample, "soak-sample", defaultSoakSample, "the soak's sample interval")
	fs.IntVar(&o.SoakRetention, "soak-retention", proxy.DefaultRetentionMaxPerResource, "the soak sidecars' retention.maxPerResource (receipts kept per resource)")
	fs.DurationVar(&o.SoakRetentionInterval, "soak-retention-interval", proxy.DefaultRetentionInterval, "the soak sidecars' retention.interval (how often compaction runs: the store holds up to rate x interval receipts more than the retention keeps)")
}

// checkSoakFlags rejects soak flags that make no soak.
func checkSoakFlags(o options) error {
	if o.Soak < 0 {
		return fmt.Errorf("%w: -soak must not be negative", errSoak)
	}
	if o.Soak == 0 {
		return nil
	}
	re, err := regexp.Compile(o.SoakArms)
	if err != nil {
		return fmt.Errorf("%w: -soak-arms: %w", errSoak, err)
	}
	if len(soakArmsMatching(re)) == 0 {
		return fmt.Errorf("%w: -soak-arms %q matches no fencegate arm", errSoak, o.SoakArms)
	}
	if !(o.SoakRate > 0) || math.IsInf(o.SoakRate, 0) || o.SoakSample <= 0 || o.SoakRetention < 1 || o.SoakRetentionInterval <= 0 {
		return fmt.Errorf("%w: -soak-rate, -soak-sample, -soak-retention and -soak-retention-interval must be positive", errSoak)
	}
	return nil
}

// soakArmsMatching are the fencegate arms whose name re matches, in the
// arms' order.
func soakArmsMatching(re *regexp.Regexp) []fgArm {
	var out []fgArm
	for _, f := range fencegateArms() {
		if re.MatchString(f.name()) {
			out = append(out, f)
		}
	}
	return out
}

// soakRetention is the retention section the soak's sidecars run with:
// maxPerResource from -soak-retention, interval from
// -soak-retention-interval, the rest the product defaults.
type soakRetention struct {
	MaxPerResource int    `json:"maxPerResource"`
	MaxAge         string `json:"maxAge"`
	Interval       string `json:"interval"`
	BatchSize      int    `json:"batchSize"`
}

func newSoakRetention(maxPerResource int, interval time.Duration) soakRetention {
	return soakRetention{MaxPerResource: maxPerResource, MaxAge: proxy.DefaultRetentionMaxAge.String(),
		Interval: interval.String(), BatchSize: proxy.DefaultRetentionBatchSize}
}

// yaml is the sidecar configuration's retention section.
func (r soakRetention) yaml() string {
	return fmt.Sprintf("retention: {maxPerResource: %d, maxAge: %s, interval: %s, batchSize: %d}\n",
		r.MaxPerResource, r.MaxAge, r.Interval, r.BatchSize)
}

// soakReport is everything the soak produced: soak.json, and SOAK.md
// rendered from it.
type soakReport struct {
	runInfo
	Target soakTarget    `json:"target"`
	Direct *soakBaseline `json:"direct,omitempty"`
	Runs   []*soakRun    `json:"arms"`
	// Targets are issue 22's soak targets judged from Runs (soaktargets.go).
	Targets     []targetResult `json:"targets"`
	Interrupted bool           `json:"interrupted,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
}

// soakBaseline is the direct arm at the soak's rate, run once before the
// sidecars: what their latency is added to.
type soakBaseline struct {
	Seconds  float64        `json:"seconds"`
	Requests int            `json:"requests"`
	Non2xx   int            `json:"non2xxAndErrors"`
	Latency  latencySummary `json:"latency"`
}

// soakRun is one arm's soak.
type soakRun struct {
	Arm       string        `json:"arm"`
	Store     string        `json:"store"`
	Status    string        `json:"status"`
	Alg       string        `json:"alg"`
	Rate      float64       `json:"rate"`
	Workers   int           `json:"workers"`
	Seconds   float64       `json:"seconds"`
	Sample    float64       `json:"sampleSeconds"`
	Retention soakRetention `json:"retention"`
	Samples   []soakSample  `json:"samples"`
	// Windows are the soakWindowWidth-wide windows from the load's start, by
	// each request's end.
	Windows    []soakWindow `json:"windows"`
	Missed     int          `json:"missed"`
	FirstError string       `json:"firstError,omitempty"`
	Exit       string       `json:"proxyExit,omitempty"`
	Summary    soakSummary  `json:"summary"`
}

// soakSample is one reading: the process figures at Elapsed, the request
// figures over the interval since the previous sample. The first sample
// (Elapsed 0) is the baseline at the load's start.
type soakSample struct {
	Elapsed  float64 // seconds since the load's start
	Requests int     // requests ended in the interval (any outcome)
	Total    int     // requests ended since the start
	RPS      float64 // Requests per second of the interval; 0 for the baseline
	Bad      int     // non-2xx answers and errors in the interval
	RSS      rssKB   // the proxy's resident set; zero when unreadable
	CPU      float64 // the proxy's utime+stime so far, seconds; NaN when unreadable
	Receipts float64 // fencegate_proxy_store_receipts; NaN when unreadable
	// StoreBytes is fencegate_proxy_store_bytes (bolt: the file's size;
	// memory: the store's estimated heap); NaN when unreadable. Like
	// Receipts it is refreshed at each compaction pass.
	StoreBytes float64
	P50, P99   float64 // latency over the interval, ms; NaN without requests
	// AddP50 and AddP99 are P50 and P99 minus the direct baseline's.
	AddP50, AddP99 float64
	// CPUPer1k is the proxy's core-seconds per 1,000 requests over the
	// interval; NaN when not known.
	CPUPer1k float64
	// Slow counts, over the interval, the sidecar's operations that took
	// longer than slowOver, by where the time went (soakSlowSources:
	// its store, its anchor's registry calls, its backend), from its
	// latency histograms; NaN when not known. A stalled window names its
	// cause here.
	Slow      [3]float64
	slowTotal [3]float64 // the histograms' counts above slowOver so far
}

// slowOver is the duration above which Slow counts an operation: a bucket
// bound of every latency histogram the sidecar exports.
const slowOver = 0.4096

// soakSlowSources are the histograms Slow reads, in its order.
var soakSlowSources = [3]struct{ label, family string }{
	{"store", "fencegate_proxy_store_seconds"},
	{"anchor", "fencegate_proxy_anchor_call_seconds"},
	{"backend", "fencegate_proxy_backend_seconds"},
}

// MarshalJSON writes NaN (not known) as null.
func (s soakSample) MarshalJSON() ([]byte, error) {
	return jsonMap(map[string]any{"elapsedSeconds": s.Elapsed, "requests": s.Requests, "requestsTotal": s.Total, "rps": s.RPS,
		"non2xxAndErrors": s.Bad, "rssKiB": s.RSS.RSS, "rssAnonKiB": s.RSS.Anon, "rssFileKiB": s.RSS.File,
		"rssShmemKiB": s.RSS.Shmem, "hwmKiB": s.RSS.HWM, "proxyCpuSeconds": jsonNum(s.CPU),
		"proxyCoreSecondsPer1k": jsonNum(s.CPUPer1k), "storeReceipts": jsonNum(s.Receipts), "storeBytes": jsonNum(s.StoreBytes),
		"p50Ms": jsonNum(s.P50), "p99Ms": jsonNum(s.P99), "addedP50Ms": jsonNum(s.AddP50), "addedP99Ms": jsonNum(s.AddP99),
		"slowStoreOps": jsonNum(s.Slow[0]), "slowAnchorCalls": jsonNum(s.Slow[1]), "slowBackendCalls": jsonNum(s.Slow[2])})
}

// soakWindow is one fixed window of the soak: the requests that ended in
// it and their latency percentiles (NaN without a request).
type soakWindow struct {
	Start    float64 // seconds since the load's start
	Requests int
	Bad      int
	P50, P99 float64
}

// MarshalJSON writes NaN (no requests) as null.
func (w soakWindow) MarshalJSON() ([]byte, error) {
	return jsonMap(map[string]any{"startSeconds": w.Start, "requests": w.Requests, "non2xxAndErrors": w.Bad,
		"p50Ms": jsonNum(w.P50), "p99Ms": jsonNum(w.P99)})
}

// intervalRecorder collects the requests of the current sample interval
// from every worker, and of the current window (width wide from start);
// a window is summed up when a request ends after it, so only the
// current one's latencies are kept.
type intervalRecorder struct {
	mu        sync.Mutex
	requests  int
	total     int
	bad       int
	latencies []int64

	start   time.Time
	width   time.Duration
	win     int // the current window's index
	winReq  int
	winBad  int
	winLat  []int64
	windows []soakWindow
}

// newIntervalRecorder starts a recorder whose windows are width wide
// from start.
func newIntervalRecorder(start time.Time, width time.Duration) *intervalRecorder {
	return &intervalRecorder{start: start, width: width}
}

// observe is the load's Observe hook.
func (r *intervalRecorder) observe(done time.Time, latency time.Duration, status int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.total++
	r.advance(done)
	r.winReq++
	if err != nil || status/100 != 2 {
		r.bad++
		r.winBad++
	}
	if err == nil {
		r.latencies = append(r.latencies, int64(latency))
		r.winLat = append(r.winLat, int64(latency))
	}
}

// advance closes every window that ended at or before t (empty ones
// included: no request ended in them). A request observed just after a
// later one (workers race to the lock) counts in the current window.
func (r *intervalRecorder) advance(t time.Time) {
	if r.width <= 0 {
		return
	}
	idx := int(t.Sub(r.start) / r.width)
	for r.win < idx {
		l := summarize(r.winLat)
		r.windows = append(r.windows, soakWindow{Start: (time.Duration(r.win) * r.width).Seconds(), Requests: r.winReq, Bad: r.winBad, P50: l.P50, P99: l.P99})
		r.win++
		r.winReq, r.winBad, r.winLat = 0, 0, r.winLat[:0]
	}
}

// windowsUntil closes the windows that ended by t and returns every
// closed window.
func (r *intervalRecorder) windowsUntil(t time.Time) []soakWindow {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance(t)
	return append([]soakWindow(nil), r.windows...)
}

// take ends the interval: its figures, and a fresh interval.
func (r *intervalRecorder) take() (requests, total, bad int, lat []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	requests, total, bad, lat = r.requests, r.total, r.bad, r.latencies
	r.requests, r.bad, r.latencies = 0, 0, make([]int64, 0, len(lat))
	return requests, total, bad, lat
}

// runSoak is the whole soak: the servers the selected arms need, the
// direct baseline, then every arm in turn; SOAK.md, soak.json and
// soak.svg in o.Out. An interrupted soak still writes what it measured.
func (s *stack) runSoak(ctx context.Context, o options, main *report, progress io.Writer) error {
	began := s.ck.Now()
	rep := &soakReport{runInfo: runInfo{Machine: main.Machine, Options: o, Pinning: main.Pinning, LoadAvgStart: main.LoadAvgStart,
		PressureStart: main.PressureStart}, Target: defaultSoakTarget}
	fgs := soakArmsMatching(regexp.MustCompile(o.SoakArms))
	if err := s.startBackend(); err != nil {
		return err
	}
	if err := s.startSoakServers(ctx, fgs); err != nil {
		return err
	}
	base := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	fmt.Fprintf(progress, "bench: soak of %s per arm at %.0f/s, sampled every %s, retention.maxPerResource %d: %d arm(s)\n",
		o.Soak, o.SoakRate, o.SoakSample, o.SoakRetention, len(fgs))
	direct, err := s.soakDirect(ctx, o, fgs[0], base, progress)
	if err != nil {
		return err
	}
	rep.Direct = direct
	for _, f := range fgs {
		if ctx.Err() != nil {
			break
		}
		run, err := s.soakArm(ctx, o, f, direct, base, progress)
		if err != nil {
			return err
		}
		if run.Exit != "" {
			rep.Notes = append(rep.Notes, run.Exit)
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.Interrupted = ctx.Err() != nil
	rep.Targets = evaluateSoakTargets(issue22Targets(), rep.Runs, rep.Target)
	rep.LoadAvgEnd, rep.PressureEnd = loadAvg(), cpuPressure()
	rep.Elapsed = clock.Since(s.ck, began).Seconds()
	if err := writeSoakOutputs(o.Out, rep); err != nil {
		return err
	}
	fmt.Fprintf(progress, "bench: soak done in %.0f s; wrote %s\n", rep.Elapsed, filepath.Join(o.Out, "SOAK.md"))
	for _, r := range rep.Runs {
		fmt.Fprintf(progress, "bench: %s\n", soakVerdictLine(r, rep.Target))
	}
	return ctx.Err()
}

// startSoakServers starts what the soak's arms fgs need besides the
// backend: redis-server, the run's PostgreSQL database (the soak of a
// postgres arm fails without it), their registries.
func (s *stack) startSoakServers(ctx context.Context, fgs []fgArm) error {
	for _, f := range fgs {
		if f.store == "postgres" {
			if s.startPostgres(ctx); s.pg == nil {
				return fmt.Errorf("%w: %s: %s", errSoak, f.name(), s.pgSkip)
			}
		}
		if f.store == "redis" && s.redis == nil {
			if err := s.startRedis(); err != nil {
				return err
			}
		}
		if s.registries[f.alg] == nil {
			// The normal run's registries of these arms: bolt, named by alg.
			if _, err := s.startRegistry(f.alg, "bolt", f.alg); err != nil {
				return err
			}
		}
	}
	return nil
}

// soakDirect runs the direct arm at the soak's rate for one sample
// interval (at most 30 s) after a 1 s warm-up: the latency the sidecars'
// is added to.
func (s *stack) soakDirect(ctx context.Context, o options, f fgArm, base http.RoundTripper, progress io.Writer) (*soakBaseline, error) {
	a := &arm{Name: "direct", Kind: "direct", url: s.backendURL, registry: s.registries[f.alg]}
	if err := a.acquire(ctx, soakWorkers, base); err != nil {
		return nil, err
	}
	defer a.release(context.WithoutCancel(ctx))
	d := min(o.SoakSample, 30*time.Second)
	res := runLoad(ctx, s.ck, a, loadSpec{Mode: "open", Label: soakLoad, Workers: soakWorkers, Rate: o.SoakRate,
		Warmup: time.Second, Duration: d}, hooks{start: func() {}, end: func() {}})
	b := &soakBaseline{Seconds: d.Seconds(), Requests: len(res.Samples), Non2xx: res.Non2xx + res.Errors, Latency: summarize(res.Samples)}
	fmt.Fprintf(progress, "soak direct baseline: %d requests in %s, p50 %.2f ms, p99 %.2f ms, non-2xx %d\n",
		b.Requests, d, b.Latency.P50, b.Latency.P99, b.Non2xx)
	return b, nil
}

// soakArm starts f's sidecar, soaks it and stops it.
func (s *stack) soakArm(ctx context.Context, o options, f fgArm, direct *soakBaseline, base http.RoundTripper, progress io.Writer) (*soakRun, error) {
	ret := newSoakRetention(o.SoakRetention, o.SoakRetentionInterval)
	reg := s.registries[f.alg]
	c, url, admin, err := s.startSoakSidecar(sidecarSpec{name: f.name(), store: f.store, status: f.status, reg: reg, pgDSNFile: s.pgDSNFile()}, ret)
	if err != nil {
		return nil, err
	}
	defer stopChild(s.ck, c)
	a := &arm{Name: f.name(), Kind: "fencegate", Store: f.store, Status: f.status, Alg: f.alg,
		url: url, proxy: c, registry: reg, redis: f.store == "redis"}
	if err := a.acquire(ctx, soakWorkers, base); err != nil {
		return nil, err
	}
	defer a.release(context.WithoutCancel(ctx))
	run := &soakRun{Arm: a.Name, Store: f.store, Status: f.status, Alg: f.alg, Rate: o.SoakRate, Workers: soakWorkers,
		Seconds: o.Soak.Seconds(), Sample: o.SoakSample.Seconds(), Retention: ret}
	hc := &http.Client{Transport: base, Timeout: 5 * time.Second}
	pid := c.pid()
	start := s.ck.Now()
	rec := newIntervalRecorder(start, soakWindowWidth)
	prevCPU, prevElapsed := math.NaN(), 0.0
	prevSlow := [3]float64{math.NaN(), math.NaN(), math.NaN()}
	take := func() {
		requests, total, bad, lat := rec.take()
		sm := soakSample{Elapsed: clock.Since(s.ck, start).Seconds(), Requests: requests, Total: total, Bad: bad,
			CPU: math.NaN(), Receipts: math.NaN(), StoreBytes: math.NaN(), slowTotal: [3]float64{math.NaN(), math.NaN(), math.NaN()}}
		if m, err := readRSS(pid); err == nil {
			sm.RSS = m
		}
		if v, err := readCPUSeconds(pid); err == nil {
			sm.CPU = v
		}
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if page, err := scrapeMetrics(mctx, hc, admin+"/metrics"); err == nil {
			if v, err := parseMetric(page, "fencegate_proxy_store_receipts"); err == nil {
				sm.Receipts = v
			}
			if v, err := parseMetric(page, "fencegate_proxy_store_bytes"); err == nil {
				sm.StoreBytes = v
			}
			sm.slowTotal = slowTotals(page)
		}
		cancel()
		for i := range sm.Slow {
			sm.Slow[i] = sm.slowTotal[i] - prevSlow[i]
		}
		prevSlow = sm.slowTotal
		sm.CPUPer1k = perThousand(sm.CPU-prevCPU, requests)
		if d := sm.Elapsed - prevElapsed; d > 0 {
			sm.RPS = float64(requests) / d
		}
		prevCPU, prevElapsed = sm.CPU, sm.Elapsed
		l := summarize(lat)
		sm.P50, sm.P99 = l.P50, l.P99
		sm.AddP50, sm.AddP99 = sm.P50-direct.Latency.P50, sm.P99-direct.Latency.P99
		run.Samples = append(run.Samples, sm)
		fmt.Fprintln(progress, soakProgressLine(run.Arm, sm, o.Soak))
	}
	take() // the baseline, Elapsed 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 1; ; k++ {
			at := start.Add(time.Duration(k) * o.SoakSample)
			if !at.Before(start.Add(o.Soak)) || !clock.Sleep(s.ck, clock.Until(s.ck, at), stop) {
				return
			}
			take()
		}
	}()
	res := runLoad(ctx, s.ck, a, loadSpec{Mode: "open", Label: soakLoad, Workers: soakWorkers, Rate: o.SoakRate,
		Duration: o.Soak, Observe: rec.observe}, hooks{start: func() {}, end: func() {}})
	close(stop)
	wg.Wait()
	take() // the end, once every worker is done
	run.Missed, run.FirstError = res.Missed, res.FirstError
	run.Exit = a.exitNote()
	// The windows that ended by now: every one of the soak's, and any
	// after it in which the last requests ended.
	run.Windows = rec.windowsUntil(s.ck.Now())
	run.Summary = summarizeSoak(run.Samples, run.Windows, run.Rate, run.Missed, defaultSoakTarget)
	return run, nil
}

// perThousand is cpu seconds per 1,000 requests; NaN without requests or
// a CPU figure.
func perThousand(cpu float64, requests int) float64 {
	if requests <= 0 || math.IsNaN(cpu) {
		return math.NaN()
	}
	return cpu / float64(requests) * 1000
}

// soakProgressLine is a sample's progress line on stderr.
func soakProgressLine(arm string, sm soakSample, total time.Duration) string {
	return fmt.Sprintf("soak %-22s %6.0fs/%.0fs  req %7d (%5.0f/s)  bad %d  RSS %6.1f MiB (anon %5.1f, file %5.1f)  core-s/1k %s  receipts %s (store %s MiB)  p50 %s ms  p99 %s ms  slow>%.0fms store/anchor/backend %s/%s/%s",
		arm, sm.Elapsed, total.Seconds(), sm.Total, sm.RPS, sm.Bad, mib(sm.RSS.RSS), mib(sm.RSS.Anon), mib(sm.RSS.File),
		fmtNum(sm.CPUPer1k, 3), fmtNum(sm.Receipts, 0), fmtNum(sm.StoreBytes/(1<<20), 1), fmtNum(sm.P50, 2), fmtNum(sm.P99, 2),
		slowOver*1000, fmtNum(sm.Slow[0], 0), fmtNum(sm.Slow[1], 0), fmtNum(sm.Slow[2], 0))
}

// mib is KiB in MiB.
func mib(kib int64) float64 { return float64(kib) / 1024 }

// startSoakSidecar runs "fencegate proxy" for sp with the normal run's
// configuration and ret's retention section; it returns the proxy's URL
// and its admin API's.
func (s *stack) startSoakSidecar(sp sidecarSpec, ret soakRetention) (*child, string, string, error) {
	dir := filepath.Join(s.dir, "soak-"+sp.name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, "", "", err
	}
	cfg := filepath.Join(dir, "proxy.yaml")
	y := sidecarYAML(sp, s.backendURL, s.redisAddr, filepath.Join(dir, "data")) + ret.yaml()
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		return nil, "", "", err
	}
	c, m, err := s.procs.start("sidecar-"+sp.name, reSidecarListening, dir, s.bin, "proxy", "--config", cfg)
	if err != nil {
		return nil, "", "", err
	}
	return c, "http://" + m[1], "http://" + m[2], nil
}

// stopChild ends one child: SIGTERM, then SIGKILL after 3 s.
func stopChild(ck clock.Clock, c *child) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-ck.NewTimer(3 * time.Second).C():
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// scrapeMetrics reads a Prometheus text page.
func scrapeMetrics(ctx context.Context, hc *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("bench: metrics: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("bench: metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %s answered %d", errMetric, url, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("bench: metrics: %w", err)
	}
	return string(b), nil
}
