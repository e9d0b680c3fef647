package redis

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "fgreg"

// keyspace names the keys of one registry. Every key starts with the
// prefix as a hash tag, "{fgreg}:...", so that all of them hash to one
// Cluster slot: a transaction reads the global meta along with the
// resource's keys, and MULTI/EXEC cannot span slots.
type keyspace struct{ tag string }

func newKeyspace(prefix string) (keyspace, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		return keyspace{}, fmt.Errorf("registry/redis: prefix %q must not contain '{' or '}'", prefix)
	}
	return keyspace{tag: "{" + prefix + "}:"}, nil
}

// schema holds SchemaVersion.
func (k keyspace) schema() string { return k.tag + "schema" }

// meta holds the registry-wide Meta (JSON).
func (k keyspace) meta() string { return k.tag + "meta" }

// policies is a hash: pattern -> Policy (JSON).
func (k keyspace) policies() string { return k.tag + "policies" }

// resource holds one ResourceRecord (JSON).
func (k keyspace) resource(id string) string { return k.tag + "res:" + id }

// lease holds one LeaseRecord (JSON).
func (k keyspace) lease(id string) string { return k.tag + "lease:" + id }

// leasePattern matches every lease key (for SCAN). The prefix has no
// glob characters of its own to escape but '*', '?', '[' and '\\'.
func (k keyspace) leasePattern() string { return globEscape(k.tag) + "lease:*" }

// request holds the lease ID of (owner, requestID).
func (k keyspace) request(owner, requestID string) string {
	return k.tag + "req:" + owner + "\x00" + requestID
}

// ended is the pub/sub channel of ended leases (see Store.Notify).
func (k keyspace) ended() string { return k.tag + "ended" }

// state is the pub/sub channel on which every committed write announces
// the state it reached (see watermark.go), so every process's watermark
// covers the other processes' writes.
func (k keyspace) state() string { return k.tag + "state" }

// store holds a fenced store's record (JSON); store names hold no ':'.
func (k keyspace) store(name string) string { return k.tag + "store:" + name }

// ledger holds a fenced store's enforcement ledger (JSON).
func (k keyspace) ledger(name string) string { return k.tag + "ledger:" + name }

// anchor holds the anchored progress of one resource of a store (JSON).
func (k keyspace) anchor(store, resource string) string {
	return k.tag + "anc:" + store + ":" + resource
}

// anchorIndex is a sorted set of the resources anchored for a store (all
// at score 0, so ZRANGE BYLEX pages them in byte order and ZCARD counts
// them).
func (k keyspace) anchorIndex(store string) string { return k.tag + "ancidx:" + store }

// digest holds the lease ID of a grant digest.
func (k keyspace) digest(d string) string { return k.tag + "dig:" + d }

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '{', '}':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
