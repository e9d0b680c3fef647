package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGrantRunRidesOutARegistryRestart: the registry is killed and comes
// back on the same address and data a few seconds later (a rolling
// restart) while grant run holds a 6s lease, renewed every 2s. A renewal
// that meets a refused connection leaves ownership unknown until the
// lease's local deadline: grant run pauses the command (SIGSTOP) rather
// than stopping it, and the next renewal after the restart confirms the
// lease again and continues it: it is never sent SIGTERM, and grant run
// exits with the command's own code.
func TestGrantRunRidesOutARegistryRestart(t *testing.T) {
	dataDir := t.TempDir()
	addr := freePort(t) // the registry keeps its address across the restart
	reg := startRegistry(t, dataDir, "--listen", addr)
	marker := filepath.Join(t.TempDir(), "finish")
	p := start(t, "grant-run", "grant", "run", "--registry", reg.url, "--owner", "worker-a", "--resource", "batch/outage", "--ttl", "6s",
		"--", "sh", "-c", `echo started; trap 'echo got-term; exit 0' TERM; while [ ! -e `+marker+` ]; do sleep 0.05; done; echo finished; exit 3`)
	p.waitFor(reStarted, 10*time.Second)

	reg.kill()
	time.Sleep(2500 * time.Millisecond) // longer than the renewal period: at least one renewal is refused
	startRegistry(t, dataDir, "--listen", addr)
	// Past the lease's TTL counted from the last renewal before the kill:
	// had the outage ended ownership, the command would be stopped by now.
	time.Sleep(6 * time.Second)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("grant run did not end after its command finished")
	}
	if strings.Contains(p.Stdout(), "got-term") {
		t.Fatalf("the command was stopped during a registry restart it could ride out:\n%s\n%s", p.Stdout(), p.Stderr())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(p.Stdout(), "finished") {
		t.Fatalf("exit %d, want the command's 3 after it finished\n%s\n%s", code, p.Stdout(), p.Stderr())
	}
	// While ownership was unknown the command produced nothing: it was
	// paused, and continued once the registry confirmed the lease.
	for _, want := range []string{"paused until the registry confirms the lease", "confirmed the lease again: sh continued"} {
		if !strings.Contains(p.Stderr(), want) {
			t.Errorf("grant run's stderr lacks %q:\n%s", want, p.Stderr())
		}
	}
}
