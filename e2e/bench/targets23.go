package main

import "fmt"

// Issue 23's targets (point 4, the PostgreSQL store's performance),
// judged as issue 22's are (targets.go). The sidecar on store/postgres
// is held to the Redis store's targets, the other store shared by
// replicas over the network: >= 0.5x the plain proxy at 64 workers,
// added p99 <= 3 ms at 1,000 req/s, proxy CPU <= 0.1 core-s per 1,000
// requests above the plain proxy's; judged on fg-postgres-proof-EdDSA
// with fg-postgres-registry-EdDSA shown. Library mode (library.go):
// added latency per transaction <= 0.3 ms at p50 and <= 1 ms at p99 on
// loopback.
func issue23Targets() []targetSpec {
	return []targetSpec{
		{ID: "postgres-x64", Text: "PostgreSQL store >= 0.5x plain at 64 workers (the Redis store's target)", Kind: kindRatio, Load: "closed-64",
			Judged: armPgProof, Shown: []string{armPgRegistry}, Op: atLeast, Threshold: 0.5, Unit: "× plain"},
		{ID: "postgres-p99-1k", Text: "PostgreSQL store: added p99 <= 3 ms at 1,000 req/s (the Redis store's target)", Kind: kindAddedP99, Load: openFixedLoad,
			Judged: armPgProof, Shown: []string{armPgRegistry}, Op: atMost, Threshold: 3, Unit: "ms"},
		{ID: "proxy-cpu-postgres", Text: "proxy CPU <= 0.1 core-s per 1,000 requests above the plain proxy's own (PostgreSQL store, at 1,000 req/s)",
			Kind: kindProxyCPUOverPlain, Load: openFixedLoad, Judged: armPgProof, Shown: []string{armPgRegistry}, Op: atMost, Threshold: 0.1, Unit: "core-s/1k"},
		{ID: "library-p50", Text: "library mode: added latency per transaction p50 <= 0.3 ms on loopback", Kind: kindLibraryAddedP50,
			Judged: libraryArm, Op: atMost, Threshold: 0.3, Unit: "ms"},
		{ID: "library-p99", Text: "library mode: added latency per transaction p99 <= 1 ms on loopback", Kind: kindLibraryAddedP99,
			Judged: libraryArm, Op: atMost, Threshold: 1, Unit: "ms"},
	}
}

// measureLibrary is the library phase's added latency at percentile
// name (pick reads it): per repetition the fenced transactions' minus
// the plain ones'. Not measured when the phase did not run or measured
// no fence; a MISS when any transaction failed.
func measureLibrary(lib *libraryResult, name string, pick func(latencySummary) float64) measurement {
	switch {
	case lib == nil:
		return notMeasured("library phase not run (-arms does not match %s)", libraryArm)
	case lib.NotMeasured != "":
		return notMeasured("%s", lib.NotMeasured)
	}
	var vs []float64
	failed, first := 0, ""
	for _, r := range lib.Reps {
		vs = append(vs, r.added(pick))
		if r.PlainErrors+r.FencedErrors > 0 {
			failed++
			first = r.FirstError
		}
	}
	v := spreadOf(vs)
	switch {
	case failed > 0:
		return missed(v, "%d/%d repetitions with failed transactions: %s", failed, len(lib.Reps), first)
	case v.N == 0:
		return notMeasured("no repetition measured both kinds of transaction")
	}
	return measurement{value: v, why: fmt.Sprintf("%s of %s minus without, %d transactions of each per repetition", name, lib.Fence, lib.Iterations)}
}
