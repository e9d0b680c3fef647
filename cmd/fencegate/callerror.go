package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// describedError is an error with the message the user reads; it unwraps
// to the original, so exitCodeOf still classifies it.
type describedError struct {
	msg string
	err error
}

func (e *describedError) Error() string { return e.msg }
func (e *describedError) Unwrap() error { return e.err }

// callFailed describes the failure of a request to target ("the registry
// at URL"): what the server answered, or whether the request can have
// reached it at all. ifSent is the hint when it may have been received
// but its answer was lost (how to recover; "" when a retry is safe).
func callFailed(err error, target, ifSent string) error {
	if err == nil {
		return nil
	}
	var ce *cliError
	if errors.As(err, &ce) {
		return err
	}
	if p := problemOf(err); p != nil {
		return problemFailed(err, p, target, ifSent)
	}
	maybeSent, ok := transportFailure(err)
	switch {
	case !ok:
		return err
	case !maybeSent && isTLSFailure(err):
		return &cliError{err: &describedError{fmt.Sprintf("TLS with %s failed, nothing was sent: %s", target, cause(err)), err},
			hint: "Check --ca (the CA of its certificate); through a port-forward or by IP address, pass --tls-server-name NAME, a DNS name in its certificate."}
	case !maybeSent:
		return &cliError{err: &describedError{fmt.Sprintf("cannot reach %s, nothing was sent: %s", target, cause(err)), err},
			hint: reachHint(target)}
	}
	hint := ifSent
	if hint == "" {
		hint = "Check that it runs and try again."
	}
	return &cliError{err: &describedError{fmt.Sprintf("no answer from %s; the request may have reached it: %s", target, cause(err)), err}, hint: hint}
}

// problemFailed describes a problem the server answered. It changed
// nothing, except that a failure of its own backend (BACKEND_UNAVAILABLE,
// INTERNAL) leaves a write's outcome unknown: then ifSent says how to
// recover it.
func problemFailed(err error, p *fencegate.Problem, target, ifSent string) error {
	hint := problemHint(p)
	msg := fmt.Sprintf("%s refused it, nothing was changed: %s%s", target, problemText(err, p), stateOf(p))
	if (p.Code == fencegate.CodeBackendUnavailable || p.Code == fencegate.CodeInternal) && ifSent != "" {
		msg = fmt.Sprintf("%s failed, the outcome is unknown: %s", target, problemText(err, p))
		hint = ifSent
	}
	if p.Code == fencegate.CodeIdentityRequired {
		// The detail names the header the server looked for; the user's
		// lever is a flag (the hint).
		msg = fmt.Sprintf("%s could not tell who you are (IDENTITY_REQUIRED), nothing was changed", target)
	}
	return &cliError{err: &describedError{msg, err}, hint: hint}
}

// cause is the innermost transport message ("dial tcp 127.0.0.1:1:
// connect: connection refused"), without the client's prefixes.
func cause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// problemText is "409 LEASE_HELD: detail", without the server's package
// prefix.
func problemText(err error, p *fencegate.Problem) string {
	status := 0
	var ce *client.Error
	if errors.As(err, &ce) {
		status = ce.StatusCode
	} else {
		status = p.Status
	}
	detail := p.Detail
	for _, pre := range []string{"registry: ", "proxy: ", "adminapi: "} {
		detail = strings.TrimPrefix(detail, pre)
	}
	s := string(p.Code)
	if status != 0 {
		s = fmt.Sprintf("%d %s", status, p.Code)
	}
	if detail != "" {
		s += ": " + detail
	}
	return s
}

// stateOf is " (state EXPIRED)" when the problem names the lease's state.
func stateOf(p *fencegate.Problem) string {
	if st, ok := p.Extra["state"]; ok && st != nil {
		return fmt.Sprintf(" (state %v)", st)
	}
	return ""
}

// problemHint is what to do about a problem code.
func problemHint(p *fencegate.Problem) string {
	switch p.Code {
	case fencegate.CodeIdentityRequired:
		return "--owner is required for a registry in header or insecure-dev mode: pass --owner NAME (env FENCEGATE_OWNER); with mTLS pass --cert and --key."
	case fencegate.CodeAdminRequired:
		return "Pass --admin-token-file FILE holding the admin token (env FENCEGATE_ADMIN_TOKEN_FILE)."
	case fencegate.CodeLeaseHeld:
		return "Another owner holds it: wait for it with --wait DURATION, or try again later."
	case fencegate.CodeLeaseNotHeld, fencegate.CodeGrantNotHeld:
		return "The lease is gone: acquire the resource again (fencegate grant acquire)."
	case fencegate.CodeNotOwner:
		return "Only the lease's owner may do this: pass its --owner (or its certificate)."
	case fencegate.CodePolicyDenied:
		return "The resource's policy refuses this owner, TTL or operation class."
	}
	return ""
}

// reachHint says which flag names the server that could not be reached.
func reachHint(target string) string {
	if strings.HasPrefix(target, "the sidecar") {
		return "Check --admin (env FENCEGATE_ADMIN) and that the sidecar runs."
	}
	return "Check --registry (env FENCEGATE_REGISTRY) and that the registry runs."
}
