package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// TestLateDelivery: worker A's write is held by the network (faultproxy
// in Delay mode between A and the sidecar) while A's lease ends (A
// releases it), B acquires and B's write is accepted. When A's old request
// finally lands it is STALE_OWNER, in both status modes: in proof mode A's
// proof still says HELD and is within maxAge (the early-release window),
// but B's accepted fence closes it; in registry mode the registry says
// RELEASED and the refinement names the newer fence. The backend has B's
// data only.
func TestLateDelivery(t *testing.T) {
	for _, mode := range []string{"registry", "proof"} {
		t.Run(mode, func(t *testing.T) {
			m := startMatrix(t, sidecarOpts{status: mode, maxAge: "30s"})
			fp := faultProxyTo(t, m.sc.url)
			id := "late-" + mode
			path := accountsPath(id)
			a := m.acquire("worker-a", id, 30*time.Second, 0)

			const hold = 2 * time.Second
			fp.SetDelay(hold)
			fp.SetMode(faultproxy.Delay)
			late := make(chan reply, 1)
			go func() { late <- send(fp.URL(), of("worker-a", a, path, "1", "A1")) }()
			if !eventually(5*time.Second, func() bool { return fp.Stats().Accepted > 0 }) {
				t.Fatal("A's request never reached the fault proxy")
			}

			if _, err := registryClient(t, m.reg.url, "worker-a").Release(context.Background(), a.Lease); err != nil {
				t.Fatal(err)
			}
			b := m.acquire("worker-b", id, 30*time.Second, 5*time.Second)
			wantAccepted(t, "B's write", m.write(of("worker-b", b, path, "1", "B1")))
			if n := fp.Stats().RequestBytes; n != 0 {
				t.Fatalf("A's request was delivered (%d bytes) before B's write was accepted: the scenario needs a longer hold", n)
			}

			r := <-late
			wantProblem(t, "A's request delivered late", r, fencegate.CodeStaleOwner)
			m.back.wantBodies(t, path, "B1")
			checkFinalData(t, m.sc.admin, m.back, id, a.Grant, b.Grant)
		})
	}
}
