package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

const backendMutations = "fencegate_proxy_backend_mutations_total"

var coverageModes = []string{proxy.CoverageEnforce, proxy.CoverageShadow, proxy.CoverageOff,
	proxy.CoverageUnmatched, proxy.CoverageUpgrade, proxy.CoverageUnmarked}

// wantCoverage asserts the whole of fencegate_proxy_backend_mutations_total
// and of Proxy.Coverage: the series named in want ("mode/auth/fence") hold
// their counts, every other series exists and is 0.
func (f *fixture) wantCoverage(want map[string]float64) {
	f.t.Helper()
	mfs, err := f.metrics.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != backendMutations {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[l["mode"]+"/"+l["auth"]+"/"+l["fence"]] = m.GetCounter().GetValue()
		}
	}
	wantCov := proxy.Coverage{Modes: map[string]proxy.ModeCoverage{}}
	for _, mode := range coverageModes {
		var mc proxy.ModeCoverage
		for _, auth := range []string{"passed", "skipped"} {
			for _, fence := range []string{"passed", "skipped"} {
				k := mode + "/" + auth + "/" + fence
				v, ok := got[k]
				if !ok {
					f.t.Errorf("series %s{%s} is missing", backendMutations, k)
				}
				if v != want[k] {
					f.t.Errorf("%s{%s} = %v, want %v", backendMutations, k, v, want[k])
				}
				n := uint64(want[k])
				mc.Forwarded += n
				if auth == "passed" {
					mc.AuthPassed += n
				}
				if fence == "passed" {
					mc.FencePassed += n
				}
				if auth == "passed" && fence == "passed" {
					mc.Covered += n
				}
				delete(got, k)
			}
		}
		wantCov.Modes[mode] = mc
		wantCov.Forwarded += mc.Forwarded
		wantCov.Covered += mc.Covered
	}
	for k := range got {
		f.t.Errorf("unexpected series %s{%s}", backendMutations, k)
	}
	c := f.proxy.Coverage()
	if c.Forwarded != wantCov.Forwarded || c.Covered != wantCov.Covered || len(c.Modes) != len(wantCov.Modes) {
		f.t.Errorf("Coverage() = %+v, want %+v", c, wantCov)
	}
	for mode, mc := range wantCov.Modes {
		if c.Modes[mode] != mc {
			f.t.Errorf("Coverage().Modes[%s] = %+v, want %+v", mode, c.Modes[mode], mc)
		}
	}
}

// bugLogs counts the error-level "BUG" logs of the coverage count.
func (f *fixture) coverageBugs() int {
	n := 0
	for _, e := range f.logs.All() {
		if e.Level == zap.ErrorLevel && e.Message == "BUG: a mutation reached the backend without passing grant authentication and the fence check" {
			n++
		}
	}
	return n
}

// TestCoverageZeroAtStart: a fresh sidecar exposes every mode/auth/fence
// combination at 0, and Coverage has every mode, all zero.
func TestCoverageZeroAtStart(t *testing.T) {
	f := newFixture(t)
	f.wantCoverage(nil)
}

// TestCoverageEnforce: enforce-mode writes that reach the backend are
// counted passed/passed; reads, the reconciler's GETs and rejected writes
// (which never reach the backend) are not counted at all.
func TestCoverageEnforce(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: "1", body: "v1"}).expect(t, http.StatusCreated, "")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: "2", body: "v2"}).expect(t, http.StatusCreated, "")
	// A replay is answered from the store: nothing reaches the backend.
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: "2", body: "v2"}).expect(t, http.StatusCreated, "")
	// A read passes through and is not a mutation.
	if a := f.do(call{method: "GET", path: "/v1/items/1"}); a.code != http.StatusCreated {
		t.Fatalf("read: %d", a.code)
	}
	reached := f.back.count()
	// Rejected writes: no grant, a forged grant, a segment gap, another caller.
	f.do(call{path: "/v1/items/1", owner: "worker-a", seg: "3", body: "x"}).expect(t, http.StatusPreconditionRequired, fencegate.CodeGrantRequired)
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: "not.a.jws", seg: "3", body: "x"}).expect(t, http.StatusUnauthorized, fencegate.CodeGrantInvalid)
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: "9", body: "x"}).expect(t, http.StatusConflict, fencegate.CodeSegmentGap)
	if f.back.count() != reached {
		t.Fatalf("a rejected write reached the backend")
	}
	f.wantCoverage(map[string]float64{"enforce/passed/passed": 2})
	if n := f.coverageBugs(); n != 0 {
		t.Fatalf("%d coverage BUG logs for a clean enforce run", n)
	}
}

