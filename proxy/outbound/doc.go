// Package outbound is how the sidecar talks to the backend: the bottom of
// the request path, beneath the fence core (package proxy), which decides
// what to send and calls it.
//
//   - what the backend receives of a client's request (outbound.go,
//     Target): the target byte for byte, Host, the client's headers less
//     the hop-by-hop fields and the sidecar's namespace, and the
//     forwarding headers (forwarded.go);
//   - the sidecar's header namespace (namespace.go): every field that folds
//     to Fence-* in any spelling a gateway could read as one;
//   - the send-once transport (sendonce.go): no mutation is ever sent twice
//     by net/http;
//   - the pass-through (passthrough.go): reads, mutations passed unchecked
//     and shadow passes, streamed both ways;
//   - a protected write's send (send.go, Sender) with the fence headers,
//     its buffered answer and what a receipt keeps of it (response.go),
//     and the answer the client gets (answer.go).
//
// It decides nothing: whether a request may reach the backend, and what
// its answer means for the fence, is proxy's.
package outbound
