package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"time"

	"github.com/fencegate/fencegate/clock"
)

func main() {
	if len(os.Args) > 1 {
		if err := subcommand(os.Args[1], os.Args[2:]); err != errNoSubcommand {
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			return
		}
	}
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	if opts.Pin && os.Getenv(pinEnv) == "" {
		tasksetPath, _ := exec.LookPath("taskset")
		if p := planPinning(true, runtime.NumCPU(), tasksetPath); p.Enabled {
			if err := reexecPinned(p); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var errNoSubcommand = fmt.Errorf("bench: no subcommand")

// subcommand runs the server subcommands this binary is re-executed with.
func subcommand(name string, args []string) error {
	switch name {
	case "backend":
		return runBackend(args)
	case "plainproxy":
		return runPlainProxy(args)
	}
	return errNoSubcommand
}

// options are the command's flags.
type options struct {
	Quick        bool          `json:"quick"`
	Reps         int           `json:"reps"`
	Duration     time.Duration `json:"duration"`
	Warmup       time.Duration `json:"warmup"`
	Handoffs     int           `json:"handoffs"`
	TputDuration time.Duration `json:"throughputDuration"`
	Out          string        `json:"-"`
	Pin          bool          `json:"pin"`
	Arms         string        `json:"arms,omitempty"`
	// NoRegistryPhases is -no-registry-phases.
	NoRegistryPhases bool `json:"noRegistryPhases,omitempty"`
	// RegistryPhasesOnly is -registry-phases-only: the handoffs and the
	// registry throughput alone, no arm.
	RegistryPhasesOnly bool `json:"registryPhasesOnly,omitempty"`
	// RegistryBackends is -registry-backends: the registry backends whose
	// handoffs and throughput run (empty: all).
	RegistryBackends string `json:"registryBackends,omitempty"`
	// LibraryIterations is the library phase's transactions of each kind
	// per repetition (library.go).
	LibraryIterations int `json:"libraryIterations,omitempty"`
	// Profile, when positive, adds the profile phase (profile.go) on the
	// arms ProfileArms matches.
	Profile     time.Duration `json:"profile,omitempty"`
	ProfileArms string        `json:"profileArms,omitempty"`
	// The soak (soak.go): when Soak is set, only it runs.
	Soak          time.Duration `json:"soak,omitempty"`
	SoakArms      string        `json:"soakArms,omitempty"`
	SoakRate      float64       `json:"soakRate,omitempty"`
	SoakSample    time.Duration `json:"soakSample,omitempty"`
	SoakRetention int           `json:"soakRetentionMaxPerResource,omitempty"`
	// SoakRetentionInterval is -soak-retention-interval.
	SoakRetentionInterval time.Duration `json:"soakRetentionInterval,omitempty"`
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.Quick, "quick", false, "smoke run of about a minute: 1 repetition, 1 s per run, 100 handoffs")
	fs.IntVar(&o.Reps, "reps", 3, "repetitions of the round-robin over the arms")
	fs.DurationVar(&o.Duration, "duration", 2*time.Second, "measured time of each run (default: about 135 runs of 2.75 s with the warm-up fit 10 minutes from a fresh clone on 2 busy cores, first build included)")
	fs.DurationVar(&o.Warmup, "warmup", 750*time.Millisecond, "unmeasured warm-up before each run")
	fs.IntVar(&o.Handoffs, "handoffs", 500, "lease handoffs measured per handoff configuration (bolt and Redis registries, proof and registry-mode sidecars)")
	fs.DurationVar(&o.TputDuration, "tput-duration", 3*time.Second, "time of each registry acquire+release throughput run")
	fs.StringVar(&o.Out, "out", "", "output directory for RESULTS.md, results.json and latency.svg (default: e2e/bench of the module)")
	fs.BoolVar(&o.Pin, "pin", true, "pin the load generator and the servers to different CPUs with taskset where possible")
	fs.DurationVar(&o.Profile, "profile", defaultProfile, "after the measured phases, a CPU profile of this length of every sidecar -profile-arms matches (and of its registry in registry mode) under 64 workers, written to profiles/ with the top functions in profiles/README.md and RESULTS.md (0: none)")
	fs.StringVar(&o.ProfileArms, "profile-arms", defaultProfileArms, "the profiled arms: the fencegate arms whose name matches this regular expression (default: the durable ones, bolt, Redis and PostgreSQL in proof and registry modes)")
	fs.StringVar(&o.Arms, "arms", "", "only the arms whose name matches this regular expression (direct and plain-proxy always run: they are the baselines); "+libraryArm+" is the library phase")
	fs.IntVar(&o.LibraryIterations, "library-iterations", defaultLibraryIterations, "library phase: business transactions with and without the fence call per repetition")
	fs.BoolVar(&o.NoRegistryPhases, "no-registry-phases", false, "skip the handoffs and the registry throughput (their targets: not measured), e.g. with -arms to measure some arms alone")
	fs.BoolVar(&o.RegistryPhasesOnly, "registry-phases-only", false, "run only the handoffs and the registry throughput (no arm, no profile; the arms' targets: not measured)")
	fs.StringVar(&o.RegistryBackends, "registry-backends", "", "only the handoffs and registry throughput of the registry backends (bolt, memory, redis, etcd) this regular expression matches")
	addSoakFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := checkSoakFlags(o); err != nil {
		fmt.Fprintln(stderr, err)
		return o, err
	}
	if o.Soak == 0 {
		// No soak: its settings stay out of results.json.
		o.SoakArms, o.SoakRate, o.SoakSample, o.SoakRetention, o.SoakRetentionInterval = "", 0, 0, 0, 0
	} else {
		// The soak runs alone: no profile phase.
		o.Profile, o.ProfileArms = 0, ""
	}
	if o.Quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]func(){
			"reps":               func() { o.Reps = 1 },
			"duration":           func() { o.Duration = time.Second },
			"warmup":             func() { o.Warmup = 300 * time.Millisecond },
			"handoffs":           func() { o.Handoffs = 100 },
			"tput-duration":      func() { o.TputDuration = time.Second },
			"profile":            func() { o.Profile = time.Second },
			"library-iterations": func() { o.LibraryIterations = quickLibraryIterations },
		}
		for name, f := range quick {
			if !set[name] {
				f()
			}
		}
	}
	if err := checkRegistryFlags(&o); err != nil {
		fmt.Fprintln(stderr, err)
		return o, err
	}
	if _, err := regexp.Compile(o.Arms); err != nil {
		fmt.Fprintln(stderr, "bench: -arms:", err)
		return o, err
	}
	if _, err := regexp.Compile(o.ProfileArms); err != nil {
		fmt.Fprintln(stderr, "bench: -profile-arms:", err)
		return o, err
	}
	if !o.sizesPositive() {
		fmt.Fprintln(stderr, "bench: -reps, -duration, -handoffs, -tput-duration and -library-iterations must be positive")
		return o, fmt.Errorf("bench: bad flags")
	}
	return o, nil
}

