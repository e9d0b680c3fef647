package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// A round is driven by a script: a list of input events drawn from the
// round's seed. Everything else (network deliveries, retries, answers, the
// operator's reconciliation) follows from the script deterministically.
// Shrinking removes events from the script, so every event must make sense
// without the others: a write of an owner that holds nothing is skipped, a
// restore without a snapshot does nothing.

// kind is what an input event does.
type kind uint8

const (
	// Absolute events: At is the virtual time since the round's start.
	evAcquire   kind = iota + 1 // an owner asks for the lease
	evCrash                     // a sidecar process dies and restarts
	evSnapshot                  // the registry's state is saved
	evRestore                   // the registry is put back to the last snapshot
	evAttack                    // an attacker sends a write
	evStoreSave                 // the fenced store's state is saved (a backup, an RDB)
	evStoreLoss                 // the fenced store is emptied, or put back to the save
	evRotate                    // a step of a signing-key rotation
	// Owner-relative events: the owner runs them in order once it holds
	// the lease; At is the gap after its previous step.
	evWrite
	evRenew
	evRelease
)

func (k kind) String() string {
	return [...]string{"?", "acquire", "crash", "snapshot", "restore", "attack", "store-save", "store-loss", "rotate", "write", "renew", "release"}[k]
}

func (k kind) relative() bool { return k >= evWrite }

// backendFault is what happens to a forwarded write at the backend.
type backendFault uint8

const (
	bfNone      backendFault = iota
	bfDial                   // connection refused: nothing sent, nothing applied
	bfLostAck                // applied, answer lost
	bf5xxAfter               // applied, answered 503
	bf5xxBefore              // not applied, answered 500
	bfCrash                  // applied, then the sidecar dies before its commit
	bfLate                   // received; the forward times out; applied later
)

func (f backendFault) String() string {
	return [...]string{"", "dial-refused", "lost-ack", "5xx-after-apply", "5xx-before-apply", "sidecar-crash-mid-forward", "applied-after-the-timeout"}[f]
}

// netPlan is what the simulated network does to one exchange.
type netPlan struct {
	ReqDelay, RespDelay time.Duration
	ReqDrop, RespDrop   bool
	// Dup delivers the request a second time, DupDelay after the first.
	Dup      bool
	DupDelay time.Duration
	// StatusDrop loses the sidecar's registry status read (registry mode).
	StatusDrop bool
}

// event is one input event of a round's script.
type event struct {
	ID      int
	Kind    kind
	At      time.Duration
	Owner   int
	Replica int
	Net     netPlan
	Fault   backendFault
	Attack  Fault
	// Delay is the attacker's delay between capturing a grant and using it
	// (revoked).
	Delay time.Duration
	// Zombie: a write the owner sends after its release.
	Zombie bool
	// Skip: before this write the owner sends the segment after it.
	Skip bool
	// Conflict: once this write is accepted, the owner sends the same
	// segment again with another payload.
	Conflict bool
	// StoreMid: the fenced store is lost (or restored, Restore) while this
	// write is at the backend, between the store's Begin and Commit.
	StoreMid bool
	// Restore: a store loss puts back the last save instead of emptying.
	Restore bool
	// Late is how long after it received the write the backend applies
	// it (bfLate): at or past the sidecar's timeout, less than
	// maxApplyDelay after it (before the quiet time).
	Late time.Duration
	// Step is a rotation's step: 1 the bundle gains the new key, 2 the
	// registry restarts signing with it, 3 the bundle drops the old key.
	Step int
}

func (e event) String() string {
	s := fmt.Sprintf("#%d %s", e.ID, e.Kind)
	if e.Kind.relative() {
		s += fmt.Sprintf(" owner=%s gap=%s", ownerName(e.Owner), e.At)
	} else {
		s += fmt.Sprintf(" at=%s", e.At)
		if e.Kind == evAcquire {
			s += " owner=" + ownerName(e.Owner)
		}
	}
	if e.Kind == evWrite || e.Kind == evAttack || e.Kind == evCrash {
		s += fmt.Sprintf(" replica=%d", e.Replica)
	}
	if e.Kind == evAttack {
		s += " attack=" + string(e.Attack)
		if e.Delay > 0 {
			s += fmt.Sprintf(" delay=%s", e.Delay)
		}
	}
	if e.Fault != bfNone {
		s += " backend=" + e.Fault.String()
	}
	if e.Late > 0 {
		s += fmt.Sprintf(" applied-after=%s", e.Late)
	}
	if e.Zombie {
		s += " zombie (after the release)"
	}
	if e.Skip {
		s += " skip (sends the next segment first)"
	}
	if e.Conflict {
		s += " conflict (then resends it with another payload)"
	}
	if e.StoreMid {
		s += " store-lost-mid-forward"
	}
	if (e.Kind == evStoreLoss || e.StoreMid) && e.Restore {
		s += " restore-to-save"
	} else if e.Kind == evStoreLoss {
		s += " emptied"
	}
	if e.Kind == evRotate {
		s += " step=" + [...]string{"?", "bundle-adds-new-key", "registry-signs-with-new-key", "bundle-drops-old-key", "bundle-gains-the-attackers-key"}[e.Step]
	}
	n := e.Net
	if n.ReqDelay > 0 || n.RespDelay > 0 {
		s += fmt.Sprintf(" net=%s/%s", n.ReqDelay, n.RespDelay)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{n.ReqDrop, "drop-request"}, {n.RespDrop, "drop-answer"}, {n.StatusDrop, "drop-status-read"}} {
		if f.on {
			s += " " + f.name
		}
	}
	if n.Dup {
		s += fmt.Sprintf(" duplicate+%s", n.DupDelay)
	}
	return s
}

