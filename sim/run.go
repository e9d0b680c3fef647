package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// Sabotage breaks one part on purpose, to prove the gate can fail. Never
// set outside tests of the simulation itself.
type Sabotage string

const (
	// SabotageNone runs the real parts as they are.
	SabotageNone Sabotage = ""
	// SabotageShadow runs the sidecars' route in shadow mode: what enforce
	// would refuse is forwarded.
	SabotageShadow Sabotage = "shadow"
	// SabotageStatusLies makes the registry status source answer HELD
	// (with a proof signed by the registry's key) for leases that ended.
	SabotageStatusLies Sabotage = "status-lies"
	// SabotageTrustForger makes the sidecars trust the attacker's key.
	SabotageTrustForger Sabotage = "trust-forger"
	// SabotageReadWrites makes the store's read of a record pause the
	// resource: a refusal that only reads the store then changes it.
	SabotageReadWrites Sabotage = "read-writes"
	// SabotageNoReconcile stops every way an unknown outcome is settled
	// but a worker's own idempotent retry: the sidecars' reconcile loop
	// does nothing and the operator never looks.
	SabotageNoReconcile Sabotage = "no-reconcile"
	// SabotageConflictReplays makes the store take a segment sent again
	// with another payload for a replay of the accepted one (it compares
	// fence and segment, not the payload).
	SabotageConflictReplays Sabotage = "conflict-replays"
	// SabotageReleaseIgnored makes the registry answer a release but keep
	// the lease until its TTL runs out: the next owner waits for it.
	SabotageReleaseIgnored Sabotage = "release-ignored"
	// SabotageSDKSlowClock gives the SDK workers a clock that runs at half
	// the rate: their Holder's local deadline, measured on it, passes
	// after the lease has expired (the safety margin absorbs small rate
	// differences, not this).
	SabotageSDKSlowClock Sabotage = "sdk-slow-clock"
	// SabotageNotQuiet makes the store settle "not applied" before the
	// mutation's quiet time (as if every effect query closed the
	// operation): a late apply then lands after the next owner's writes.
	SabotageNotQuiet Sabotage = "not-quiet"
	// SabotageFilePins makes the store's trust pins say whatever the
	// bundle file says (every key of the file pinned): a key added to the
	// file is trusted at the next reload, as before controlled rotation.
	SabotageFilePins Sabotage = "file-pins"
	// SabotageUnanchored runs the sidecars on the shared store without its
	// outside anchor: a store emptied or put back is taken as it is.
	SabotageUnanchored Sabotage = "unanchored"
	// SabotageNoTimeBound makes the sidecars judge proof windows by their
	// own clock alone, without the time the registry's proofs and answers
	// teach (authn.TimeBound): a replica that lags takes a proof after its
	// window closed.
	SabotageNoTimeBound Sabotage = "no-time-bound"
)

// Sabotages lists every sabotage, in a fixed order.
func Sabotages() []Sabotage {
	return []Sabotage{SabotageShadow, SabotageStatusLies, SabotageTrustForger, SabotageReadWrites, SabotageNoReconcile, SabotageConflictReplays, SabotageReleaseIgnored,
		SabotageSDKSlowClock, SabotageNotQuiet, SabotageFilePins, SabotageUnanchored, SabotageNoTimeBound}
}

// Options configure a run.
type Options struct {
	Rounds int
	Seed   uint64
	// Faults are the fault kinds rounds draw from (nil: none).
	Faults []Fault
	// Replicas bounds the sidecar replicas sharing a round's store (1..).
	Replicas int
	// Modes are the status modes rounds draw from: "proof", "registry"
	// (empty: both).
	Modes []string
	// Workers run rounds in parallel (0: GOMAXPROCS). Rounds are
	// independent and seeded by their index, so the result does not
	// depend on it.
	Workers int
	// History hashes every round's event history into Report.HistoryHash
	// (slower: every step is formatted).
	History bool
	// Progress, when set, gets a line every ~5% of the rounds.
	Progress io.Writer
	// Clock times the progress lines (default clock.Real()).
	Clock    clock.Clock
	Sabotage Sabotage
	// MaxShrinkRuns bounds the re-runs spent shrinking a failing round
	// (default 400).
	MaxShrinkRuns int
	// Postgres, when set, is the DSN of a PostgreSQL database the rounds'
	// shared fenced stores run on (store/postgres, each round in a schema
	// of its own, created and dropped by the round) instead of
	// store/memory. The decisions are the same, and so is a seed's
	// history.
	Postgres string
	// Etcd, when set, are the client URLs of an etcd cluster (run with
	// --max-txn-ops 1024) the rounds' registries run on (registry/etcd,
	// each round in a keyspace of its own, deleted at its end) instead of
	// registry/memory. The decisions are the same; a registry restore is
	// the keyspace put back to a save, which the running registry meets by
	// itself (its watermark: an epoch bump and a fence floor), so only
	// rounds without a restore have the same history as on
	// registry/memory.
	Etcd []string
}

