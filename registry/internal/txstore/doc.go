// Package txstore is what the shared-store registry backends
// (registry/redis, registry/etcd) share around their transactions: both
// are thin registry.TxStore adapters, and what differs between them is
// how a key is read, written and committed, not what the registry's
// records and steps do over it. (Rollback detection and recovery proper
// is registry/internal/rollback's.)
//
// Records (records.go) are a step's typed records over the backend's own
// JSON get and put: the meta, checked against the process's watermark on
// every read; the resources, whose fences the watermark learns; the
// leases, whose ends the commit announces to the other processes; the
// fenced stores' records and ledgers. They track what the commit needs:
// the meta the step writes, the highest fence it writes (the state file's
// ceiling covers it before the commit, the watermark learns it after),
// the resources whose lease it ends.
//
// A Shell (shell.go) is a Store's steps: serialized within the process
// (writes and recoveries exclusive, views shared), refused once the
// Store is closed, and run again once after a recovery when they found
// the state rolled back (rollback.Retry); it also counts and logs the
// recoveries, flushes the state file (Run), lifts the fence floor at Open
// and saves the watermark at Close.
//
// A Backend (backend.go) is a Store's registry.Backend with its
// wake-ups across processes (registry.Notifier), its state-file flusher
// (registry.Runner) and its rollback counts; NewOrigin (origin.go) the
// random ID that marks a Store's own wake-ups.
package txstore
