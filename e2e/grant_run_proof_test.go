package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGrantRunKeepsAProofFresh: a command under grant run writes to a
// sidecar route in proof mode (status.maxAge 2s) with curl, once at
// start and once after sleeping past maxAge. The first proof grant run
// put in its environment has aged out by then and is refused; the proof
// file grant run keeps rewriting is fresh and the second write is
// accepted.
func TestGrantRunKeepsAProofFresh(t *testing.T) {
	reg := startRegistry(t, "")
	back := startLedgerBackend(t)
	sc := startSidecar(t, matrixSidecarConfig(reg, back.URL(), sidecarOpts{status: "proof", maxAge: "2s", claimTTL: "10s", dataDir: t.TempDir()}, "proof-run"))
	dir := t.TempDir()
	proofFile := filepath.Join(dir, "status")
	put := func(seg, proof string) string {
		return `curl -s -o ` + filepath.Join(dir, "answer-"+seg) + ` -w '` + seg + `:%{http_code}\n' -X PUT -H "X-Fencegate-Identity: worker-a" -H "Fence-Grant: $FENCEGATE_GRANT" ` +
			`-H "Fence-Segment: ` + seg + `" -H "Fence-Status: ` + proof + `" --data 'segment ` + seg + `' ` + sc.url + accountsPath("7") + "; "
	}
	script := put("1", "$(cat $FENCEGATE_STATUS_FILE)") + "sleep 3; " +
		strings.Replace(put("2", "$FENCEGATE_STATUS"), "2:%", "stale:%", 1) +
		put("2", "$(cat $FENCEGATE_STATUS_FILE)")
	r := run(t, "grant", "run", "--registry", reg.url, "--owner", "worker-a", "--resource", "account/7", "--ttl", "10s",
		"--proof-file", proofFile, "--proof-max-age", "2s", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := strings.Fields(r.stdout)
	if len(got) != 3 || !strings.HasPrefix(got[0], "1:2") || !strings.HasPrefix(got[1], "stale:4") || !strings.HasPrefix(got[2], "2:2") {
		var answers []string
		for _, seg := range []string{"1", "2"} {
			b, _ := os.ReadFile(filepath.Join(dir, "answer-"+seg))
			answers = append(answers, string(b))
		}
		t.Fatalf("writes answered %q; want segment 1 accepted, the environment's aged proof refused, segment 2 with the file's proof accepted\nbodies: %q\n%s", got, answers, r.stderr)
	}
	back.wantBodies(t, accountsPath("7"), "segment 1", "segment 2")
}
