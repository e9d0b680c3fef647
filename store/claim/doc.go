// Package claim keeps a local fenced store (bolt) to the one sidecar that
// holds its service's claim: a lease at the registry on
// store.ClaimResource(service), renewed by the SDK's client.Holder.
//
// A local store serves one replica. Two sidecars of one service on two
// local stores would each keep its own highest fence, so a stale writer
// could pass the one that never saw the newer fence. Take claims the
// service at start-up (waiting up to one claim TTL for a restarted pod's
// old claim to end) and fails while another sidecar holds it; Guard
// wraps the store so that Begin fails closed while the claim is not held
// (the pipeline answers STORE_UNAVAILABLE and forwards nothing; reads and
// the settling of what is in flight go on).
//
// Nothing here starts a goroutine: Run is the claim's loop (it logs every
// loss and claims the service again once the lease ended), owned by the
// sidecar's Server.Run, which calls Release after the store closed so the
// next sidecar of the service starts at once.
//
// In the request path the guard sits between the fence core (proxy) and
// the store anchor (store/anchor): a call down from the core, like every
// other store call.
package claim