func ownerName(i int) string { return string(rune('A' + i)) }

// roundConfig is the part of a round drawn before its script: how the
// sidecars and the backend are configured.
type roundConfig struct {
	Proof      bool // status mode proof (else registry)
	Replicas   int
	Idempotent bool
	TTL        time.Duration
	MaxAge     time.Duration
	// Effects: the backend answers an effect query (GET of an operation
	// ID: 200 with the stored answer when it applied it, 404 when it has
	// not), which an operator can ask; EffectQuery: the route declares it,
	// so the sidecars' reconcile loop asks it too.
	Effects, EffectQuery bool
	// Reconcile is the sidecars' reconcile.interval.
	Reconcile time.Duration
	// Retention: retention.maxPerResource and retention.maxAge, and
	// retention.interval (Compact) of the sidecars.
	KeepReceipts int
	KeepFor      time.Duration
	Compact      time.Duration
	// ClockSkew is trust.clockSkew; Offsets are each replica's clock
	// offset from the registry's (within ClockSkew, but for FaultSkew).
	ClockSkew time.Duration
	Offsets   []time.Duration
	// OperatorDelay is how long after an outcome became unknown the
	// operator first looks (a page answered), and then again as often.
	OperatorDelay time.Duration
	// SDK says which owners are SDK workers (client.Holder), not scripts.
	SDK [4]bool
}

func (c roundConfig) String() string {
	mode := "registry"
	if c.Proof {
		mode = "proof"
	}
	var sdk []string
	for i, on := range c.SDK {
		if on {
			sdk = append(sdk, ownerName(i))
		}
	}
	return fmt.Sprintf("status=%s maxAge=%s ttl=%s replicas=%d idempotencyKey=%v effects=%v effectQuery=%v reconcile=%s retention=%d/%s/%s clockSkew=%s offsets=%v operator=%s sdk=%v",
		mode, c.MaxAge, c.TTL, c.Replicas, c.Idempotent, c.Effects, c.EffectQuery, c.Reconcile, c.KeepReceipts, c.KeepFor, c.Compact, c.ClockSkew, c.Offsets, c.OperatorDelay, sdk)
}

// script is a round's configuration and input events.
type script struct {
	Config roundConfig
	Events []event
}

func (s script) without(drop func(int) bool) script {
	out := script{Config: s.Config}
	for i, e := range s.Events {
		if !drop(i) {
			out.Events = append(out.Events, e)
		}
	}
	return out
}

// Model constants (virtual time).
const (
	backendTimeout = time.Second // the sidecar's backend.timeout: a marker lasts it + 5 s
	// maxApplyDelay is the sidecars' backend.maxApplyDelay: how long
	// after the forward's deadline the backend may still apply a write it
	// received (a late apply, FaultLate, lands before it). "Not applied"
	// is settled from the quiet time on (the forward's deadline plus
	// this).
	maxApplyDelay = 2 * time.Second
	busyWait      = 50 * time.Millisecond
	answerTimeout = time.Second // a worker waits this long for an answer before retrying
	pollInterval  = 250 * time.Millisecond
	horizon       = 60 * time.Second // nothing starts after this
)