// checkRegistryFlags checks -registry-phases-only and -registry-backends;
// a registry-only run has no profile phase (it profiles arms).
func checkRegistryFlags(o *options) error {
	if o.RegistryPhasesOnly && o.NoRegistryPhases {
		return fmt.Errorf("bench: -registry-phases-only and -no-registry-phases exclude each other")
	}
	if _, err := regexp.Compile(o.RegistryBackends); err != nil {
		return fmt.Errorf("bench: -registry-backends: %w", err)
	}
	if o.RegistryPhasesOnly {
		o.Profile, o.ProfileArms = 0, ""
	}
	return nil
}

// registryBackend reports whether -registry-backends selects backend.
func (o options) registryBackend(backend string) bool {
	return regexp.MustCompile(o.RegistryBackends).MatchString(backend)
}

// sizesPositive reports whether the counts and durations are positive
// (the warm-up and the profile may be zero).
func (o options) sizesPositive() bool {
	return o.Reps >= 1 && o.Duration > 0 && o.Warmup >= 0 && o.Handoffs >= 1 && o.TputDuration > 0 && o.Profile >= 0 && o.LibraryIterations >= 1
}

// report is everything a run produced: results.json, and RESULTS.md
// rendered from it.
type report struct {
	runInfo
	OpenRate   float64            `json:"openLoopRate"`
	OpenPlan   []openPlan         `json:"openOwnAnd1kPlan"`
	Arms       []*arm             `json:"arms"`
	Runs       []runRecord        `json:"runs"`
	Rows       []armRow           `json:"rows"`
	Memory     []memoryRow        `json:"proxyMemory"`
	Handoffs   []handoffResult    `json:"handoffs,omitempty"`
	Throughput []throughputResult `json:"registryThroughput,omitempty"`
	Profiles   []profiled         `json:"profiles,omitempty"`
	// Library is the library phase's figures (library.go), when -arms
	// selected it.
	Library *libraryResult `json:"libraryMode,omitempty"`
	// Postgres is what PostgreSQL counted on the run's database, when it
	// had one (pgstats.go).
	Postgres *postgresTotals `json:"postgres,omitempty"`
	// Skipped are the arms selected but not run, with why (no PostgreSQL).
	Skipped []skippedArm `json:"skippedArms,omitempty"`
	// Targets are issue 22's targets judged from the runs above (targets.go).
	Targets []targetResult `json:"targets"`
	Notes   []string       `json:"notes,omitempty"`
}

