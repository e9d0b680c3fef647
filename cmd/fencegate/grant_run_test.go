package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestGrantRunExitCodes: grant run exits with its command's code (under
// -o json as class command-exit, not the class that number has as a
// fencegate code), 3 when another owner holds the resource (the command
// does not start), 127 when the command cannot be started.
func TestGrantRunExitCodes(t *testing.T) {
	srv, _ := registrytest.Serve(t)
	base := []string{"grant", "run", "--registry", srv.URL, "--owner", "worker-a", "--ttl", "2s"}
	r := runCLI(t, append(base, "--resource", "run/1", "--", "sh", "-c", `echo "fence=$FENCEGATE_FENCE"; exit 7`)...)
	if r.code != 7 || !strings.Contains(r.stdout, "fence=1") {
		t.Fatalf("exit %d, stdout %q, stderr %s; want the command's 7", r.code, r.stdout, r.stderr)
	}
	j := runCLI(t, append(append([]string{"-o", "json"}, base...), "--resource", "run/1", "--", "sh", "-c", "exit 7")...)
	var e struct {
		Error jsonError `json:"error"`
	}
	if err := json.Unmarshal([]byte(j.stderr), &e); err != nil || j.code != 7 || e.Error.Class != classCommandExit || e.Error.Exit != 7 {
		t.Errorf("-o json: exit %d %s (%v)", j.code, j.stderr, err)
	}

	acquired(t, srv.URL, "worker-b", "run/2")
	r = runCLI(t, append(base, "--resource", "run/2", "--", "sh", "-c", "echo started")...)
	if r.code != exitHeld || strings.Contains(r.stdout, "started") || !strings.Contains(r.stderr, "LEASE_HELD") {
		t.Errorf("held by another owner: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, append(base, "--resource", "run/3", "--", "/nonexistent/cmd")...); r.code != exitCannotRun {
		t.Errorf("a command that cannot start: exit %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, append(base, "--resource", "run/4")...); r.code != exitUsage || !strings.Contains(r.stderr, "a command (after --)") {
		t.Errorf("no command: exit %d %s", r.code, r.stderr)
	}
}