// generate draws round r's script from rng.
func generate(rng *rand.Rand, faults []Fault, maxReplicas int, modes []bool) script {
	has := func(f Fault) bool { return slices.Contains(faults, f) }
	cfg := roundConfig{
		Proof:      modes[rng.IntN(len(modes))],
		Replicas:   1 + rng.IntN(maxReplicas),
		Idempotent: rng.IntN(2) == 0,
		TTL:        time.Duration(500+rng.IntN(1500)) * time.Millisecond,
	}
	// A route's status.maxAge between half and one and a half TTLs: writes
	// a TTL/3 apart mostly carry a fresh enough proof, so STATUS_STALE is
	// what pauses and long delays earn, not every other write.
	cfg.MaxAge = cfg.TTL/2 + time.Duration(rng.IntN(int(cfg.TTL/time.Millisecond)))*time.Millisecond
	cfg.Effects = rng.IntN(3) != 0
	cfg.EffectQuery = cfg.Effects && rng.IntN(2) == 0
	cfg.Reconcile = time.Duration(1+rng.IntN(5)) * time.Second
	cfg.KeepReceipts = 2 + rng.IntN(3)
	cfg.KeepFor = time.Duration(5+rng.IntN(30)) * time.Second
	cfg.Compact = time.Duration(2+rng.IntN(7)) * time.Second
	cfg.ClockSkew = time.Duration(50+rng.IntN(250)) * time.Millisecond
	for range cfg.Replicas {
		cfg.Offsets = append(cfg.Offsets, time.Duration(rng.Int64N(int64(2*cfg.ClockSkew/time.Millisecond)+1))*time.Millisecond-cfg.ClockSkew)
	}
	if (has(FaultSkew) || has(FaultSkewLag)) && rng.IntN(3) == 0 {
		// One replica beyond the configured tolerance. Ahead, or behind in
		// registry mode (where the registry judges); in proof mode behind
		// only with FaultSkewLag (the time bound's case) and ahead only
		// with FaultSkew.
		off := cfg.ClockSkew + time.Duration(1+rng.IntN(2000))*time.Millisecond
		behind := rng.IntN(2) == 0
		switch {
		case cfg.Proof && !has(FaultSkewLag):
			behind = false
		case cfg.Proof && !has(FaultSkew):
			behind = true
		}
		if behind {
			off = -off
		}
		cfg.Offsets[rng.IntN(cfg.Replicas)] = off
	}
	cfg.OperatorDelay = time.Duration(1+rng.IntN(10)) * time.Minute
	for i := range cfg.SDK {
		cfg.SDK[i] = rng.IntN(3) == 0
	}
	sc := script{Config: cfg}
	add := func(e event) {
		e.ID = len(sc.Events) + 1
		sc.Events = append(sc.Events, e)
	}
	netFor := func(request bool) netPlan {
		var n netPlan
		if !has(FaultNet) {
			return n
		}
		n.ReqDelay = time.Duration(rng.IntN(40)) * time.Millisecond
		n.RespDelay = time.Duration(rng.IntN(40)) * time.Millisecond
		if rng.IntN(12) == 0 {
			n.ReqDelay += time.Duration(rng.IntN(1500)) * time.Millisecond // a long delay: reordering
		}
		n.ReqDrop = rng.IntN(15) == 0
		n.RespDrop = rng.IntN(12) == 0
		if request {
			n.Dup = rng.IntN(10) == 0
			n.DupDelay = time.Duration(rng.IntN(2000)) * time.Millisecond
			n.StatusDrop = !cfg.Proof && rng.IntN(20) == 0
		}
		return n
	}
	replica := func() int { return rng.IntN(cfg.Replicas) }
	storeLoss := has(FaultStoreLoss) && rng.IntN(3) == 0
	storeMid := storeLoss && rng.IntN(2) == 0
	var writes []int // indexes of the owners' writes in sc.Events

	owners := 2
	if rng.IntN(4) == 0 {
		owners = 3
	}
	start := time.Duration(0)
	for o := range owners {
		add(event{Kind: evAcquire, Owner: o, At: start, Net: netFor(false)})
		start += time.Duration(rng.IntN(int(2*cfg.TTL/time.Millisecond))) * time.Millisecond
		n := 1 + rng.IntN(3)
		for w := range n {
			gap := time.Duration(20+rng.IntN(int(cfg.TTL/3/time.Millisecond))) * time.Millisecond
			if w > 0 && has(FaultPause) && rng.IntN(6) == 0 {
				gap = cfg.TTL + time.Duration(rng.IntN(2000))*time.Millisecond // paused past the TTL; sends anyway
			} else if w > 0 && rng.IntN(2) == 0 {
				add(event{Kind: evRenew, Owner: o, At: gap / 2, Net: netFor(false)})
				gap /= 2
			}
			e := event{Kind: evWrite, Owner: o, At: gap, Replica: replica(), Net: netFor(true)}
			e.Skip = has(FaultSkip) && rng.IntN(10) == 0
			e.Conflict = has(FaultConflict) && rng.IntN(10) == 0
			switch r := rng.IntN(30); {
			case has(FaultLostAck) && r < 2:
				e.Fault = bfLostAck
			case has(FaultLostAck) && r == 2:
				e.Fault = bf5xxAfter
			case has(FaultLostAck) && r == 3:
				e.Fault = bf5xxBefore
			case has(FaultDial) && r == 4:
				e.Fault = bfDial
			case has(FaultCrash) && r == 5:
				e.Fault = bfCrash
			case has(FaultLate) && r >= 6 && r < 9:
				e.Fault = bfLate
				e.Late = backendTimeout + time.Duration(rng.IntN(int(maxApplyDelay/time.Millisecond)))*time.Millisecond
			}
			writes = append(writes, len(sc.Events))
			add(e)
		}
		if rng.IntN(10) < 7 {
			zombie := has(FaultZombie) && rng.IntN(3) == 0
			if zombie {
				// A fresh proof first, so the late write falls in the window.
				add(event{Kind: evRenew, Owner: o, At: time.Duration(rng.IntN(50)) * time.Millisecond})
			}
			add(event{Kind: evRelease, Owner: o, At: time.Duration(rng.IntN(200)) * time.Millisecond, Net: netFor(false)})
			if zombie {
				add(event{Kind: evWrite, Owner: o, Zombie: true, Replica: replica(), Net: netFor(true),
					At: time.Duration(rng.IntN(int(3*cfg.MaxAge/2/time.Millisecond))) * time.Millisecond})
			}
		}
	}
	span := start + 2*cfg.TTL
	at := func() time.Duration {
		return time.Duration(rng.Int64N(int64(span/time.Millisecond)+1)) * time.Millisecond
	}
	if has(FaultCrash) && rng.IntN(4) == 0 {
		add(event{Kind: evCrash, At: at(), Replica: replica()})
	}
	// A round restores the registry or loses the store, not both: the
	// registry's anchors are the store's only outside copy, and a store
	// and its anchors that lost the same writes are caught by nothing
	// (docs/design.md, section 16: the losses not caught).
	if has(FaultRestore) && !storeLoss && rng.IntN(5) == 0 {
		t := at()
		add(event{Kind: evSnapshot, At: t})
		rt := t + time.Duration(rng.IntN(int(span/time.Millisecond)+1))*time.Millisecond
		add(event{Kind: evRestore, At: rt})
		// A worker that acquires before the operator has recovered gets a
		// fence the registry already issued.
		add(event{Kind: evAcquire, Owner: 3, At: rt + time.Duration(rng.IntN(800))*time.Millisecond})
		for range 1 + rng.IntN(2) {
			add(event{Kind: evWrite, Owner: 3, At: time.Duration(rng.IntN(100)) * time.Millisecond, Replica: replica(), Net: netFor(true)})
		}
	}
	if storeLoss {
		restore := rng.IntN(3) != 0
		if restore {
			// The store saves its state now and then (RDB snapshots); a
			// restore puts back the last save before the loss.
			every := time.Duration(300+rng.IntN(1700)) * time.Millisecond
			for t := every; t < span+5*time.Second; t += every {
				add(event{Kind: evStoreSave, At: t})
			}
		}
		if storeMid {
			// The loss happens while one of the writes is at the backend.
			w := &sc.Events[writes[rng.IntN(len(writes))]]
			w.StoreMid, w.Restore = true, restore
		} else {
			add(event{Kind: evStoreLoss, At: at(), Restore: restore})
		}
	}
	if has(FaultRotate) && rng.IntN(10) == 0 {
		t := at()
		for step := 1; step <= 3; step++ {
			add(event{Kind: evRotate, At: t, Step: step})
			t += time.Duration(rng.IntN(int(2*cfg.TTL/time.Millisecond))) * time.Millisecond
		}
	}
	if has(FaultKeyAdd) && rng.IntN(10) == 0 {
		// Someone who can write the bundle file adds the attacker's key;
		// the attacker then signs grants with it.
		t := at()
		add(event{Kind: evRotate, At: t, Step: 4})
		for range 1 + rng.IntN(2) {
			add(event{Kind: evAttack, At: t + trustReload + time.Duration(rng.IntN(int(span/time.Millisecond)+1))*time.Millisecond,
				Replica: replica(), Attack: FaultKeyAdd, Net: netFor(true)})
		}
	}
	var attacks []Fault
	for _, f := range []Fault{FaultForged, FaultTampered, FaultCross, FaultRevoked} {
		if has(f) {
			attacks = append(attacks, f)
		}
	}
	if len(attacks) > 0 && rng.IntN(3) == 0 {
		for range 1 + rng.IntN(2) {
			add(event{Kind: evAttack, At: at(), Replica: replica(), Attack: attacks[rng.IntN(len(attacks))],
				Delay: time.Duration(rng.IntN(int(2*cfg.MaxAge/time.Millisecond))) * time.Millisecond, Net: netFor(true)})
		}
	}
	return sc
}
