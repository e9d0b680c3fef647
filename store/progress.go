package store

import "github.com/fencegate/fencegate"

// ProgressOf is what a record shows of the resource's progress, as the
// outside anchor keeps it (fencegate.Progress): the highest fence with its
// grant's root, lineage, lease, digest and evidence, the last committed
// segment, the mutation in flight or unknown (in any state: it may have
// reached the backend), and the pause reason. The zero Record gives the
// zero Progress; a record that only holds a pause gives a Progress with
// only Paused.
func ProgressOf(rec Record) fencegate.Progress {
	var p fencegate.Progress
	if rec.HighestFence > 0 {
		p = fencegate.Progress{
			Fence:           rec.HighestFence,
			Root:            rec.Root,
			Lineage:         rec.Evidence.Lineage,
			Lease:           rec.Lease,
			GrantDigest:     rec.GrantDigest,
			IssuerEpoch:     rec.Evidence.IssuerEpoch,
			BackendRevision: rec.Evidence.BackendRevision,
			LastSeq:         rec.LastSeq,
		}
		if m := rec.InFlight; m != nil {
			p.Pending = &fencegate.PendingOp{Seq: m.Seq, PayloadDigest: m.PayloadDigest, Owner: m.Owner, Attempts: m.Attempts}
		}
	}
	if rec.Pause != nil {
		p.Paused = string(rec.Pause.Reason)
	}
	return p
}
