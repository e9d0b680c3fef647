// Package inbound is how the sidecar reads a client's request before it
// decides anything: the first layer of the request path, beneath the fence
// core (package proxy), which calls it and never the other way round. It
// holds no state and does no I/O.
//
//   - the read path (readpath.go): which requests are reads (GET, HEAD,
//     OPTIONS, TRACE, spelled exactly so), and which are refused before
//     any route is looked at: method-override headers and protocol
//     upgrades (Classify; which upgrades the configuration allows is the
//     caller's question, asked through Classify's allowed);
//   - the lenient readings of a path (lenientpath.go): how the most
//     lenient backend may read it, so that proxy can refuse a mutation it
//     would pass unchecked whose reading is a protected route's path;
//   - the sidecar's request fields (headers.go): a header's single value,
//     Fence-Segment, and the payload digest that binds a replay to its
//     request;
//   - Content-Digest (digest.go) and the RFC 8941 structured-field syntax
//     it is written in (sfparse.go).
//
// Refusals are returned as detail texts; proxy turns them into the
// contract's codes.
package inbound
