// Package client is the Go SDK for workers and tools that talk to the
// fencegate registry and write through a fencegate sidecar.
//
// # Workers
//
// A worker holds a lease with Client.Hold and sends its writes through the
// Holder's Transport. The SDK is built so that a worker using it cannot
// produce a new effect once it no longer knows that it holds the lease:
//
//	reg, _ := client.New("https://registry:8700", client.WithTLSFiles(cert, key, ca))
//	h, err := reg.Hold(ctx, "invoice-batch/2026-07-19", client.WithTTL(10*time.Second), client.WithWait(time.Minute))
//	if err != nil {
//		return err // ErrLeaseHeld, ErrAcquireUnknown (reconcile by request ID) ...
//	}
//	defer h.Release(ctx)
//
//	hc := h.Transport(client.WithBase(mtlsTransport)).Client()
//	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, sidecar+"/v1/invoice-batches/2026-07-19", body)
//	resp, err := hc.Do(req)
//	if err != nil {
//		return err // ErrNotHolding: refused locally, nothing sent; ErrOutcomeUnknown: maybe applied (Transport.Recover)
//	}
//	defer resp.Body.Close()
//	if err := client.ResponseError(resp); err != nil {
//		return err // errors.Is(err, client.ErrStaleOwner): a newer owner's fence was accepted; ErrReplayIncomplete ...
//	}
//
// Hold's wait for the lock (WithWait) is not taken from the lease: the
// Holder it returns has nearly its whole TTL ahead, however long it
// waited. Holder.Context is cancelled when ownership is lost for good
// (released, expired, revoked, the local deadline passed, STALE_OWNER).
//
// The Holder is the lease state machine of docs/design.md (see State): REQUESTED -> HELD ->
// RENEWING -> HELD, OWNERSHIP_UNKNOWN when a renewal's or status read's
// outcome is uncertain or the local safety deadline passes, EXPIRED and
// RELEASED when the registry confirms them. Only registry answers make it
// HELD; the local clock only ever takes the lease out of use. Follow it
// with Watch, Done or WithOnTransition. Its transitions are one pure
// function (decideLease, lease_decide.go: state and event in, the new
// state and the actions out), which the Holder applies under its lock.
//
// Hold is safe to retry and to lose: every attempt reuses one request ID,
// a lost answer is recovered only by looking that request ID up, and when
// that is impossible Hold waits until any grant of the lost attempt has
// expired and reports ErrAcquireUnknown; it never runs a second identity.
//
// Long tasks use Transport.RunSegments: segments are computed concurrently
// and submitted strictly in order under the grant's one operation root,
// with the lease checked before each; the run stops at the first
// STALE_OWNER or loss of ownership and reports which segments were
// accepted, by receipt. Handoff carries fence, root and segment to
// asynchronous downstream workers in message headers. Sidecar.Recover (and
// Transport.Recover) is the recovery path of a mutation whose outcome is
// unknown: ask the sidecar's receipt API, reuse an accepted operation.
// Operators list, find and revoke leases with Client.Leases, LeaseOf and RevokeLease (admin.go).
//
// # Errors
//
// Every registry answer that is an RFC 9457 problem comes back as a *Error
// that matches the sentinel of its code: errors.Is(err, client.ErrLeaseHeld).
// A Transport keeps the http.RoundTripper contract: every sidecar
// rejection comes back as a response (err == nil), and ResponseError(resp)
// turns it into a *RejectionError that matches its code's sentinel:
// errors.Is(err, client.ErrStaleOwner). A Transport's own errors are the
// mutations without a response: refused locally (ErrNotHolding,
// ErrInvalidSegment), never sent (ErrNotSent), or unanswered
// (ErrOutcomeUnknown).
// The code sentinels are the fencegate.Code values themselves (a Code is an
// error), so errors.Is(err, fencegate.CodeStaleOwner) is the same test.
// REPLAY_INCOMPLETE is not a rejection: the segment was accepted, and
// ResponseError reads it as a *ReplayIncompleteError (ErrReplayIncomplete) with the
// receipt ID and the backend's status.
// Transport failures of the low-level registry calls are returned as they
// are: the caller cannot know whether a write happened, and must treat the
// outcome as unknown (for an acquire: look the request ID up; never start
// a second identity). The Holder does this for you.
//
// The header names, codes, segment and operation-ID rules and wire types
// of the request contract are the root package's (fencegate.HeaderGrant,
// fencegate.CodeStaleOwner, fencegate.ParseSegment, fencegate.Lease ...),
// which the registry and the sidecar use too. The SDK imports no server
// code: only the root package, package verify, jwx and the standard
// library.
package client
