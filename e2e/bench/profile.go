package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The profile phase (-profile DURATION, on by default for the durable
// arms -profile-arms matches) answers "where does the time go": after the
// measured phases it runs each of those arms once more, closed loop with 64 workers for DURATION, and meanwhile takes a CPU
// profile of its sidecar (and, in registry mode, of the registry serving
// it) from /debug/pprof/profile on their admin listeners. It writes
// profiles/ARM-proxy.pprof (and ARM-registry.pprof), the top of each as
// text (go tool pprof -top), and profiles/README.md with the heaviest
// functions of every profile and fencegate's own functions by cumulative
// time; RESULTS.md links every profile with its top functions by flat and
// by cumulative time. These runs are not part of the results.

// Profile defaults: every durable arm (bolt, Redis and PostgreSQL
// stores, proof and registry modes), 3 s each.
const (
	defaultProfile     = 3 * time.Second
	defaultProfileArms = `^fg-(bolt|redis|postgres)-(proof|registry)-EdDSA$`
)

// profileSummaryTop is how many functions RESULTS.md lists per profile,
// by flat and by cumulative time.
const profileSummaryTop = 10

// profileWorkers is the profile runs' closed-loop concurrency.
const profileWorkers = 64

// profileTop is how many functions of each profile README.md lists.
const profileTop = 12

// profiled is one profile taken.
type profiled struct {
	Arm      string `json:"arm"`
	Role     string `json:"role"` // proxy, registry
	File     string `json:"file"` // in profiles/
	Requests int    `json:"requests"`
	// Top are pprof -top lines, heaviest flat first; Cum pprof -top -cum
	// lines, heaviest cumulative first; Ours the -cum lines of fencegate's
	// own functions.
	Top  []string `json:"topFlat,omitempty"`
	Cum  []string `json:"topCum,omitempty"`
	Ours []string `json:"oursCum,omitempty"`
	Err  string   `json:"error,omitempty"`
}

// runProfiles profiles every fencegate arm o.ProfileArms matches in turn
// and writes dir/profiles.
func (s *stack) runProfiles(ctx context.Context, o options, arms []*arm, base http.RoundTripper, progress io.Writer) ([]profiled, error) {
	out := filepath.Join(o.Out, "profiles")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	only, err := regexp.Compile(o.ProfileArms)
	if err != nil {
		return nil, fmt.Errorf("bench: -profile-arms: %w", err)
	}
	secs := max(int(o.Profile.Round(time.Second)/time.Second), 1)
	var all []profiled
	for _, a := range arms {
		if a.Kind != "fencegate" || !only.MatchString(a.Name) || ctx.Err() != nil {
			continue
		}
		if err := a.acquire(ctx, profileWorkers, base); err != nil {
			return all, err
		}
		targets := map[string]string{"proxy": a.admin}
		if a.Status == "registry" {
			targets["registry"] = a.registry.url
		}
		got := make(chan profiled, len(targets))
		spec := loadSpec{Mode: "closed", Workers: profileWorkers, Warmup: o.Warmup, Duration: time.Duration(secs)*time.Second + 500*time.Millisecond}
		res := runLoad(ctx, s.ck, a, spec, hooks{start: func() {
			for role, url := range targets {
				go func() {
					got <- s.takeProfile(ctx, url, secs, filepath.Join(out, a.Name+"-"+role+".pprof"), a.Name, role)
				}()
			}
		}, end: func() {}})
		a.release(ctx)
		byRole := map[string]profiled{}
		for range targets {
			p := <-got
			p.Requests = len(res.Samples)
			byRole[p.Role] = p
		}
		// The proxy's first, then the registry's, whichever ended first.
		for _, role := range []string{"proxy", "registry"} {
			p, ok := byRole[role]
			if !ok {
				continue
			}
			all = append(all, p)
			if p.Err != "" {
				fmt.Fprintf(progress, "bench: profile %s %s: %s\n", p.Arm, p.Role, p.Err)
				continue
			}
			fmt.Fprintf(progress, "bench: profile %s %s: %d requests; top: %s\n", p.Arm, p.Role, p.Requests, firstOr(p.Top, "(empty)"))
		}
	}
	return all, os.WriteFile(filepath.Join(out, "README.md"), []byte(renderProfiles(all, secs)), 0o644)
}

// takeProfile fetches a CPU profile of secs seconds from base's
// /debug/pprof/profile into file and reads its top functions.
func (s *stack) takeProfile(ctx context.Context, base string, secs int, file, arm, role string) profiled {
	p := profiled{Arm: arm, Role: role, File: filepath.Base(file)}
	fail := func(err error) profiled { p.Err = err.Error(); return p }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), nil)
	if err != nil {
		return fail(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fail(fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b))))
	}
	f, err := os.Create(file)
	if err != nil {
		return fail(err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=40", s.bin, file).Output()
	if err != nil {
		return fail(fmt.Errorf("go tool pprof: %w", err))
	}
	if err := os.WriteFile(strings.TrimSuffix(file, ".pprof")+".txt", top, 0o644); err != nil {
		return fail(err)
	}
	p.Top = topLines(string(top), profileTop)
	cum, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=400", s.bin, file).Output()
	if err != nil {
		return fail(fmt.Errorf("go tool pprof -cum: %w", err))
	}
	cumLines := topLines(string(cum), 400)
	p.Cum = cumLines[:min(len(cumLines), profileTop)]
	for _, l := range cumLines {
		if strings.Contains(l, "fencegate/fencegate/") && len(p.Ours) < 2*profileTop {
			p.Ours = append(p.Ours, l)
		}
	}
	return p
}

// topLines returns the first n function lines of `go tool pprof -top`
// output (the lines after the "flat  flat%" header).
func topLines(out string, n int) []string {
	var lines []string
	seen := false
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "flat") && strings.Contains(t, "cum%"):
			seen = true
		case seen && t != "" && len(lines) < n:
			lines = append(lines, t)
		}
	}
	return lines
}

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return strings.Join(strings.Fields(s[0]), " ")
}

// renderProfiles is profiles/README.md.
func renderProfiles(all []profiled, secs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# CPU profiles of the fencegate arms\n\n")
	fmt.Fprintf(&b, "Each arm once more, closed loop with %d workers, a %d s CPU profile of its sidecar (and of the registry serving its status reads in registry mode) from `/debug/pprof/profile`. Read one with `go tool pprof -http=: FILE.pprof`; the `.txt` beside it is `go tool pprof -top`.\n\n", profileWorkers, secs)
	for _, p := range all {
		fmt.Fprintf(&b, "## %s, %s\n\n", p.Arm, p.Role)
		if p.Err != "" {
			fmt.Fprintf(&b, "not taken: %s\n\n", p.Err)
			continue
		}
		fmt.Fprintf(&b, "`%s`, %d requests during the run.\n\n```\n      flat  flat%%   sum%%        cum   cum%%\n", p.File, p.Requests)
		for _, l := range p.Top {
			fmt.Fprintln(&b, l)
		}
		fmt.Fprintf(&b, "```\n\n")
		if len(p.Ours) > 0 {
			fmt.Fprintf(&b, "fencegate's own functions by cumulative time (what each costs with everything it calls):\n\n```\n")
			for _, l := range p.Ours {
				fmt.Fprintln(&b, l)
			}
			fmt.Fprintf(&b, "```\n\n")
		}
	}
	return b.String()
}
