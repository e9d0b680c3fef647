package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
)

var (
	workerOnce sync.Once
	workerBin  string
	workerErr  error
)

// workerBinary builds e2e/internal/worker once per test run, next to the
// fencegate binary, only when a scenario needs it.
func workerBinary(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		workerBin = filepath.Join(filepath.Dir(binary), "worker")
		cmd := exec.Command("go", "build", "-trimpath", "-o", workerBin, "./internal/worker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as TestMain's build
		out, err := cmd.CombinedOutput()
		if err != nil {
			workerErr = fmt.Errorf("building the worker: %v\n%s", err, out)
		}
	})
	if workerErr != nil {
		t.Fatal(workerErr)
	}
	return workerBin
}

// workerProc is a running e2e/internal/worker process.
type workerProc struct {
	*proc
	fence, grant string
}

var (
	heldRE  = regexp.MustCompile(`held fence=(\d+)`)
	grantRE = regexp.MustCompile(`grant=(\S+)`)
)

// startWorker runs a worker process that acquires account/id as owner and
// writes to sidecarURL when told to.
func startWorker(t *testing.T, regURL, sidecarURL, owner, id string, ttl time.Duration) *workerProc {
	t.Helper()
	p := startProgram(t, owner, workerBinary(t), true, "--registry", regURL, "--sidecar", sidecarURL,
		"--owner", owner, "--resource", "account/"+id, "--path", accountsPath(id), "--ttl", ttl.String())
	w := &workerProc{proc: p}
	w.fence = p.waitFor(heldRE, 15*time.Second)
	w.grant = p.waitFor(grantRE, 5*time.Second)
	return w
}

// send tells the worker to write body as segment seg with what it holds,
// and returns the HTTP status and problem code it got ("-": none).
func (w *workerProc) send(seg, body string) (int, fencegate.Code) {
	w.t.Helper()
	re := regexp.MustCompile(`result seg=` + regexp.QuoteMeta(seg) + ` body=` + regexp.QuoteMeta(body) + ` status=(\d+) code=(\S+)`)
	earlier := len(re.FindAllString(w.Stdout(), -1)) // the same write sent before
	if _, err := io.WriteString(w.stdin, seg+" "+body+"\n"); err != nil {
		w.t.Fatalf("telling %s to write: %v", w.name, err)
	}
	var m []string
	if !eventually(15*time.Second, func() bool {
		if all := re.FindAllStringSubmatch(w.Stdout(), -1); len(all) > earlier {
			m = all[earlier]
		}
		return m != nil
	}) {
		w.t.Fatalf("%s did not report its write of segment %s\nstdout:\n%s\nstderr:\n%s", w.name, seg, w.Stdout(), w.Stderr())
	}
	var status int
	fmt.Sscan(m[1], &status)
	return status, fencegate.Code(m[2])
}

func (w *workerProc) signal(sig syscall.Signal) {
	w.t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		w.t.Fatalf("%v to %s: %v", sig, w.name, err)
	}
}

// TestPausedWorker: worker A is a real process holding a 1 s lease. It
// writes segment 1, is frozen with SIGSTOP past its TTL, and B takes the
// resource over. On SIGCONT, A sends segment 2 with the grant and proof it
// still holds ("locked = true" in memory):
//
//   - before B's first write is accepted, the write is refused by status:
//     registry mode asks the registry (EXPIRED: GRANT_NOT_HELD); proof mode
//     refuses A's proof although it is younger than the route's maxAge,
//     because a proof never outlives its lease (exp ≤ lease expiry:
//     STATUS_STALE);
//   - once B's write is accepted, the same write is STALE_OWNER in both
//     modes (the read-only refinement: a higher fence is accepted).
//
// The backend keeps A's segment 1 then B's write, exactly the receipts.
func TestPausedWorker(t *testing.T) {
	for _, mode := range []string{"registry", "proof"} {
		t.Run(mode, func(t *testing.T) {
			m := startMatrix(t, sidecarOpts{status: mode, maxAge: "10s"})
			id := "paused-" + mode
			a := startWorker(t, m.reg.url, m.sc.url, "worker-a", id, time.Second)
			if st, code := a.send("1", "A1"); st != 200 {
				t.Fatalf("A's segment 1: %d %s", st, code)
			}

			a.signal(syscall.SIGSTOP)
			// B waits for A's lease to end: A is frozen past its TTL.
			b := m.acquire("worker-b", id, 30*time.Second, 10*time.Second)
			if fmt.Sprint(b.FenceToken) == a.fence {
				t.Fatalf("B got A's fence %s", a.fence)
			}
			a.signal(syscall.SIGCONT)

			before := fencegate.CodeGrantNotHeld
			if mode == "proof" {
				before = fencegate.CodeStatusStale
			}
			if st, code := a.send("2", "A2"); st != before.Status() || code != before {
				t.Fatalf("A's stale segment 2 before B wrote: %d %s, want %d %s", st, code, before.Status(), before)
			}
			wantAccepted(t, "B's write", m.write(of("worker-b", b, accountsPath(id), "1", "B1")))
			if st, code := a.send("2", "A2"); st != 409 || code != fencegate.CodeStaleOwner {
				t.Fatalf("A's stale segment 2 after B wrote: %d %s, want 409 STALE_OWNER", st, code)
			}

			m.back.wantBodies(t, accountsPath(id), "A1", "B1")
			checkFinalData(t, m.sc.admin, m.back, id, a.grant, b.Grant)
		})
	}
}
