package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
)

// supervisor runs grant run's loop, its one owner: it follows the
// Holder's state and the command's exit, pauses the command while
// ownership is unknown (or stops it, without pauseOnUnknown), continues
// it once the registry confirms the lease, and stops it for good when
// ownership is lost (the Holder's Context ends) or ctx ends.
type supervisor struct {
	h              *client.Holder
	child          *exec.Cmd
	exited         chan error
	grace          time.Duration
	name           string
	pauseOnUnknown bool
	proofs         *proofFile // nil without --proof-file
	log            io.Writer

	paused bool
}

// run supervises until the command exits or is stopped, and returns grant
// run's result: nil, the command's own exit code, or exitOwnershipLost.
func (s *supervisor) run(ctx context.Context) error {
	var refresh <-chan time.Time
	if s.proofs != nil {
		t := clock.Real().NewTicker(s.proofs.period())
		defer t.Stop()
		refresh = t.C()
	}
	life := s.h.Context()
	var lost, interrupted, waitErr error
	for done := false; !done; {
		st, changed := s.h.Watch()
		if lost = s.follow(st); lost != nil {
			break
		}
		select {
		case waitErr = <-s.exited:
			done = true
		case <-changed:
		case <-refresh:
			s.refreshProof(ctx)
		case <-life.Done():
			lost = fmt.Errorf("ownership lost: %v", context.Cause(life))
		case <-ctx.Done():
			interrupted = ctx.Err()
			done = true
		}
		done = done || lost != nil
	}
	if lost != nil || interrupted != nil {
		if waitErr == nil {
			waitErr = stopCommand(s.child, s.exited, s.grace)
		}
	}
	code := exitCode(waitErr)
	switch {
	case lost != nil:
		return withExit(exitOwnershipLost, fmt.Errorf("%v; stopped %s", lost, s.name), "")
	case code != 0:
		return &cliError{exit: code, err: fmt.Errorf("%s exited with status %d", s.name, code), class: classCommandExit}
	}
	return nil
}

// follow acts on the Holder's state st: a usable lease continues a
// paused command; an unknown one pauses it (where the platform can) or,
// without pauseOnUnknown, is returned as lost. Final states are left to
// the Holder's Context.
func (s *supervisor) follow(st client.State) error {
	switch {
	case st.Usable():
		if s.paused {
			if err := resumeGroup(s.child); err == nil {
				s.paused = false
				fmt.Fprintf(s.log, "fencegate grant run: the registry confirmed the lease again: %s continued\n", s.name)
			}
		}
		return nil
	case st.Final():
		return fmt.Errorf("ownership lost (state %s): %v", st, s.h.Err())
	case !s.pauseOnUnknown:
		return fmt.Errorf("ownership unknown (state %s, --on-unknown stop): %v", st, s.h.Err())
	case !s.paused:
		if err := pauseGroup(s.child); err != nil {
			return fmt.Errorf("ownership unknown (state %s) and %s cannot be paused here (%v): %v", st, s.name, err, s.h.Err())
		}
		s.paused = true
		fmt.Fprintf(s.log, "fencegate grant run: ownership unknown (%v): %s paused until the registry confirms the lease (stopped if the lease's deadline passes first)\n", s.h.Err(), s.name)
	}
	return nil
}

// refreshProof rewrites the proof file while the lease is usable; a
// failure is logged and left to the next tick (the file's proof ages out
// at the sidecar, which then refuses it: nothing stale is accepted).
func (s *supervisor) refreshProof(ctx context.Context) {
	if s.h.Usable() != nil {
		return
	}
	if _, err := s.proofs.refresh(ctx); err != nil {
		fmt.Fprintf(s.log, "fencegate grant run: status proof not refreshed: %v\n", err)
	}
}