// run is the whole benchmark.
func run(ctx context.Context, o options, progress io.Writer) error {
	ck := clock.Real()
	began := ck.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if o.Out == "" {
		o.Out = filepath.Join(root, "e2e", "bench")
	}
	rep := &report{runInfo: runInfo{Options: o, LoadAvgStart: loadAvg(), PressureStart: cpuPressure()}}
	rep.Machine = readMachine(root, ck)
	rep.Pinning = runPinning(o.Pin)
	fmt.Fprintf(progress, "bench: %s; load average %s\n", rep.Pinning.Note, rep.LoadAvgStart)

	dir, err := os.MkdirTemp("", "fencegate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	s := &stack{ck: ck, dir: dir, root: root, self: self, registries: map[string]*registryProc{},
		procs: &children{pin: rep.Pinning, ck: ck}}
	defer func() {
		// The sidecars first: then the database they used is dropped.
		s.procs.stopAll()
		s.stopPostgres(func(f string, a ...any) { fmt.Fprintf(progress, f, a...) })
	}()
	fmt.Fprintln(progress, "bench: building fencegate")
	if s.bin, err = buildFencegate(root, dir); err != nil {
		return err
	}
	if o.Soak > 0 {
		return s.runSoak(ctx, o, rep, progress)
	}
	if err := s.runPhases(ctx, o, rep, progress); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.pg != nil {
		// The sidecars stop first: their backends flush their counts.
		s.procs.stopAll()
		rep.Postgres = s.readPostgresTotals(ctx, pgArmNames(rep.Arms))
		rep.Postgres.print(progress)
	}
	finishReport(rep, ck, began, progress)
	if err := writeOutputs(o.Out, rep); err != nil {
		return err
	}
	fmt.Fprintf(progress, "bench: done in %.0f s; wrote %s\n", rep.Elapsed, filepath.Join(o.Out, "RESULTS.md"))
	return nil
}

// runPhases starts the servers and runs the measured phases into rep:
// the closed and open loops on every arm, the per-arm open loops, then
// the handoffs, the registry throughput and the profiles.
func (s *stack) runPhases(ctx context.Context, o options, rep *report, progress io.Writer) error {
	if err := s.startAll(o); err != nil {
		return err
	}
	base := loadTransport()
	if o.RegistryPhasesOnly {
		s.runRegistryPhases(ctx, o, nil, base, rep, progress)
		return nil
	}
	only := regexp.MustCompile(o.Arms)
	if needsPostgres(only) {
		s.startPostgres(ctx)
	}
	arms, err := s.buildArms(only)
	if err != nil {
		return err
	}
	rep.Arms = arms
	s.noteSkipped(rep, progress)
	if err := s.runArms(ctx, o, arms, base, rep, progress); err != nil {
		return err
	}
	if err := s.runOpenPhases(ctx, o, arms, base, rep, progress); err != nil {
		return err
	}
	rep.Library = s.runLibrary(ctx, o, only, progress)
	s.noteSkipped(rep, progress)
	s.runRegistryPhases(ctx, o, arms, base, rep, progress)
	return nil
}

