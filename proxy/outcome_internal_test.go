package proxy

import (
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// TestOutcomeCounts: every outcome is counted by one rule, the same for
// enforce and shadow mode: what enforce refuses, shadow passes with the
// code (and counts as a would-reject); a shadow replay is passed as
// REPLAY; a shadow 5xx is forwarded and counted as the MUTATION_UNKNOWN
// enforce would have made it; a read is not counted.
func TestOutcomeCounts(t *testing.T) {
	enforce := &route{RouteConfig: RouteConfig{Mode: ModeEnforce}, key: "PUT /e/{id}"}
	shadow := &route{RouteConfig: RouteConfig{Mode: ModeShadow}, key: "PUT /s/{id}"}
	stale := reject(fencegate.CodeStaleOwner, "x")
	unknown := reject(fencegate.CodeMutationUnknown, "y")
	att := func(rt *route) *attempt { return &attempt{rt: rt} }
	for _, c := range []struct {
		name   string
		o      outcome
		labels [4]string
		would  fencegate.Code
		ok     bool
	}{
		{"read", outcome{result: resultRead}, [4]string{}, "", false},
		{"unmatched pass", passed(nil, "unmatched", "pass", markUnmatched), [4]string{"unmatched", "pass", "passed", ""}, "", true},
		{"read-path refusal", rejected(nil, "read-path", "reject", reject(fencegate.CodeUpgradeRefused, "z")), [4]string{"read-path", "reject", "rejected", "UPGRADE_REFUSED"}, "", true},
		{"enforce refused", att(enforce).refused(stale, 0), [4]string{"PUT /e/{id}", "enforce", "rejected", "STALE_OWNER"}, "", true},
		{"shadow refused", att(shadow).refused(stale, 0), [4]string{"PUT /s/{id}", "shadow", "passed", "STALE_OWNER"}, "STALE_OWNER", true},
		{"enforce replayed", outcome{result: resultReplayed, a: att(enforce), receipt: &store.Receipt{}}, [4]string{"PUT /e/{id}", "enforce", "replayed", ""}, "", true},
		{"shadow replayed", outcome{result: resultReplayed, a: att(shadow), receipt: &store.Receipt{}}, [4]string{"PUT /s/{id}", "shadow", "passed", "REPLAY"}, "", true},
		{"enforce forwarded", outcome{result: resultForwarded, a: att(enforce)}, [4]string{"PUT /e/{id}", "enforce", "forwarded", ""}, "", true},
		{"shadow forwarded 5xx", outcome{result: resultForwarded, a: att(shadow), rej: unknown}, [4]string{"PUT /s/{id}", "shadow", "forwarded", ""}, "MUTATION_UNKNOWN", true},
	} {
		labels, would, ok := c.o.counts()
		if labels != c.labels || would != c.would || ok != c.ok {
			t.Errorf("%s: counts() = %q %q %v, want %q %q %v", c.name, labels, would, ok, c.labels, c.would, c.ok)
		}
	}
}
