package sim

import (
	"fmt"
	"slices"
	"strings"
)

// Fault is a kind of fault or attack a round may draw.
type Fault string

// The fault kinds (--faults selects among them; all by default).
const (
	// FaultNet: requests and answers delayed (so reordered), dropped and
	// duplicated between workers, the registry and the sidecars.
	FaultNet Fault = "net"
	// FaultPause: an owner stops past its lease's TTL, then sends anyway.
	FaultPause Fault = "pause"
	// FaultLostAck: the backend applies a write and its answer is lost
	// (or it answers 5xx), so the sidecar marks the mutation UNKNOWN.
	FaultLostAck Fault = "lostack"
	// FaultDial: the backend refuses the connection (nothing applied).
	FaultDial Fault = "dial"
	// FaultCrash: a sidecar process dies, between requests or in the middle
	// of a forward, and a new one starts over the same store.
	FaultCrash Fault = "crash"
	// FaultRestore: the registry is restored from an older snapshot and
	// issues fences again; an operator recovers (epoch bump, fence floor,
	// resume).
	FaultRestore Fault = "restore"
	// FaultForged: a grant signed by a key the sidecar does not trust.
	FaultForged Fault = "forged"
	// FaultTampered: a real grant whose payload bytes were changed.
	FaultTampered Fault = "tampered"
	// FaultCross: a valid grant (and proof) for another resource.
	FaultCross Fault = "cross"
	// FaultRevoked: a grant replayed after the registry's epoch was bumped.
	FaultRevoked Fault = "revoked"
	// FaultZombie: an owner that released its lease sends one more segment
	// anyway, with the freshest proof it has (the early-release window of
	// proof mode: only the fence can refuse it once the next owner wrote).
	FaultZombie Fault = "zombie"
	// FaultSkip: an owner sends a segment out of order, skipping one.
	FaultSkip Fault = "skip"
)

// AllFaults lists every fault kind, in a fixed order.
func AllFaults() []Fault {
	return []Fault{FaultNet, FaultPause, FaultLostAck, FaultDial, FaultCrash, FaultRestore,
		FaultForged, FaultTampered, FaultCross, FaultRevoked, FaultZombie, FaultSkip}
}

// ParseFaults reads a comma-separated list of fault kinds; "" and "all"
// mean every kind, "none" no fault at all.
func ParseFaults(s string) ([]Fault, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "all":
		return AllFaults(), nil
	case "none":
		return nil, nil
	}
	var out []Fault
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(AllFaults(), Fault(f)) {
			return nil, fmt.Errorf("%w: unknown fault %q (known: %s)", ErrOptions, f, faultNames())
		}
		if !slices.Contains(out, Fault(f)) {
			out = append(out, Fault(f))
		}
	}
	return out, nil
}

func faultNames() string {
	var names []string
	for _, f := range AllFaults() {
		names = append(names, string(f))
	}
	return strings.Join(names, ",")
}