// runRegistryPhases runs, unless ctx is done, the handoffs, the registry
// throughput and (with -profile) the profiles into rep; a failed handoff
// or profile phase leaves a note.
func (s *stack) runRegistryPhases(ctx context.Context, o options, arms []*arm, base http.RoundTripper, rep *report, progress io.Writer) {
	if ctx.Err() == nil && !o.NoRegistryPhases {
		rep.Handoffs = s.runHandoffs(ctx, o, base, progress)
		for _, h := range rep.Handoffs {
			if h.FirstError != "" {
				rep.Notes = append(rep.Notes, h.Name+": "+h.FirstError)
			}
		}
	}
	if ctx.Err() == nil && !o.NoRegistryPhases {
		rep.Throughput = s.runThroughput(ctx, o, base, progress)
	}
	if o.Profile > 0 && ctx.Err() == nil {
		var err error
		if rep.Profiles, err = s.runProfiles(ctx, o, arms, base, progress); err != nil {
			rep.Notes = append(rep.Notes, "profiles: "+err.Error())
			fmt.Fprintln(progress, "bench: profiles:", err)
		}
	}
}

// finishReport derives rep's tables and judged targets from its runs,
// prints the judged targets, and closes it with the load at the end and
// the time since began.
func finishReport(rep *report, ck clock.Clock, began time.Time, progress io.Writer) {
	rep.Rows, rep.Memory = buildRows(rep.Runs), buildMemory(rep.Runs)
	rep.Targets = evaluateTargets(append(issue22Targets(), issue23Targets()...), targetInput{Runs: rep.Runs, Plan: rep.OpenPlan,
		Handoffs: rep.Handoffs, Throughput: rep.Throughput, Library: rep.Library, Skipped: skippedReasons(rep.Skipped)})
	printTargets(progress, rep.Targets)
	rep.LoadAvgEnd, rep.PressureEnd = loadAvg(), cpuPressure()
	rep.Elapsed = clock.Since(ck, began).Seconds()
}

// startAll starts the backend, plain proxy, redis-server, the registries
// and, when its registry phases run, the etcd member of the etcd registry.
func (s *stack) startAll(o options) error {
	if err := s.startBackend(); err != nil {
		return err
	}
	if err := s.startPlainProxy(); err != nil {
		return err
	}
	if err := s.startRedis(); err != nil {
		return err
	}
	for _, r := range []struct{ name, backend, alg string }{
		{"EdDSA", "bolt", "EdDSA"}, {"ES256", "bolt", "ES256"}, {"HS256", "bolt", "HS256"},
		{"memory", "memory", "EdDSA"}, {"redis", "redis", "EdDSA"},
	} {
		if _, err := s.startRegistry(r.name, r.backend, r.alg); err != nil {
			return err
		}
	}
	if o.NoRegistryPhases || !o.registryBackend("etcd") {
		return nil
	}
	if err := s.startEtcd(); err != nil {
		return err
	}
	_, err := s.startRegistry("etcd", "etcd", "EdDSA")
	return err
}

// loads are the loads of a repetition; the open loop's rate is set once
// the plain proxy's closed-loop maximum is known.
func loads(o options, openRate float64) []loadSpec {
	return []loadSpec{
		{Mode: "closed", Workers: 16, Warmup: o.Warmup, Duration: o.Duration},
		{Mode: "closed", Workers: 64, Warmup: o.Warmup, Duration: o.Duration},
		{Mode: "open", Workers: 64, Rate: openRate, Warmup: o.Warmup, Duration: o.Duration},
	}
}

