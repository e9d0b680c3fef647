// Package client is the Go SDK for workers and tools that talk to the
// fencegate registry: acquire (optionally waiting for the holder), look up
// a lost acquire by its request ID, renew, release, read status proofs,
// and the admin operations.
//
// Every answer that is an RFC 9457 problem comes back as a *Error that
// matches the sentinel of its code: errors.Is(err, client.ErrLeaseHeld).
// Transport failures are returned as they are: the caller cannot know
// whether a write happened, and must treat the outcome as unknown (for an
// acquire: look the request ID up; never start a second identity).
package client
