package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/pgtest"
)

// TestSidecarKilledMidWrite: the sidecar (bolt store) is SIGKILLed while
// the backend holds segment 2 (the backend's handler blocks until the
// kill, then applies it or not). The worker gets no answer. The sidecar is
// restarted on the same store: the mutation's in-flight marker survived
// the crash, so the next write waits and is RESOURCE_BUSY until the
// marker's deadline (backend timeout + 5 s) turns it UNKNOWN, and from
// then on MUTATION_UNKNOWN (409) until an operator reconciles it by what
// the backend did. Then the owner's writes flow again and the backend
// holds exactly the receipts, each write once.
func TestSidecarKilledMidWrite(t *testing.T) {
	sidecarKilledMidWrite(t, func(*testing.T) sidecarOpts { return sidecarOpts{timeout: "1s"} })
}

// TestSidecarKilledMidWritePostgres is TestSidecarKilledMidWrite on a
// store/postgres store: the marker Begin committed in PostgreSQL survives
// the sidecar's SIGKILL, and the restarted sidecar finds it there.
func TestSidecarKilledMidWritePostgres(t *testing.T) {
	sidecarKilledMidWrite(t, func(t *testing.T) sidecarOpts {
		dsn := filepath.Join(t.TempDir(), "dsn")
		if err := os.WriteFile(dsn, []byte(pgtest.Database(t)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return sidecarOpts{timeout: "1s", postgresDSNFile: dsn}
	})
}

// sidecarKilledMidWrite runs the scenario on the store opts returns, a
// fresh one per subtest.
func sidecarKilledMidWrite(t *testing.T, opts func(*testing.T) sidecarOpts) {
	for _, wasApplied := range []bool{true, false} {
		name := "not-applied"
		if wasApplied {
			name = "applied"
		}
		t.Run(name, func(t *testing.T) {
			m := startMatrix(t, opts(t))
			id := "kill-" + name
			path := accountsPath(id)
			a := m.acquire("worker-a", id, 120*time.Second, 0)
			w := func(seg, body string) reply { return m.write(of("worker-a", a, path, seg, body)) }
			wantAccepted(t, "segment 1", w("1", "A1"))

			arrived, release := make(chan struct{}), make(chan struct{})
			m.back.setGate(func(got applied) bool {
				if got.Segment != "2" {
					return true
				}
				close(arrived)
				<-release
				return wasApplied
			})
			answer := make(chan reply, 1)
			go func() { answer <- w("2", "A2") }()
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("segment 2 never reached the backend")
			}
			m.sc.kill()
			close(release)
			if r := <-answer; r.Err == nil {
				t.Fatalf("the worker got an answer from a sidecar killed mid-write: %s", r)
			}
			m.back.setGate(nil)

			m.restartSidecar()
			if r := w("3", "A3"); r.code() != fencegate.CodeResourceBusy && !(r.code() == fencegate.CodeMutationUnknown && r.Status == 409) {
				t.Fatalf("segment 3 after the restart: %s, want RESOURCE_BUSY (segment 2 still in flight) or 409 MUTATION_UNKNOWN", r)
			}
			op := waitUnknown(t, m.sc.admin, "account/"+id, 15*time.Second)
			if want := fencegate.OperationID(root(t, a.Grant), 2); op != want {
				t.Fatalf("the unknown mutation is %s, want segment 2's %s", op, want)
			}
			wantStatusProblem(t, "segment 3 while segment 2 is unknown", w("3", "A3"), 409, fencegate.CodeMutationUnknown)
			reconcile(t, m.sc.admin, "account/"+id, op, wasApplied)

			replayed := wantAccepted(t, "segment 2 resent after reconciliation", w("2", "A2"))
			if replayed != wasApplied {
				t.Fatalf("segment 2 resent: replayed=%v, want %v (reconciled as applied: replay; as not applied: forwarded again)", replayed, wasApplied)
			}
			wantAccepted(t, "segment 3", w("3", "A3"))
			m.back.wantBodies(t, path, "A1", "A2", "A3")
			checkFinalData(t, m.sc.admin, m.back, id, a.Grant)
		})
	}
}