// Report is what a run measured.
type Report struct {
	Rounds, Attempted, Accepted         int
	Stale, Forged, AuthChanged, Skipped int
	Gaps, Regressions, DataMismatch     int
	// Conflicts counts a segment applied again with another payload.
	Conflicts int
	// MaxUnknown is the longest virtual time an outcome that evidence
	// could settle stayed UNKNOWN; Unknowns counts the unknown outcomes,
	// NoEvidence those no evidence an operator has could settle, left
	// UNKNOWN at the end of their round.
	MaxUnknown           time.Duration
	Unknowns, NoEvidence int
	// UnknownOver counts the outcomes evidence could settle that stayed
	// UNKNOWN longer than MaxUnknownBudget.
	UnknownOver int
	// SDKStale counts writes an SDK worker sent after its lease expired or
	// was released (the SDK's own promise).
	SDKStale int
	// Codes counts the sidecars' answers by problem code (or status).
	Codes map[string]int
	// Seen counts what the modelled parts did (effect-query settlements,
	// compactions, reloads, SDK workers, late applies ...): proof that
	// they ran, not invariants.
	Seen                    map[string]int
	HandoffP50, HandoffP99  time.Duration
	HandoffP999, HandoffMax time.Duration
	// HandoffOver counts hand-offs over their own budget (at most 1% may
	// be), HandoffBlocked those that waited for an unknown outcome.
	HandoffOver, HandoffBlocked int
	Handoffs                    int
	// HistoryHash is the SHA-256 of every round's history, in round order
	// (with Options.History).
	HistoryHash string
	// Failure describes the first failing round, if any.
	Failure *Failure
}

// Failure is the first failing round, with its history and the shrunk one.
type Failure struct {
	Round      int
	Violations []string
	// Config is the round's configuration (status mode, TTL, offsets ...).
	Config  string
	Events  int
	History []string
	// Shrunk is the shortest failing script found and its history.
	ShrunkEvents  []string
	ShrunkHistory []string
}

// roundSeed is round i's seed: rounds are independent and replay alone.
func roundSeed(seed uint64, i int) uint64 { return mix(seed, uint64(i)+1<<32) }

// scriptOf draws round i's script.
func scriptOf(o Options, i int) script {
	s := roundSeed(o.Seed, i)
	rng := rand.New(rand.NewPCG(s, s>>1|1))
	var modes []bool
	for _, m := range o.Modes {
		modes = append(modes, m == "proof")
	}
	if len(modes) == 0 {
		modes = []bool{true, false}
	}
	return generate(rng, o.Faults, max(o.Replicas, 1), modes)
}

func (o *Options) validate() error {
	if o.Rounds < 1 {
		return fmt.Errorf("%w: rounds must be at least 1", ErrOptions)
	}
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	for _, m := range o.Modes {
		if m != "proof" && m != "registry" {
			return fmt.Errorf("%w: status mode %q (want proof or registry)", ErrOptions, m)
		}
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.MaxShrinkRuns <= 0 {
		o.MaxShrinkRuns = 400
	}
	return nil
}

// Run runs the simulation. An error means it could not run (options,
// setup); a run whose invariants broke returns a Report with Gate() FAIL.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	m, err := materialsOf(o, o.Workers)
	if err != nil {
		return nil, err
	}
	defer m.close()

	results := make([]roundResult, o.Rounds)
	errs := make([]error, o.Rounds)
	var next, done int
	var mu sync.Mutex
	start := o.Clock.Now()
	step := max(o.Rounds/20, 1)
	var wg sync.WaitGroup
	for range min(o.Workers, o.Rounds) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= o.Rounds || ctx.Err() != nil {
					return
				}
				results[i], errs[i] = runRound(m, scriptOf(o, i), roundSeed(o.Seed, i), o.Sabotage, false, o.History)
				results[i].Handoffs = slices.Clip(results[i].Handoffs)
				mu.Lock()
				done++
				if o.Progress != nil && (done%step == 0 || done == o.Rounds) {
					progress(o.Progress, done, o.Rounds, clock.Since(o.Clock, start))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep := &Report{Rounds: o.Rounds, Codes: map[string]int{}, Seen: map[string]int{}}
	soft := -1 // the first round with a hand-off over its budget
	var hs []time.Duration
	hist := sha256.New()
	for i := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("round %d: %w", i, errs[i])
		}
		r := &results[i]
		rep.Attempted += r.Attempted
		rep.Accepted += r.Accepted
		rep.Stale += r.Stale
		rep.Forged += r.Forged
		rep.AuthChanged += r.AuthChanged
		rep.Skipped += r.Skipped
		rep.Gaps += r.Gaps
		rep.Regressions += r.Regressions
		rep.DataMismatch += r.DataMismatch
		rep.Conflicts += r.Conflicts
		rep.MaxUnknown = max(rep.MaxUnknown, r.MaxUnknown)
		rep.Unknowns += r.Unknowns
		rep.UnknownOver += r.UnknownOver
		rep.SDKStale += r.SDKStale
		rep.HandoffOver += r.HandoffOver
		rep.HandoffBlocked += r.HandoffBlocked
		rep.NoEvidence += r.NoEvidence
		for k, v := range r.Codes {
			rep.Codes[k] += v
		}
		for k, v := range r.Seen {
			rep.Seen[k] += v
		}
		hs = append(hs, r.Handoffs...)
		if r.hist != nil {
			hist.Write(r.hist.Sum(nil))
		}
		if r.failed() && rep.Failure == nil {
			f, err := explain(m, o, i, false)
			if err != nil {
				return nil, err
			}
			rep.Failure = f
		}
		if len(r.Soft) > 0 && soft < 0 {
			soft = i
		}
	}
	if o.History {
		rep.HistoryHash = "sha256:" + hex.EncodeToString(hist.Sum(nil))
	}
	slices.Sort(hs)
	rep.Handoffs = len(hs)
	rep.HandoffP50, rep.HandoffP99 = quantile(hs, 0.50), quantile(hs, 0.99)
	rep.HandoffP999, rep.HandoffMax = quantile(hs, 0.999), quantile(hs, 1)
	if rep.Failure == nil && rep.Gate() != "" && soft >= 0 {
		// The gate fails on hand-offs over their budget: show the first.
		f, err := explain(m, o, soft, true)
		if err != nil {
			return nil, err
		}
		rep.Failure = f
	}
	return rep, nil
}

