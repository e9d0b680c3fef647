//go:build !race

package campaign

// Sizes of the test runs: testN for TestCampaignRejectsAll, detN for each
// of the three runs of TestCampaignIsDeterministic, weakPerKind per kind
// against a weakened sidecar.
const (
	testN       = 20_000
	detN        = 3_000
	weakPerKind = 400
)
