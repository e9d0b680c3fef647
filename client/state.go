package client

import "time"

// State is the local state of a Holder's lease, the state machine of docs/design.md:
//
//	REQUESTED -> HELD -> RENEWING -> HELD
//	HELD, RENEWING -> OWNERSHIP_UNKNOWN  (a renewal or status whose outcome is
//	                                      uncertain; the local deadline passed;
//	                                      the sidecar reported the grant stale)
//	OWNERSHIP_UNKNOWN -> HELD            (the registry confirms it is held)
//	any -> EXPIRED                       (the registry confirms it is not held)
//	any -> RELEASED                      (the registry confirms the release)
//
// New effects are produced only in HELD and RENEWING (a renewal in flight
// does not withdraw the previous confirmation), and only before the local
// safety deadline. EXPIRED and RELEASED are final.
type State string

// The states.
const (
	// StateRequested: the acquire was sent; no grant is known yet.
	StateRequested State = "REQUESTED"
	// StateHeld: the registry confirmed the lease and the local deadline has not passed.
	StateHeld State = "HELD"
	// StateRenewing: a renewal is in flight; the previous confirmation stands
	// until the local deadline.
	StateRenewing State = "RENEWING"
	// StateOwnershipUnknown: the SDK no longer knows that it holds the lease.
	// New effects stop at once; effects already sent are not assumed undone.
	// Only an answer of the registry moves it on (to HELD, EXPIRED or RELEASED).
	StateOwnershipUnknown State = "OWNERSHIP_UNKNOWN"
	// StateExpired: the registry confirmed that the lease is no longer held
	// (expired, or revoked by an issuer epoch bump or a policy change:
	// Transition.Cause and Holder.Lease().State say which).
	StateExpired State = "EXPIRED"
	// StateReleased: the registry confirmed the release.
	StateReleased State = "RELEASED"
)

// Final reports whether s is EXPIRED or RELEASED: nothing moves it on.
func (s State) Final() bool { return s == StateExpired || s == StateReleased }

// Usable reports whether new effects may be produced in s (HELD or
// RENEWING). A Holder also checks its local deadline; use Holder.Usable.
func (s State) Usable() bool { return s == StateHeld || s == StateRenewing }

// String is the state's name.
func (s State) String() string { return string(s) }

// Transition is one change of a Holder's state.
type Transition struct {
	From, To State
	// At is the local time of the change (the Holder's clock).
	At time.Time
	// Cause says why, when the change is not the normal course: a transport
	// error, a registry problem (*Error), ErrLocalDeadline, a sidecar
	// rejection (*RejectionError) ...
	Cause error
	// Lease is the registry answer that drove the change, if any.
	Lease *Lease
}
