// Package rollback is what the shared-store registry backends
// (registry/redis, registry/etcd) use to meet a store that went back: a
// backup restored, a failover to a lagging replica, a member restored
// from a snapshot, a keyspace emptied.
//
// Each registry process keeps a Watermark (watermark.go): the highest
// registry revision, issuer epoch and policy generation it read or wrote,
// and the highest fence. The store only ever raises those numbers, so a
// meta read below the watermark as it stood before the read was sent
// (Watermark.Check) proves a rollback: ErrRolledBack, before anything is
// decided on it. The backend then recovers (recover.go): in one
// transaction of its own it writes RecoveredMeta of the meta it reads, an
// issuer epoch above every epoch the process saw (every earlier grant
// reads REVOKED), a global fence floor above every fence it saw or issued
// (Watermark.Floor), a revision above every revision it saw; Retry runs
// the step again on it.
//
// With a state file (state.go) the watermark survives the process's
// restart: saved at most SaveInterval late (Watermark.Flush, run by the
// backend's Run) and at Close, plus a fence ceiling reserved above the
// highest fence issued, fsynced (Watermark.ReserveUpTo) before a fence
// above the previous ceiling is handed out. At Open the backend raises the
// global floor to the ceiling (RaiseFloor), so a restarted process never
// reissues a fence it issued, even after a restore it cannot see.
//
// What stays with each backend: how the meta is read and written in one
// transaction, and how processes learn of each other's writes (Redis
// announces them over pub/sub, Watermark.Heard; etcd needs no
// announcement, its reads are linearizable).
package rollback
