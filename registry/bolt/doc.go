// Package bolt is the embedded durable registry backend on bbolt: one file,
// fsync on every commit (bbolt's default, never disabled here), so a granted
// fence survives kill -9 and power loss and is never issued twice.
//
// Operations that arrive together share one read-write transaction and its
// fsyncs (internal/boltgroup's group commit): each runs on the state the
// ones before it in the group left, and none is answered before the group
// is on disk, so the order of the group is a serial order of operations
// like any other. An operation that decides to write nothing (a busy
// resource, an idempotent retry) leaves its group alone; one that fails
// after writing takes the group down, and each member is run again alone.
// A grant's signature is not made by the group's leader between one
// operation and the next: Store.UpdateStaged (registry.StagedTxStore)
// hands it to the granting caller's own goroutine, which signs while the
// leader runs the rest of the group, and the token is written before the
// commit (boltgroup.Committer.DoStaged); on two cores the signatures of a
// group are made two at a time, beside the leader, not in its serial path.
//
// Layout: a "meta" bucket (schema version and the registry-wide Meta), and
// one bucket per table (resources, leases, requests, digests, policies).
// The meta, the resources and the leases, which every acquire, renew and
// release reads and writes, are in a binary form (codec.go: a version
// byte, then the fields in order, integers as varints, strings with their
// length); decoding them is not JSON's reflection on the write
// transaction, which every grouped operation shares. Files of schema 1
// held them in JSON: such a file opens, is marked SchemaVersion 2 (a build
// of schema 1 then refuses it rather than misread it), and its JSON records
// decode as before until they are next written. The policies and the
// anchor buckets hold JSON; for the anchors of fenced stores, "stores" and
// "ledgers" (by store name), "anchors" with one nested bucket per store
// (resource -> progress, in resource order for paging) and "anchorcounts"
// (store -> the number of resources anchored, kept by PutAnchor so a
// registration does not walk the store's anchors). The anchor buckets are
// additive: a file of a version without them opens and gets them, and the
// schema version is unchanged. Opening a file written by a newer schema
// fails.
package bolt
