package e2e

import (
	"os"
	"path/filepath"
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
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	// The command starts a grandchild that ignores SIGTERM: losing the lease
	// must stop it too (the command runs in its own process group).
	p := start(t, "grant-run", "grant", "run", "--registry", reg.url, "--owner", "worker-a", "--resource", "batch/2", "--ttl", "1s", "--grace", "500ms",
		"--", "sh", "-c", `sh -c 'trap "" TERM; while true; do sleep 0.05; done' & echo $! > `+pidFile+`; echo started; trap 'echo got-term; exit 0' TERM; while true; do sleep 0.05; done`)
	p.waitFor(reStarted, 10*time.Second)
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild := strings.TrimSpace(string(raw))
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
	if !eventually(5*time.Second, func() bool { return !alive(grandchild) }) {
		t.Fatalf("grandchild %s outlived the lease", grandchild)
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func eventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
