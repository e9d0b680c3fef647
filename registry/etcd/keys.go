package etcd

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "fgreg"

// keyspace names the keys of one registry: every key starts with
// "<prefix>/". etcd transactions span any keys, so nothing ties them to
// one shard as Redis's hash tag does.
type keyspace struct{ p string }

func newKeyspace(prefix string) (keyspace, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.ContainsRune(prefix, 0) || strings.HasSuffix(prefix, "/") {
		return keyspace{}, fmt.Errorf("%w: prefix %q (no NUL, no trailing '/')", ErrOptions, prefix)
	}
	return keyspace{p: prefix + "/"}, nil
}

// schema holds SchemaVersion.
func (k keyspace) schema() string { return k.p + "schema" }

// meta holds the registry-wide Meta (JSON).
func (k keyspace) meta() string { return k.p + "meta" }

// policies holds every policy, one JSON object pattern -> Policy: a
// policy write conflicts with every decision that matched a policy.
func (k keyspace) policies() string { return k.p + "policies" }

// resource holds one ResourceRecord (JSON).
func (k keyspace) resource(id string) string { return k.p + "res/" + id }

// leases is the prefix of the lease keys; lease holds one LeaseRecord.
func (k keyspace) leases() string         { return k.p + "lease/" }
func (k keyspace) lease(id string) string { return k.leases() + id }

// request holds the lease ID of (owner, requestID).
func (k keyspace) request(owner, requestID string) string {
	return k.p + "req/" + owner + "\x00" + requestID
}

// digest holds the lease ID of a grant digest.
func (k keyspace) digest(d string) string { return k.p + "dig/" + d }

// ended is the prefix of the wake-up keys: ended(r) is written, with the
// writer's origin as value, by the transaction that ends a lease of r;
// ended("") by an epoch bump or policy change (every resource). The other
// processes watch the prefix (notify.go).
func (k keyspace) ended(resource string) string { return k.p + "ended/" + resource }

// store holds a fenced store's record (JSON); store names hold no ':'.
func (k keyspace) store(name string) string { return k.p + "store/" + name }

// ledger holds a fenced store's enforcement ledger (JSON).
func (k keyspace) ledger(name string) string { return k.p + "ledger/" + name }

// anchors is the prefix of a store's anchors, in resource (byte) order;
// anchor holds the anchored progress of one resource (JSON).
func (k keyspace) anchors(store string) string { return k.p + "anc/" + store + ":" }
func (k keyspace) anchor(store, resource string) string {
	return k.anchors(store) + resource
}
