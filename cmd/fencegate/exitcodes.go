package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/tlsfiles"
)

// Exit codes of the fencegate command, documented in docs/cli.md (a test
// checks that table against these constants). Scripts can tell them apart:
// each names one class of outcome, whatever the command.
const (
	// exitOK: the command did what was asked.
	exitOK = 0
	// exitFailure: any other failure (an unexpected answer, a local file
	// that cannot be written, a problem code without a class below).
	exitFailure = 1
	// exitUsage: bad input: an unknown command or flag, a missing or
	// malformed flag value, an invalid configuration (proxy --check,
	// registry --check), or a request the server refused as malformed
	// (INVALID_REQUEST, INVALID_RESOURCE, REQUEST_CONFLICT). Nothing was
	// changed.
	exitUsage = 2
	// exitHeld: the resource is held by another owner (LEASE_HELD, also
	// after --wait ran out), or another mutation of it is in flight
	// (RESOURCE_BUSY).
	exitHeld = 3
	// exitUnreachable: the registry or sidecar could not be reached or
	// could not answer: connection refused, DNS, a TLS handshake failure
	// (nothing was sent), a timeout or a dropped connection (the request
	// may have arrived), or it answered that its own backend is down
	// (BACKEND_UNAVAILABLE, REGISTRY_UNAVAILABLE, STORE_UNAVAILABLE).
	// Retrying later is the usual answer.
	exitUnreachable = 4
	// exitNotHeld: the lease is not (or no longer) held by the caller:
	// LEASE_NOT_HELD (expired, released, revoked), NOT_OWNER,
	// GRANT_NOT_HELD, or the SDK no longer knows it holds it.
	exitNotHeld = 5
	// exitNotFound: no such lease, grant, request ID, store or route
	// (NOT_FOUND).
	exitNotFound = 6
	// exitAuth: bad or missing credentials or not allowed:
	// IDENTITY_REQUIRED (no --owner or client certificate), ADMIN_REQUIRED
	// (no or a wrong admin token), POLICY_DENIED.
	exitAuth = 7
	// exitRejected: a grant or proof does not verify (grant inspect):
	// bad signature, unknown key, wrong schema, expired proof.
	exitRejected = 8
	// exitOwnershipLost: grant run lost its lease while the command ran
	// and stopped it (EX_TEMPFAIL, 75).
	exitOwnershipLost = 75
	// exitCannotRun: grant run could not start the command.
	exitCannotRun = 127
)

// exitClass names each exit code in JSON errors ("class") and docs/cli.md.
var exitClass = map[int]string{
	exitOK:            "ok",
	exitFailure:       "failure",
	exitUsage:         "usage",
	exitHeld:          "held",
	exitUnreachable:   "unreachable",
	exitNotHeld:       "not-held",
	exitNotFound:      "not-found",
	exitAuth:          "auth",
	exitRejected:      "rejected",
	exitOwnershipLost: "ownership-lost",
	exitCannotRun:     "cannot-run",
}

// codeExit maps the problem codes of the registry and the sidecar to exit
// codes; a code not listed is exitFailure.
var codeExit = map[fencegate.Code]int{
	fencegate.CodeInvalidRequest:      exitUsage,
	fencegate.CodeInvalidResource:     exitUsage,
	fencegate.CodeRequestConflict:     exitUsage,
	fencegate.CodeFenceHeaderInvalid:  exitUsage,
	fencegate.CodeLeaseHeld:           exitHeld,
	fencegate.CodeResourceBusy:        exitHeld,
	fencegate.CodeBackendUnavailable:  exitUnreachable,
	fencegate.CodeRegistryUnavailable: exitUnreachable,
	fencegate.CodeStoreUnavailable:    exitUnreachable,
	fencegate.CodeLeaseNotHeld:        exitNotHeld,
	fencegate.CodeNotOwner:            exitNotHeld,
	fencegate.CodeGrantNotHeld:        exitNotHeld,
	fencegate.CodeNotFound:            exitNotFound,
	fencegate.CodeIdentityRequired:    exitAuth,
	fencegate.CodeAdminRequired:       exitAuth,
	fencegate.CodePolicyDenied:        exitAuth,
	fencegate.CodeGrantInvalid:        exitRejected,
}

// exitCodeOf is the exit code for err: a *cliError's own, else its
// problem code's, else its transport failure's, else exitFailure.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *cliError
	if errors.As(err, &ce) && ce.exit != 0 {
		return ce.exit
	}
	if p := problemOf(err); p != nil {
		if c, ok := codeExit[p.Code]; ok {
			return c
		}
		return exitFailure
	}
	if errors.Is(err, client.ErrNotHolding) {
		return exitNotHeld
	}
	if _, ok := transportFailure(err); ok || errors.Is(err, client.ErrAcquireUnknown) {
		return exitUnreachable
	}
	return exitFailure
}

// problemOf is the problem document a server answered, if err holds one.
func problemOf(err error) *fencegate.Problem {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Problem
	}
	var re *client.RejectionError
	if errors.As(err, &re) {
		return re.Problem
	}
	var ae *adminapi.ProblemError
	if errors.As(err, &ae) {
		return ae.Problem
	}
	var p *fencegate.Problem
	if errors.As(err, &p) {
		return p
	}
	return nil
}

// transportFailure reports whether err is a failure to reach a server
// (ok) and, if so, whether the request may have been sent: a refused or
// failed dial, a DNS failure or a failed TLS handshake sent nothing; a
// timeout or a connection that broke afterwards may have delivered it.
func transportFailure(err error) (maybeSent, ok bool) {
	var (
		opErr  *net.OpError
		dnsErr *net.DNSError
		urlErr *url.Error
	)
	switch {
	case isTLSFailure(err), errors.As(err, &dnsErr):
		return false, true
	case errors.As(err, &opErr):
		return opErr.Op != "dial", true
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err), errors.As(err, &urlErr):
		// A timeout, or the connection broke after the dial (EOF, reset):
		// the request may have arrived.
		return true, true
	}
	return false, false
}

// isTimeout reports a net.Error timeout anywhere in err's chain.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isTLSFailure reports a TLS handshake or certificate failure.
func isTLSFailure(err error) bool {
	var (
		certErr *tls.CertificateVerificationError
		hostErr x509.HostnameError
		caErr   x509.UnknownAuthorityError
		invErr  x509.CertificateInvalidError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
	)
	return errors.As(err, &certErr) || errors.As(err, &hostErr) || errors.As(err, &caErr) ||
		errors.As(err, &invErr) || errors.As(err, &recErr) || errors.As(err, &alert) ||
		errors.Is(err, tlsfiles.ErrNoServerName) || errors.Is(err, tlsfiles.ErrNoPeerCertificate)
}
