// Package identity establishes the caller's workload identity for the
// registry and the sidecar. An identity is never self-declared: it comes
// from the mTLS client certificate (the SPIFFE ID in its URI SAN), or from a
// header that configuration explicitly trusts because a mesh proxy in front
// sets it (only from configured proxy addresses). A third mode, named
// insecure-header, trusts the header from anyone; it exists for local
// development and demos, and logs a warning at start.
package identity
