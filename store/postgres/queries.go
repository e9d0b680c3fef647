package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// queries are the store's statements over its schema, built once.
type queries struct {
	load, loadNoReceipt, now                     string
	putRecord, putReceipt                        string
	quarantine, putQuarantine                    string
	enforcement, putEnforcement, enforcements    string
	trust, clearTrust, putTrust                  string
	receipts, operationFences                    string
	inFlight, paused, recordsAfter               string
	quarantined, quarantinedAll                  string
	compactResources, count, stamps, stampsFirst string
	deleteReceipt                                string
	deleteQuarantine, stats                      string
	generation, initGeneration                   string
	lockRecord, insertRecord                     string
}

func newQueries(schema string) queries {
	s := pgx.Identifier{schema}.Sanitize()
	f := func(q string) string { return fmt.Sprintf(q, s) }
	return queries{
		load: f(`SELECT (SELECT body FROM %[1]s.records WHERE resource = $1),
			(SELECT body FROM %[1]s.receipts WHERE resource = $1 AND fence_key = $2 AND seq_key = $3),
			clock_timestamp()`),
		loadNoReceipt: f(`SELECT (SELECT body FROM %[1]s.records WHERE resource = $1), NULL::bytea, clock_timestamp()`),
		now:           `SELECT clock_timestamp()`,
		putRecord: f(`INSERT INTO %[1]s.records (resource, in_flight, paused, body) VALUES ($1, $2, $3, $4)
			ON CONFLICT (resource) DO UPDATE SET in_flight = excluded.in_flight, paused = excluded.paused, body = excluded.body`),
		putReceipt: f(`WITH put AS (
				INSERT INTO %[1]s.receipts (resource, fence_key, seq_key, operation_id, body) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (resource, fence_key, seq_key) DO UPDATE SET operation_id = excluded.operation_id, body = excluded.body
				RETURNING (xmax = 0) AS inserted)
			INSERT INTO %[1]s.counts (resource, receipts) SELECT $1, 1 FROM put WHERE inserted
			ON CONFLICT (resource) DO UPDATE SET receipts = %[1]s.counts.receipts + 1
			RETURNING receipts`),
		quarantine: f(`SELECT body FROM %[1]s.quarantine WHERE resource = $1 AND id = $2`),
		putQuarantine: f(`INSERT INTO %[1]s.quarantine (resource, id, body) VALUES ($1, $2, $3)
			ON CONFLICT (resource, id) DO UPDATE SET body = excluded.body`),
		enforcement: f(`SELECT body FROM %[1]s.enforcement WHERE shape = $1`),
		putEnforcement: f(`INSERT INTO %[1]s.enforcement (shape, body) VALUES ($1, $2)
			ON CONFLICT (shape) DO UPDATE SET body = excluded.body`),
		enforcements: f(`SELECT body FROM %[1]s.enforcement ORDER BY shape`),
		trust:        f(`SELECT body FROM %[1]s.trust ORDER BY kid`),
		clearTrust:   f(`DELETE FROM %[1]s.trust`),
		putTrust:     f(`INSERT INTO %[1]s.trust (kid, body) SELECT * FROM unnest($1::text[], $2::jsonb[])`),
		receipts: f(`SELECT k.i, r.body FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS k(resource, fence_key, seq_key, i)
			JOIN %[1]s.receipts r ON r.resource = k.resource AND r.fence_key = k.fence_key AND r.seq_key = k.seq_key`),
		operationFences: f(`SELECT fence_key FROM %[1]s.receipts WHERE resource = $1 AND operation_id = $2`),
		inFlight:        f(`SELECT body FROM %[1]s.records WHERE in_flight ORDER BY resource`),
		paused:          f(`SELECT body FROM %[1]s.records WHERE paused ORDER BY resource`),
		recordsAfter:    f(`SELECT body FROM %[1]s.records WHERE resource > $1 ORDER BY resource LIMIT $2`),
		quarantined:     f(`SELECT body FROM %[1]s.quarantine WHERE resource = $1 ORDER BY id`),
		quarantinedAll:  f(`SELECT body FROM %[1]s.quarantine ORDER BY resource, id`),
		compactResources: f(`SELECT resource FROM %[1]s.counts UNION SELECT resource FROM %[1]s.quarantine
			ORDER BY 1`),
		count: f(`SELECT coalesce((SELECT receipts FROM %[1]s.counts WHERE resource = $1), 0)`),
		stamps: f(`SELECT fence_key, seq_key, body FROM %[1]s.receipts WHERE resource = $1 AND (fence_key, seq_key) > ($2, $3)
			ORDER BY fence_key, seq_key LIMIT $4`),
		stampsFirst: f(`SELECT fence_key, seq_key, body FROM %[1]s.receipts WHERE resource = $1
			ORDER BY fence_key, seq_key LIMIT $2`),
		deleteReceipt: f(`WITH del AS (DELETE FROM %[1]s.receipts WHERE resource = $1 AND fence_key = $2 AND seq_key = $3 RETURNING 1),
			dec AS (UPDATE %[1]s.counts SET receipts = receipts - 1 WHERE resource = $1 AND receipts > 1 AND EXISTS (SELECT 1 FROM del) RETURNING 1)
			DELETE FROM %[1]s.counts WHERE resource = $1 AND receipts = 1 AND EXISTS (SELECT 1 FROM del)`),
		deleteQuarantine: f(`DELETE FROM %[1]s.quarantine WHERE resource = $1 AND id = ANY($2)`),
		stats: f(`SELECT (SELECT count(*) FROM %[1]s.records),
			(SELECT coalesce(sum(receipts), 0) FROM %[1]s.counts),
			(SELECT count(*) FROM %[1]s.quarantine),
			(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = $1 AND c.relkind = 'r')`),
		generation:     f(`SELECT value FROM %[1]s.meta WHERE key = 'generation'`),
		lockRecord:     f(`SELECT 1 FROM %[1]s.records WHERE resource = $1 FOR UPDATE`),
		insertRecord:   f(`INSERT INTO %[1]s.records (resource, in_flight, paused, body) VALUES ($1, $2, $3, $4)`),
		initGeneration: f(`INSERT INTO %[1]s.meta (key, value) VALUES ('generation', $1) ON CONFLICT (key) DO NOTHING`),
	}
}