// runArms runs every load on every arm, round-robin, o.Reps times. Each
// repetition starts at the next arm, so no arm always follows the same one.
func (s *stack) runArms(ctx context.Context, o options, arms []*arm, base http.RoundTripper, rep *report, progress io.Writer) error {
	for r := 1; r <= o.Reps; r++ {
		for _, a := range arms {
			if err := a.acquire(ctx, 64, base); err != nil {
				return err
			}
		}
		for li := range 3 {
			spec := loads(o, rep.OpenRate)[li]
			if spec.Mode == "open" && rep.OpenRate == 0 {
				var best float64
				for _, run := range rep.Runs {
					if run.Arm == "plain-proxy" && run.valid() {
						best = math.Max(best, run.RPS)
					}
				}
				if best == 0 {
					return fmt.Errorf("bench: the plain proxy had no valid closed-loop run: no open-loop rate")
				}
				rep.OpenRate = math.Round(best / 2)
				spec.Rate = rep.OpenRate
			}
			for i := range arms {
				if err := s.runOne(ctx, o, arms[(i+r-1)%len(arms)], spec, r, rep, progress); err != nil {
					return err
				}
			}
		}
		for _, a := range arms {
			a.release(ctx)
		}
	}
	return nil
}

// runOne measures spec on arm a in repetition r, records the run and
// prints its progress line.
func (s *stack) runOne(ctx context.Context, o options, a *arm, spec loadSpec, r int, rep *report, progress io.Writer) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rec := s.measure(ctx, a, spec, r)
	rep.Runs = append(rep.Runs, rec)
	if note := a.exitNote(); note != "" {
		rep.Notes = append(rep.Notes, note)
		fmt.Fprintln(progress, "bench:", note)
	}
	mark := ""
	if !rec.valid() {
		mark = fmt.Sprintf("  INVALID non2xx=%d errors=%d missed=%d %s", rec.Non2xx, rec.Errors, rec.Missed, rec.FirstError)
	}
	fmt.Fprintf(progress, "rep %d/%d %-12s %-24s %8.0f rps  p50 %7.2f ms  p99 %7.2f ms%s\n",
		r, o.Reps, rec.Load, a.Name, rec.RPS, rec.Latency.P50, rec.Latency.P99, mark)
	return nil
}

// measure runs spec on arm a and takes the CPU and memory snapshots of
// every process involved around the measured window.
func (s *stack) measure(ctx context.Context, a *arm, spec loadSpec, r int) runRecord {
	pids := map[string]int{"backend": s.backend.pid(), "loadgen": os.Getpid()}
	if a.proxy != nil {
		pids["proxy"] = a.proxy.pid()
	}
	if a.Kind == "fencegate" {
		pids["registry"] = a.registry.proc.pid()
	}
	if a.redis {
		pids["redis"] = s.redis.pid()
	}
	cpu0, cpu1 := map[string]float64{}, map[string]float64{}
	var mem0, mem1 memKB
	snap := func(into map[string]float64, mem *memKB) func() {
		return func() {
			for role, pid := range pids {
				if v, err := readCPUSeconds(pid); err == nil {
					into[role] = v
				}
			}
			if a.proxy != nil {
				if m, err := readMem(a.proxy.pid()); err == nil {
					*mem = m
				}
			}
		}
	}
	pgStart, pgDone := s.pgCPUHooks(ctx, a)
	start := snap(cpu0, &mem0)
	res := runLoad(ctx, s.ck, a, spec, hooks{start: func() { start(); pgStart() }, end: snap(cpu1, &mem1)})
	rec := runRecord{Rep: r, Load: loadName(spec), Arm: a.Name, Workers: spec.Workers, TargetRate: spec.Rate,
		Requests: len(res.Samples), Seconds: spec.Duration.Seconds(), Non2xx: res.Non2xx, Errors: res.Errors,
		Missed: res.Missed, Answered: res.Answered, FirstError: res.FirstError, CPU: map[string]float64{}}
	rec.RPS = float64(rec.Requests) / rec.Seconds
	rec.Latency = summarize(res.Samples)
	for role := range pids {
		d, ok0 := cpu0[role]
		e, ok1 := cpu1[role]
		if ok0 && ok1 && rec.Requests > 0 {
			rec.CPU[role] = (e - d) / float64(rec.Requests) * 1000
		}
		if role == "loadgen" && ok0 && ok1 {
			rec.LoadgenSeconds = e - d
		}
	}
	pgDone(rec.Requests, rec.CPU)
	if a.proxy != nil {
		rec.ProxyRSSStart, rec.ProxyRSSEnd, rec.ProxyPeakRSS = mem0.RSS, mem1.RSS, mem1.HWM
	}
	return rec
}
