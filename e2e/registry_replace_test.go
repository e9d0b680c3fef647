package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// TestRegistryReplacedProcedure is issue 19's story 7 with real
// processes, and the operator guide's procedure for replacing a registry
// (docs/operations.md, "Replace, migrate or roll back the registry") run
// with the real commands.
//
// Registry A (bbolt, its own data dir) issues fences 1-4 of account/7; the
// sidecar (bolt store) accepts the writes of 2-4 (fence 1's worker wrote
// nothing, so no receipt shows fence 1 issued twice). A is stopped and
// replaced by registry B on an empty data dir with the same signing key
// (restored from its Secret): a new lineage, fences from 1 again. B's
// grant is FENCE_REGRESSION and pauses the resource; resuming without a
// floor does not help (B's next fence is still below). The procedure:
// `fencegate fences collect` (floor 4, epoch 1), `fencegate registry
// --fence-floor 4`, an epoch bump, `fencegate resume`. B's next grant is
// fence 5 and is accepted; A's last grant, still held with a fresh proof,
// is EPOCH_REVOKED, and at the sidecar restarted since (which forgot the
// epoch) STALE_OWNER without a pause: its lineage was superseded. The
// backend holds exactly the accepted receipts.
func TestRegistryReplacedProcedure(t *testing.T) {
	ctx := context.Background()
	keysDir := filepath.Join(t.TempDir(), "keys")
	if r := run(t, "keys", "generate", "--alg", "EdDSA", "--out", keysDir); r.code != 0 {
		t.Fatalf("keys generate: %+v", r)
	}
	// A signs proofs valid for 2 minutes, so that one of them is still
	// fresh after A is gone (the route accepts proofs that old).
	cfgA := filepath.Join(t.TempDir(), "registry-a.yaml")
	writeFile(t, cfgA, "signingKey: "+filepath.Join(keysDir, "signing.jwk")+"\nproofs: {maxTTL: 2m}\n")
	cfgB := filepath.Join(t.TempDir(), "registry-b.yaml")
	writeFile(t, cfgB, "signingKey: "+filepath.Join(keysDir, "signing.jwk")+"\n")
	addr := freePort(t) // the registry Service's address stays
	regA := startRegistry(t, t.TempDir(), "--listen", addr, "--config", cfgA)

	back := startLedgerBackend(t)
	scCfg := `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "` + back.URL() + `", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", status: {mode: proof, maxAge: 2m}}
identity: {mode: insecure-header}
trust: {bundle: "` + filepath.Join(keysDir, "jwks.json") + `"}
registry: {url: "` + regA.url + `"}
store: {backend: bolt, service: e2e-registry-replace, claimIdentity: sidecar, claimTTL: 5m} # the replaced registry forgets the claim: no renewal within the test
dataDir: "` + t.TempDir() + `"
log: {level: warn}
`
	sc := startSidecar(t, scCfg)
	path := accountsPath("7")
	write := func(owner string, l *client.Lease, seg, body string) reply {
		t.Helper()
		return send(sc.url, of(owner, l, path, seg, body))
	}
	release := func(regURL, owner string, l *client.Lease) {
		t.Helper()
		if _, err := registryClient(t, regURL, owner).Release(ctx, l.Lease); err != nil {
			t.Fatal(err)
		}
	}
	meta := func(regURL string) fencegate.Meta {
		t.Helper()
		c, _ := client.New(regURL) // --insecure-dev: admin from loopback
		m, err := c.Meta(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	lineageA := meta(regA.url).Lineage

	// Registry A: fences 1-4; fence 1's worker writes nothing.
	var grants []string
	var a4 *client.Lease
	for fence := uint64(1); fence <= 4; fence++ {
		owner := "worker-a" + string(rune('0'+fence))
		l := acquireAt(t, regA.url, owner, "7", 5*time.Minute, 0)
		if l.FenceToken != fence {
			t.Fatalf("registry A issued fence %d, want %d", l.FenceToken, fence)
		}
		grants = append(grants, l.Grant)
		switch fence {
		case 1:
		case 4:
			wantAccepted(t, "A's fence 4, segment 1", write(owner, l, "1", "A4-1"))
			wantAccepted(t, "A's fence 4, segment 2", write(owner, l, "2", "A4-2"))
			a4 = l // still held when A goes away
			continue
		default:
			wantAccepted(t, "A's fence", write(owner, l, "1", "A"+string(rune('0'+fence))))
		}
		release(regA.url, owner, l)
	}

	// A is replaced by B: an empty data dir, the same key.
	if err := regA.stop(); err != nil {
		t.Fatal(err)
	}
	dataB := t.TempDir()
	regB := startRegistry(t, dataB, "--listen", addr, "--config", cfgB)
	lineageB := meta(regB.url).Lineage
	if lineageB == lineageA || lineageB == "" {
		t.Fatalf("registry B's lineage %q, A's %q", lineageB, lineageA)
	}
	b1 := acquireAt(t, regB.url, "worker-b1", "7", time.Minute, 0)
	grants = append(grants, b1.Grant)
	if b1.FenceToken != 1 {
		t.Fatalf("registry B's first fence %d, want 1", b1.FenceToken)
	}
	wantProblem(t, "registry B's fence 1 below A's 4", write("worker-b1", b1, "1", "B1"), fencegate.CodeFenceRegression)
	wantPaused(t, sc.admin, "account/7")
	release(regB.url, "worker-b1", b1)

	// Resuming is not enough: B's next fence is still below A's.
	if r := run(t, "resume", "--admin", sc.admin, "--resource", "account/7"); r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}
	b2 := acquireAt(t, regB.url, "worker-b2", "7", time.Minute, 0)
	grants = append(grants, b2.Grant)
	wantProblem(t, "registry B's fence 2 without a floor", write("worker-b2", b2, "1", "B2"), fencegate.CodeFenceRegression)
	wantPaused(t, sc.admin, "account/7")
	release(regB.url, "worker-b2", b2)
	back.wantBodies(t, path, "A2", "A3", "A4-1", "A4-2")

	// The procedure. 1: the floor from every sidecar.
	r := run(t, "fences", "collect", "--sidecar", sc.admin, "--json")
	if r.code != 0 {
		t.Fatalf("fences collect: %+v", r)
	}
	var col struct {
		MaxFence, FenceFloor, MaxIssuerEpoch uint64
		Paused                               int
		Fences                               []struct {
			Resource     string
			HighestFence uint64
			Lineage      string
			Paused       string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &col); err != nil {
		t.Fatal(err)
	}
	if col.FenceFloor != 4 || col.MaxIssuerEpoch != 1 || col.Paused != 1 || len(col.Fences) != 1 ||
		col.Fences[0].Resource != "account/7" || col.Fences[0].HighestFence != 4 || col.Fences[0].Lineage != lineageA || col.Fences[0].Paused != "FENCE_REGRESSION" {
		t.Fatalf("fences collect: %s", r.stdout)
	}
	if r := run(t, "fences", "collect", "--sidecar", sc.admin); r.code != 0 || fields(r.stdout)["fence floor"] != "4" {
		t.Fatalf("fences collect (text): %+v", r)
	}
	// 2: the registry starts with the floor.
	if err := regB.stop(); err != nil {
		t.Fatal(err)
	}
	regB = startRegistry(t, dataB, "--listen", addr, "--config", cfgB, "--fence-floor", "4")
	if m := regexp.MustCompile(`lineage ([0-9a-z]+), fence floor (\d+), issuer epoch (\d+)\)`).FindStringSubmatch(regB.Output()); m == nil || m[1] != lineageB || m[2] != "4" {
		t.Fatalf("registry B's start line: %q", regB.Stdout())
	}
	// (--apply on the running registry: at the floor already, unchanged.)
	if r := run(t, "fences", "collect", "--sidecar", sc.admin, "--registry", regB.url, "--apply"); r.code != 0 || fields(r.stdout)["applied"] == "" ||
		!regexp.MustCompile(`is 4 already: unchanged`).MatchString(r.stdout) {
		t.Fatalf("fences collect --apply: %+v", r)
	}
	// 3: the epoch above every epoch the sidecars saw.
	// (curl -X POST $REG/v1/admin/epoch, as the guide says.)
	admin, _ := client.New(regB.url) // --insecure-dev: admin from loopback
	if m, err := admin.BumpEpoch(ctx); err != nil || m.IssuerEpoch <= col.MaxIssuerEpoch {
		t.Fatalf("epoch bump: %+v %v", m, err)
	}
	// 4: resume what paused.
	if r := run(t, "resume", "--admin", sc.admin, "--resource", "account/7"); r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}

	b5 := acquireAt(t, regB.url, "worker-b5", "7", time.Minute, 0)
	grants = append(grants, b5.Grant)
	if b5.FenceToken != 5 {
		t.Fatalf("registry B's fence after the floor: %d, want 5", b5.FenceToken)
	}
	wantAccepted(t, "registry B's fence 5", write("worker-b5", b5, "1", "B5"))
	rec, _ := storeRecord(t, sc.admin, "account/7")
	if rec.Pause != nil || rec.HighestFence != 5 || rec.Evidence.Lineage != lineageB || len(rec.PriorLineages) != 1 || rec.PriorLineages[0].Lineage != lineageA {
		t.Fatalf("the record after B's fence 5: %+v", rec)
	}
	// A's last grant, its proof still fresh: below the epoch the sidecar
	// saw in B's proofs; B's revoked grant likewise.
	wantProblem(t, "A's fence 4 after B's 5", write("worker-a4", a4, "3", "A4-3"), fencegate.CodeEpochRevoked)
	wantProblem(t, "B's revoked fence 2", write("worker-b2", b2, "1", "B2"), fencegate.CodeEpochRevoked)

	// A restarted sidecar forgot the epoch: the store's lineage rule
	// answers, STALE_OWNER without a pause (A's lineage was superseded).
	if err := sc.stop(); err != nil {
		t.Fatal(err)
	}
	sc = startSidecar(t, scCfg)
	wantProblem(t, "A's fence 4 at the restarted sidecar", write("worker-a4", a4, "3", "A4-3"), fencegate.CodeStaleOwner)
	if rec, _ := storeRecord(t, sc.admin, "account/7"); rec.Pause != nil || rec.HighestFence != 5 {
		t.Fatalf("a stale grant of the old lineage changed the record: %+v", rec)
	}
	wantAccepted(t, "registry B's fence 5, segment 2", write("worker-b5", b5, "2", "B5-2"))

	back.wantBodies(t, path, "A2", "A3", "A4-1", "A4-2", "B5", "B5-2")
	checkFinalData(t, sc.admin, back, "7", grants...)
}

// wantPaused fails unless the sidecar lists resource paused for
// FENCE_REGRESSION.
func wantPaused(t *testing.T, admin, resource string) {
	t.Helper()
	var paused []struct {
		Resource string `json:"resource"`
		Pause    struct {
			Reason string `json:"reason"`
		} `json:"pause"`
	}
	adminGet(t, admin, "/v1/paused", &paused)
	for _, p := range paused {
		if p.Resource == resource && p.Pause.Reason == "FENCE_REGRESSION" {
			return
		}
	}
	t.Fatalf("/v1/paused = %+v, want %s paused for FENCE_REGRESSION", paused, resource)
}