// materialsOf is the run's materials for o, on its PostgreSQL (with a
// connection for each of workers) when o names one.
func materialsOf(o Options, workers int) (*materials, error) {
	m, err := newMaterials(o.Seed)
	if err != nil {
		return nil, err
	}
	if err := m.usePostgres(o.Postgres, workers); err != nil {
		m.close()
		return nil, err
	}
	if err := m.useEtcd(o.Etcd); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[min(i, len(sorted)-1)]
}

func progress(w io.Writer, done, total int, elapsed time.Duration) {
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	eta := time.Duration(float64(total-done)/max(rate, 1e-9)) * time.Second
	fmt.Fprintf(w, "sim: %d/%d rounds (%3.0f%%), %.0f rounds/s, ETA %s\n", done, total, 100*float64(done)/float64(total), rate, eta.Round(time.Second))
}

// explain replays failing round i with its history, then shrinks it;
// with soft, the round's finding is a hand-off over its budget.
func explain(m *materials, o Options, i int, soft bool) (*Failure, error) {
	sc := scriptOf(o, i)
	seed := roundSeed(o.Seed, i)
	res, err := runRound(m, sc, seed, o.Sabotage, true, false)
	if err != nil {
		return nil, err
	}
	f := &Failure{Round: i, Violations: res.Violations, Events: len(sc.Events), History: res.History, Config: sc.Config.String()}
	if soft {
		f.Violations = res.Soft
	}
	small, err := shrink(sc, o.MaxShrinkRuns, func(s script) (bool, error) {
		r, err := runRound(m, s, seed, o.Sabotage, false, false)
		if soft {
			return len(r.Soft) > 0, err
		}
		return r.failed(), err
	})
	if err != nil {
		return nil, err
	}
	sres, err := runRound(m, small, seed, o.Sabotage, true, false)
	if err != nil {
		return nil, err
	}
	for _, e := range small.Events {
		f.ShrunkEvents = append(f.ShrunkEvents, e.String())
	}
	f.ShrunkHistory = sres.History
	return f, nil
}

// shrink is delta debugging over the script's events: it removes chunks,
// halving their size, while the round still fails, within a budget of
// re-runs. The result still fails and is no longer than sc.
func shrink(sc script, budget int, fails func(script) (bool, error)) (script, error) {
	runs := 0
	for chunk := max(len(sc.Events)/2, 1); chunk >= 1 && runs < budget; {
		removed := false
		for start := 0; start < len(sc.Events) && runs < budget; {
			end := min(start+chunk, len(sc.Events))
			cand := sc.without(func(i int) bool { return i >= start && i < end })
			runs++
			bad, err := fails(cand)
			if err != nil {
				return sc, err
			}
			if bad {
				sc, removed = cand, true
				continue // the same start now names the next events
			}
			start = end
		}
		if !removed {
			if chunk == 1 {
				break
			}
			chunk /= 2
		}
	}
	return sc, nil
}

// Replay runs round i of the run o describes, alone, and returns its
// history and the invariants it broke (none when it passes).
func Replay(o Options, i int) (history, violations []string, err error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	if i < 0 {
		return nil, nil, fmt.Errorf("%w: round %d", ErrOptions, i)
	}
	m, err := materialsOf(o, 1)
	if err != nil {
		return nil, nil, err
	}
	defer m.close()
	sc := scriptOf(o, i)
	res, err := runRound(m, sc, roundSeed(o.Seed, i), o.Sabotage, true, false)
	if err != nil {
		return nil, nil, err
	}
	history = append(history, "config "+sc.Config.String())
	for _, e := range sc.Events {
		history = append(history, "script "+e.String())
	}
	return append(history, res.History...), res.Violations, nil
}