// TestCoverageShadow: a shadow write is forwarded whatever enforce mode
// would have said, and counted by the checks it really passed: a passed
// check is one that ran and passed, anything else is skipped.
func TestCoverageShadow(t *testing.T) {
	f := newFixture(t)
	// Authentic, held, in order: both checks passed.
	f.do(f.shadowCall("1", "1", "one")).expect(t, http.StatusCreated, "")
	// No grant at all: neither check ran.
	f.do(call{method: "POST", path: "/v1/shadow/2", owner: "worker-a", seg: "1", body: "x"}).expect(t, http.StatusCreated, "")
	// A forged grant: authentication failed, the fence check never ran.
	bad := f.shadowCall("3", "1", "x")
	bad.grant += "x"
	f.do(bad).expect(t, http.StatusCreated, "")
	// Authentic but out of order (a segment gap): authentication passed,
	// the fence check did not.
	f.do(f.shadowCall("4", "5", "x")).expect(t, http.StatusCreated, "")
	// A replay of segment 1: enforce would answer from the store; shadow
	// forwards it, and the store's REPLAY is not a PROCEED.
	f.do(f.shadowCall("1", "1", "one")).expect(t, http.StatusCreated, "")
	if f.back.count() != 5 {
		t.Fatalf("backend saw %d requests, want 5", f.back.count())
	}
	f.wantCoverage(map[string]float64{
		"shadow/passed/passed":   1,
		"shadow/skipped/skipped": 2,
		"shadow/passed/skipped":  2,
	})
	if n := f.coverageBugs(); n != 0 {
		t.Fatalf("%d coverage BUG logs: shadow passes are not bugs", n)
	}
}

// TestCoverageUncheckedPaths: a mutation passed by unmatchedMutations:
// pass, a route in off mode and an allowed upgrade reach the backend
// unchecked and are counted so; a refused unmatched CONNECT is not.
func TestCoverageUncheckedPaths(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b, rpPass, func(c *proxy.Config) {
		c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws/{room}", Protocols: []string{"websocket"}}}
	}))
	if a := f.do(call{method: "POST", path: "/v1/elsewhere", body: "x"}); a.code != http.StatusOK {
		t.Fatalf("unmatched pass: %d %+v", a.code, a.problem)
	}
	if a := f.do(call{method: "PATCH", path: "/v1/elsewhere/2", body: "x"}); a.code != http.StatusOK {
		t.Fatalf("unmatched pass: %d %+v", a.code, a.problem)
	}
	if a := f.do(call{method: "DELETE", path: "/v1/off/1"}); a.code != http.StatusOK {
		t.Fatalf("off route: %d %+v", a.code, a.problem)
	}
	c := rpDial(t, rpAddr(f))
	c.write("GET /ws/lobby HTTP/1.1\r\nHost: app.local\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	if resp, _ := c.read("GET"); resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("allowed upgrade: %d", resp.StatusCode)
	}
	// A plain read on the same sidecar is not counted.
	if a := f.do(call{method: "GET", path: "/v1/items/1"}); a.code != http.StatusOK {
		t.Fatalf("read: %d", a.code)
	}
	f.wantCoverage(map[string]float64{
		"unmatched/skipped/skipped": 2,
		"off/skipped/skipped":       1,
		"upgrade/skipped/skipped":   1,
	})
	if n := f.coverageBugs(); n != 0 {
		t.Fatalf("%d coverage BUG logs: configured unchecked paths are not bugs", n)
	}
}

// TestCoverageRefusedDialNotCounted: with the backend down (a closed
// listener), a protected write and a shadow write both fail to dial:
// nothing reached the backend and nothing is counted.
func TestCoverageRefusedDialNotCounted(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	f := newFixture(t, withBackend(dead.URL))
	l := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: "1", body: "v1"}).expect(t, http.StatusBadGateway, fencegate.CodeBackendUnavailable)
	f.do(f.shadowCall("1", "1", "one")).expect(t, http.StatusBadGateway, fencegate.CodeBackendUnavailable)
	f.wantCoverage(nil)
}
