package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// TestRegistryRestoredFromOldSnapshot restores the registry's bbolt file
// from a copy taken before a fence was issued. The restored registry issues
// that fence again under a new lease and operation root; the sidecar, which
// already accepted the fence under the first root, answers
// FENCE_REGRESSION, pauses the resource (listed by /v1/paused, so the
// restore alarm fires) and forwards nothing more to the backend.
func TestRegistryRestoredFromOldSnapshot(t *testing.T) {
	dataDir := t.TempDir()
	addr := freePort(t) // the registry keeps its address across restarts
	reg := startRegistry(t, dataDir, "--listen", addr)
	if err := reg.stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dataDir, "registry.db")
	snapshot, err := os.ReadFile(db) // before any fence was issued
	if err != nil {
		t.Fatal(err)
	}
	reg = startRegistry(t, dataDir, "--listen", addr)

	back := startLedgerBackend(t)
	bsrv := back.URL()
	sc := startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+bsrv+`", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: {backend: bolt, service: e2e-registry-restore, claimIdentity: sidecar, claimTTL: 5m} # the restored registry forgets the claim: no renewal within the test
dataDir: "`+t.TempDir()+`"
log: {level: warn}
`)
	ctx := context.Background()
	acquire := func(owner, requestID string) *client.Lease {
		t.Helper()
		c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", owner))
		l, err := c.Acquire(ctx, client.AcquireRequest{Resource: "account/9", RequestID: requestID, TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	put := func(owner, grant, body string) (int, fencegate.Code) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, sc.url+"/v1/accounts/9", strings.NewReader(body))
		req.Header.Set("X-Fencegate-Identity", owner)
		req.Header.Set("Fence-Grant", grant)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 {
			d, err := fencegate.ReadProblem(resp)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, d.Code
		}
		return resp.StatusCode, ""
	}

	a := acquire("worker-a", "a")
	if st, code := put("worker-a", a.Grant, "A"); st != 200 {
		t.Fatalf("worker-a's write: %d %s", st, code)
	}

	// Restore the old snapshot: the registry forgets fence a.FenceToken.
	if err := reg.stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	reg = startRegistry(t, dataDir, "--listen", addr)
	c := acquire("worker-c", "c")
	if c.FenceToken != a.FenceToken {
		t.Fatalf("the restored registry issued fence %d; this scenario needs it to reissue %d", c.FenceToken, a.FenceToken)
	}
	if st, code := put("worker-c", c.Grant, "C"); st != 409 || code != "FENCE_REGRESSION" {
		t.Fatalf("the reissued fence's write: %d %s, want 409 FENCE_REGRESSION", st, code)
	}
	// Paused: the alarm lists it, and nothing else reaches the backend.
	resp, err := http.Get(sc.admin + "/v1/paused")
	if err != nil {
		t.Fatal(err)
	}
	var paused []struct {
		Resource string `json:"resource"`
		Pause    struct {
			Reason string `json:"reason"`
		} `json:"pause"`
	}
	err = json.NewDecoder(resp.Body).Decode(&paused)
	resp.Body.Close()
	if err != nil || len(paused) != 1 || paused[0].Resource != "account/9" || paused[0].Pause.Reason != "FENCE_REGRESSION" {
		t.Fatalf("/v1/paused = %+v (%v), want account/9 paused for FENCE_REGRESSION", paused, err)
	}
	if st, code := put("worker-c", c.Grant, "C again"); st != 409 || code != "FENCE_REGRESSION" {
		t.Fatalf("a write on the paused resource: %d %s", st, code)
	}
	back.wantBodies(t, accountsPath("9"), "A")
	checkFinalData(t, sc.admin, back, "9", a.Grant, c.Grant)
}
