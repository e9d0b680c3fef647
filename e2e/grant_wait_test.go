package e2e

import "testing"

// TestGrantAcquireWaitsPastTheRegistrysMaxWait: the registry bounds one
// waiting request by its leases.maxWait (1m by default), which used to
// refuse `grant acquire --wait 70s` outright; the CLI now sends a long
// wait as successive requests, and gets the lease once its 2s holder
// lets it expire.
func TestGrantAcquireWaitsPastTheRegistrysMaxWait(t *testing.T) {
	reg := startRegistry(t, "")
	if r := run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-b", "--resource", "batch/wait", "--ttl", "2s"); r.code != 0 {
		t.Fatalf("first holder: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r := run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-a", "--resource", "batch/wait", "--wait", "70s")
	if r.code != 0 || fields(r.stdout)["fenceToken"] != "2" {
		t.Fatalf("waiting acquire: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-c", "--resource", "batch/wait"); r.code != 3 {
		t.Fatalf("acquire of a held resource without --wait: exit %d, want 3 (held)\n%s%s", r.code, r.stdout, r.stderr)
	}
}
