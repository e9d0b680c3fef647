// Package anchor anchors a fenced store's progress outside the store, at
// the registry (docs/design.md, "Store loss and the outside anchor"), so
// that a store that lost data (a Redis restarted empty or restored from an
// older RDB or AOF, a deleted or replaced bbolt file) is caught by every
// sidecar that uses it, a new pod on an empty disk included, and never
// makes one accept a stale or repeated write.
//
// Wrap returns a store.Store around any store. Open registers the store's
// generation (store.Store.Generation) under Options.Store at the
// registry; the registry then holds, per resource, a fencegate.Progress
// that the store's record must always cover (fencegate.Progress.Covers),
// and the store's enforcement ledger. Two ordering rules keep it exact:
//
//   - strengthen the store first, then the anchor, then act: Begin
//     PROCEEDs only after the registry ANCHORED {Prior: the record the
//     store's Begin read, Next: the record it wrote}, so every mutation
//     that may reach the backend is anchored; a Prior that does not cover
//     the anchor is a loss (LOSS): nothing is forwarded, the resource is
//     repaired from the anchor (store.Store.Repair: raised, never lowered,
//     the anchored pending mutation UNKNOWN, paused STORE_LOSS) and the
//     Begin answers PAUSED (FENCE_REGRESSION). Pauses (Pause, a Begin that
//     paused, Repair) are anchored after the store wrote them (PAUSE);
//   - weaken the anchor first, then the store: Abort and Resolve as not
//     applied SETTLE first, Resume RESUMEs first; if the registry does not
//     answer ANCHORED the store is not touched (ErrSettleRefused: a marker
//     becomes UNKNOWN at its deadline, a pause stays).
//
// Commit, MarkUnknown, Resolve as applied, the deadline conversion and
// every Begin that does not proceed need no anchor step: the store only
// moves forward, and a store that loses them falls back to a state that
// still covers its anchor and fails closed (the anchored pending mutation
// comes back UNKNOWN).
//
// # When the registry does not answer
//
// A Begin whose anchor step is not answered (a transport error) asks
// again: ANCHORED means the step is anchored now, and it is settled and
// aborted; LOSS is a loss; LOSS where the anchor is exactly this mutation
// is ambiguous (the first call anchored it, or an earlier attempt that the
// store lost did, as in a Redis restored while a segment was in flight),
// so the marker is left to become UNKNOWN at its deadline and be settled
// from the backend, never aborted. Either way the Begin answers
// ErrNotAnchored and nothing is forwarded. A request refused as a whole
// (STORE_LOST, an unknown store) decided nothing: the marker is aborted.
//
// A SETTLE answered CONFLICT because the anchor holds a pending mutation
// of a lower fence (the marker's Begin raised the fence and was never
// anchored: its sidecar died, or the registry failed twice) is answered by
// proving that mutation committed from the store's receipt, or once
// compaction deleted it from the record's Superseded progress (a SEED of
// it committed), and asking again; with no receipt the store may have lost it,
// so the settle is refused and the resource paused. A SETTLE refused on a
// record that does not cover the anchor at all (a store put back to a save
// older than the anchor, met by a settle before any Begin) is a loss: the
// resource is repaired from the anchor and paused.
//
// # Lost stores, replaced registries, upgrades
//
// A registration answered STORE_LOST (another generation anchored), an
// anchor request refused so, or an inner store that reports its generation
// changed (store/redis) puts the wrapper in the lost state: Begin answers
// ErrStoreLost, reads pass, Lost and CheckLoss (readiness) report it and
// fencegate_proxy_store_data_lost is 1. Run (the sidecar's loop) rechecks
// at most every Options.RecheckInterval: once the registry anchors the
// store's generation again (an operator acknowledged the loss there), the
// store is repaired from every anchor it is behind on (paged) and writes
// are accepted again; the repaired resources stay paused until resumed.
// While the store is ready, Run audits it every Options.AuditInterval
// (Audit): every anchor, paged, against its record, so that a resource
// the store lost and no write touches is found too (a suspected loss is
// confirmed by a SEED and the record read again before it is repaired).
// The recheck is a loop of its own, not a step of Begin or of the
// readiness probe, because repairing every anchored resource can take
// long and must ride on no client request and no probe deadline.
//
// A registry that holds no generation of the store (a new or replaced
// registry, one restored from a backup older than the registration, an
// upgrade) is seeded from the store: every record as a SEED (monotone: it
// only raises an anchor) and every enforced shape. An anchor answer of
// another lineage (the registry was replaced) or an unknown store makes
// the wrapper register and seed again, refusing writes meanwhile. A SEED
// answered LOSS is a loss only if the record read again does not cover
// the anchor (another replica may have moved it). Options.Upgrade takes
// an earlier version's pod-local state into account once.
//
// # Cost
//
// One registry round trip per forwarded mutation. Concurrent anchor steps
// of one wrapper share one call: at most one call is in flight, the next
// batch (at most fencegate.MaxAnchorBatch steps) collects while it runs,
// there is no timer, and the caller whose steps head the queue leads the
// next call, so no caller serves the others for ever. The registry decides
// a batch in one transaction. BenchmarkBeginCommit measures it.
//
// # Metrics
//
// fencegate_proxy_anchor_calls_total{result}, _anchor_steps_total{op,
// outcome}, _anchor_failures_total{op}, the _anchor_batch_items and
// _anchor_call_seconds histograms, fencegate_proxy_store_losses_total{how}
// and the gauge fencegate_proxy_store_data_lost, every label combination
// at 0 from the start, registered in Options.Metrics.
package anchor
