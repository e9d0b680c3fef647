package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestGrantRun: "fencegate grant run" passes the grant to the command and
// exits with its code.
func TestGrantRun(t *testing.T) {
	reg := startRegistry(t, "")
	r := run(t, "grant", "run", "--registry", reg.url, "--owner", "worker-a", "--resource", "batch/1", "--ttl", "2s", "--",
		"sh", "-c", `echo "fence=$FENCEGATE_FENCE resource=$FENCEGATE_RESOURCE grant=${FENCEGATE_GRANT:+yes}"; exit 7`)
	if r.code != 7 {
		t.Fatalf("exit %d, want the command's 7\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "fence=1 resource=batch/1 grant=yes") {
		t.Fatalf("the command did not get the grant: %q", r.stdout)
	}
	// The lease was released when the command ended: the next one gets it at once.
	r = run(t, "grant", "acquire", "--registry", reg.url, "--owner", "worker-b", "--resource", "batch/1")
	if r.code != 0 || fields(r.stdout)["fenceToken"] != "2" {
		t.Fatalf("after grant run: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestGrantRunStopsTheCommandWhenOwnershipIsLost: the registry dies; the
// command is stopped before the lease could have passed to anyone else,
// and grant run exits 75.
func TestGrantRunStopsTheCommandWhenOwnershipIsLost(t *testing.T) {
	reg := startRegistry(t, "")
	p := start(t, "grant-run", "grant", "run", "--registry", reg.url, "--owner", "worker-a", "--resource", "batch/2", "--ttl", "1s", "--grace", "500ms",
		"--", "sh", "-c", `echo started; trap 'echo got-term; exit 0' TERM; while true; do sleep 0.05; done`)
	p.waitFor(reStarted, 10*time.Second)
	reg.kill()
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("grant run kept the command running after the registry went away")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 75 {
		t.Fatalf("exit %d, want 75\n%s\n%s", code, p.Stdout(), p.Stderr())
	}
	if !strings.Contains(p.Stdout(), "got-term") {
		t.Fatalf("the command was not sent SIGTERM: %q", p.Stdout())
	}
}
