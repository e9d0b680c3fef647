package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
)

var lowerCamel = regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)

// jsonKeys calls f with every object member name of the JSON value v, at
// every depth.
func jsonKeys(v any, f func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			f(k)
			jsonKeys(e, f)
		}
	case []any:
		for _, e := range x {
			jsonKeys(e, f)
		}
	}
}

// TestOutputJSONNamesLowerCamel: the documents the operator commands
// print under -o json (their own and the servers' types, filled so that
// nested members appear) have only lowerCamel member names: no Go field
// name leaks out (docs/cli.md).
func TestOutputJSONNamesLowerCamel(t *testing.T) {
	mut := &store.Mutation{OperationID: "r/1", Lease: "l"}
	rec := store.Record{Resource: "r", InFlight: mut, Pause: &store.Pause{Reason: "OPERATOR"}, PriorLineages: []store.PriorLineage{{Lineage: "x"}}}
	rcpt := store.Receipt{ID: "rcpt-x", Response: store.StoredResponse{Status: 200, Header: map[string][]string{"A": {"b"}}}}
	for name, v := range map[string]any{
		"epoch bump":       epochBumped{Before: 1, Meta: fencegate.Meta{Lineage: "l"}},
		"fence-floor":      floorRaised{Resource: "r", Answer: fencegate.FenceFloorAnswer{Resource: fencegate.FenceFloorResource{Resource: "r", Holder: "h", FreedAt: 1}}},
		"lease list":       []fencegate.ListedLease{{Lease: fencegate.Lease{Lease: "l"}}},
		"lease revoke":     fencegate.RevokeAnswer{Lease: fencegate.Lease{Lease: "l"}},
		"policies":         []fencegate.Policy{{Pattern: "p", AllowedOwners: []string{"a"}, OpClasses: []string{"w"}, MinTTLMs: 1, MaxTTLMs: 2, Deleted: true}},
		"receipts":         []store.Receipt{rcpt},
		"receipts record":  rec,
		"receipts unknown": []store.Mutation{*mut},
		"quarantine":       []store.Quarantine{{ID: "q"}},
		"reconcile":        adminapi.ReconcileAnswer{Applied: true, Receipt: &rcpt, Record: rec},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		n := 0
		jsonKeys(doc, func(k string) {
			n++
			if !lowerCamel.MatchString(k) && k != "A" { // "A": the stored header's own name
				t.Errorf("%s: member %q is not lowerCamel", name, k)
			}
		})
		if n == 0 {
			t.Errorf("%s: no members", name)
		}
	}
}
