// Package postgres is a fenced store backend on PostgreSQL (pgx/v5),
// shared by every sidecar replica of a service, like store/redis, and the
// store library mode builds on (a service's own transaction).
//
// # Transactions: the record's row lock, or SERIALIZABLE; retried
//
// Every Store operation is one transaction (store.NewTxBackend over
// Update and View). The operations on one resource's rows (Begin, Commit,
// MarkUnknown, Resolve, Abort, Pause, Resume, Repair, a compaction step:
// lockedOps) run at READ COMMITTED and reach those rows through Tx.Load of
// the record, which locks it first (SELECT ... FOR UPDATE, pipelined with
// the load in one round trip, Tx.open): every transaction that writes a
// resource's record, receipts or quarantine entries holds its record's
// lock, so they queue on it, and each reads what the last one left (a
// READ COMMITTED statement after the lock sees every committed row). A
// record that does not exist yet cannot be locked: its first write is a
// plain INSERT, which fails (ErrRecordRace, a unique violation) when
// another transaction created it meanwhile, and the transaction runs
// again. Writers of different resources share no lock and never abort one
// another. At SERIALIZABLE they did, for sharing index pages (predicate
// locks are per page): 1.8 runs again per accepted write with 16 callers
// on 16 resources, 0 now (BenchmarkBeginCommitParallel). The operations
// that read or rewrite a whole set (the trust pins, a ledger entry) stay
// at SERIALIZABLE, where PostgreSQL makes them serial whatever they read;
// a View is SERIALIZABLE READ ONLY. A transaction aborted for a
// serialization failure (40001), a deadlock (40P01) or ErrRecordRace
// wrote nothing and runs again (the second run at once, later ones after a
// jittered backoff, as store/redis), at most Options.MaxAttempts times,
// then the call fails with ErrContention. A decision's error
// (ErrNotInFlight, ...) is returned after its transaction committed its
// reads. Compaction runs one resource per transaction
// (TxOptions.CompactEachResource).
//
// # Time
//
// A transition decides at the server's clock_timestamp(), read by Load in
// the same statement as the record and the receipt (one round trip), so
// replicas whose clocks disagree judge deadlines, quiet times and
// retention by one clock (see store/tx_time.go); there is no estimate, so
// no lag (TxOptions.ClockLag 0). Options.CallerClock decides at the
// caller's Now instead, for tests that drive a virtual clock.
//
// # Schema
//
// The tables live in one PostgreSQL schema (Options.Schema, DefaultSchema
// "fencegate"; one per service sharing a database): records (resource,
// in_flight and paused flags with partial indexes, the record as
// store/codec bytes), receipts (primary key (resource, fence, seq), an
// index on (resource, operation ID), the receipt as store/codec bytes),
// counts (receipts per resource, kept by the writes so that a Commit's
// trim never counts rows), quarantine, enforcement (the ledger) and trust
// (the pins) as JSON, and meta (the generation marker). Records and
// receipts keep the codec bolt and memory keep: one encoding of the
// domain types everywhere, decoded by one tested codec, and the columns
// beside them are only what a query selects or orders by. Resources are
// COLLATE "C" (byte order, which RecordsAfter and compaction promise); a
// uint64 fence or sequence is stored as the bigint of the same order
// (v - 2^63).
//
// # Migrations
//
// Open reads the schema's version (schema_version) with a plain SELECT
// and runs no DDL when it is current, so a role with only USAGE on the
// schema and SELECT, INSERT, UPDATE, DELETE on its tables runs the store;
// such a role on a schema that needs migrating is ErrNotMigrated.
// Otherwise it applies the schema's migrations (schema.go), in one
// transaction under an advisory lock, so two sidecars starting together
// migrate one after the other: each missing migration runs in order, and
// a version newer than SchemaVersion is refused (ErrSchemaTooNew): an
// older sidecar never writes under rules it does not know. Migrations only
// go forward; a release that changes the schema adds one.
//
// # Durability
//
// Open and New read fsync, synchronous_commit and
// synchronous_standby_names on a session of the store's pool (durable.go)
// and refuse sessions that may lose an acknowledged COMMIT
// (ErrNotDurable) unless Options.AllowNonDurable; an empty
// synchronous_standby_names is logged as a warning. A COMMIT that
// PostgreSQL answers with a warning (a wait for a synchronous standby
// cancelled: committed locally, maybe not replicated) is ErrCommitUnknown,
// never success (commitwatch.go; Open's pools only). With Options.TLS
// every host of the DSN is kept, each over TLS (tls.go).
//
// # Data loss
//
// Store.Generation is the meta table's marker, written once (INSERT ... ON
// CONFLICT DO NOTHING) when missing. The sidecar's outside anchor
// (store/anchor) tells the store which marker to expect
// (ExpectGeneration); every transaction then reads the marker in its own
// snapshot and fails closed with ErrGenerationChanged (STORE_UNAVAILABLE,
// /readyz failing through CheckGeneration) when it is missing (its table
// too: a dropped schema) or another: an empty database in place of the old
// one, another service's, or one restored from before the marker. A restore from a backup taken after
// the marker keeps the marker; what such a restore set back is caught by
// the anchor's per-resource progress (docs/design.md, section 16).
//
// # Library mode
//
// Store.In returns a store.Store whose every call runs inside a
// transaction the caller began on the same database (at any isolation
// level: the record is locked as in Update):
// the store's own Begin, Commit, ... (validation, the pure decisions, the
// quarantine merge) in the service's transaction, so the fence's record
// and receipt commit or roll back with the service's rows. Nothing is
// retried there: IsRetryable tells the caller to run its transaction
// again. Lower down, TxOn is the store.Tx over such a transaction and
// CheckIn checks the generation marker in it.
package postgres
