package fencegate

// Header names of the request contract (docs/design.md, "Request contract").
const (
	// HeaderGrant carries the lockGrant.v1 JWS on a protected mutation.
	HeaderGrant = "Fence-Grant"
	// HeaderStatus carries a fresh lockStatus.v1 JWS proof (routes in proof mode).
	HeaderStatus = "Fence-Status"
	// HeaderSegment is the segment number, a decimal integer in 1..MaxSeq
	// (absent: 1).
	HeaderSegment = "Fence-Segment"
	// HeaderToken is the fence token (sidecar to backend; message headers).
	HeaderToken = "Fence-Token"
	// HeaderResource is the canonical resource ID (sidecar to backend;
	// message headers).
	HeaderResource = "Fence-Resource"
	// HeaderRoot is the grant's operation root (sidecar to backend; message
	// headers).
	HeaderRoot = "Fence-Operation-Root"
	// HeaderOperationID is root + "/" + segment (sidecar to backend).
	HeaderOperationID = "Fence-Operation-Id"
	// HeaderReceipt is the receipt ID on every accepted (or replayed)
	// mutation's response.
	HeaderReceipt = "Fence-Receipt"
	// HeaderReplayed is "true" on a response replayed from a stored receipt.
	HeaderReplayed = "Fence-Replayed"
	// HeaderLease is the lease ID in message headers (a hand-off); it is
	// not part of the HTTP request contract.
	HeaderLease = "Fence-Lease"
	// HeaderIdempotency carries the operation ID to backends that honour
	// Idempotency-Key.
	HeaderIdempotency = "Idempotency-Key"
	// HeaderDigest is the RFC 9530 Content-Digest of a request body.
	HeaderDigest = "Content-Digest"

	// HeaderPrefix starts every Fence-* header; the sidecar removes every
	// request header whose name starts with it once case is folded and
	// '_' and '.' are read as '-' (Fence_Token, fence.token) before a
	// request reaches the backend.
	HeaderPrefix = "Fence-"
)
