package httpapi

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestOpOf: each route of the API is counted under its operation.
func TestOpOf(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/v1/leases", opAcquire},
		{"GET", "/v1/leases", opOther},
		{"GET", "/v1/requests/r1", opLookup},
		{"GET", "/v1/leases/l1", opStatus},
		{"GET", "/v1/leases/l1/status", opStatus},
		{"POST", "/v1/leases/l1/renew", opRenew},
		{"POST", "/v1/leases/l1/release", opRelease},
		{"GET", "/v1/grants/sha256:00/status", opStatus},
		{"GET", "/v1/resources/inv/1", opResource},
		{"PUT", "/v1/stores/billing", opStore},
		{"GET", "/v1/stores/billing", opStore},
		{"POST", "/v1/stores/billing/ledger", opStore},
		{"GET", "/v1/stores/billing/anchors", opStore},
		{"POST", "/v1/stores/billing/progress", opAnchor},
		{"POST", "/v1/stores/billing/acknowledge", opAcknowledge},
		{"POST", "/v1/admin/epoch", opAdmin},
		{"GET", "/v1/admin/meta", opAdmin},
		{"GET", "/readyz", opReady},
		{"GET", "/debug/pprof/", opOther},
		{"GET", "/nowhere", opOther},
	} {
		if got := opOf(c.method, c.path); got != c.want {
			t.Errorf("opOf(%s %s) = %s, want %s", c.method, c.path, got, c.want)
		}
	}
}

// TestErrorCounterStartsAtZero: every (op, code) of opCodes exists at 0,
// and nothing else does.
func TestErrorCounterStartsAtZero(t *testing.T) {
	c := newErrorCounter()
	n := 0
	for op, codes := range opCodes {
		for _, code := range codes {
			n++
			if v := testutil.ToFloat64(c.WithLabelValues(op, string(code))); v != 0 {
				t.Errorf("%s %s: %v", op, code, v)
			}
		}
	}
	if got := testutil.CollectAndCount(c); got != n {
		t.Fatalf("%d series, want %d", got, n)
	}
	for _, op := range []string{opAcquire, opLookup, opRenew, opRelease, opStatus, opResource, opStore, opAnchor, opAcknowledge, opAdmin} {
		if len(opCodes[op]) < 3 {
			t.Errorf("op %s has only %v", op, opCodes[op])
		}
	}
}
