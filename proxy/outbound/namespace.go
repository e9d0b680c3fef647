package outbound

import (
	"net/http"

	"github.com/fencegate/fencegate"
)

// The sidecar's header namespace (design section 4).
//
// The sidecar owns every header named Fence-* in any spelling a backend
// could take for one: CGI, WSGI and Rack gateways (and PHP, and nginx with
// underscores_in_headers) fold case and map '-', '_' and '.' to the same
// '_' of an HTTP_* variable, so Fence_Token, fence.token and Fence-Token
// all become HTTP_FENCE_TOKEN, and which value wins is the gateway's
// choice. Go's server keeps such names apart in Request.Header
// (CanonicalMIMEHeaderKey leaves '_' and '.' alone: "Fence_token"), so a
// lookup by name finds only one spelling; the namespace is enforced by
// folding every name in the map (foldName) instead:
//
//   - requests: every client field that folds to fence-* is removed from
//     every request, read or write (outboundHeader), before the sidecar
//     sets its own; on an idempotencyKey route every spelling of
//     Idempotency-Key too (send). Request trailers are never forwarded.
//   - answers to mutations: every backend field that folds to fence-* is
//     removed from the answer of a protected write (writeForwarded), from
//     what its receipt keeps (storedHeader) and from a replay
//     (writeReceipt), and from the answer of a mutation passed unchecked
//     (passedAnswer): Fence-Receipt and Fence-Replayed are the sidecar's
//     word that a write was fenced and accepted, and a client (the SDK
//     among them) takes an answer with a receipt for one. A read's answer
//     is relayed as it is.
//
// The grant, status proof and segment are read from their canonical names
// only: Fence_Grant is no grant (GRANT_REQUIRED).
//
// Names are folded in ASCII only. Go's server refuses a request whose
// field names are not RFC 9110 tokens (400), so no name with a character
// a Unicode-aware gateway would fold into an ASCII letter gets this far.

// foldName is name as the most lenient gateway reads it: ASCII letters in
// lowercase, '_' and '.' as '-'. Two names fold to the same string exactly
// when a CGI gateway maps them to the same variable.
func foldName(name string) string {
	b := []byte(name)
	for i, c := range b {
		b[i] = foldByte(c)
	}
	return string(b)
}

func foldByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_' || c == '.':
		return '-'
	}
	return c
}

// foldedHasPrefix reports whether foldName(name) starts with prefix, a
// folded name, without allocating.
func foldedHasPrefix(name, prefix string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if foldByte(name[i]) != prefix[i] {
			return false
		}
	}
	return true
}

// fencePrefix is fencegate.HeaderPrefix folded: "fence-".
var fencePrefix = foldName(fencegate.HeaderPrefix)

// SidecarOwned reports whether a field of that name is in the sidecar's
// namespace: it folds to fence-*.
func SidecarOwned(name string) bool { return foldedHasPrefix(name, fencePrefix) }

// RemoveSidecarOwned deletes from h every field in the sidecar's
// namespace, whatever its spelling.
func RemoveSidecarOwned(h http.Header) {
	for k := range h {
		if SidecarOwned(k) {
			delete(h, k)
		}
	}
}

// removeSpellings deletes from h every field whose name folds to the same
// as name: all the spellings a gateway reads as that one field.
func removeSpellings(h http.Header, name string) {
	f := foldName(name)
	for k := range h {
		if len(k) == len(f) && foldedHasPrefix(k, f) {
			delete(h, k)
		}
	}
}
