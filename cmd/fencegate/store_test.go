package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestAcknowledgeLossUnanchoredSidecar: against a real sidecar whose
// store is not anchored at the registry (no GET /v1/store), store
// acknowledge-loss says that this sidecar's store does not support it and
// that nothing was sent to the registry, exit 6 (not found).
func TestAcknowledgeLossUnanchoredSidecar(t *testing.T) {
	reg, bundle := registrytest.Serve(t)
	srv := runSidecarServer(t, `{url: "http://127.0.0.1:9"}`, reg.URL, bundle)
	dir := t.TempDir()

	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "store", "acknowledge-loss", "--sidecar", "http://"+srv.AdminAddr(), "--registry", reg.URL, "--admin-token-file", tok)
	if r.code != exitNotFound {
		t.Errorf("exit %d, want %d", r.code, exitNotFound)
	}
	for _, w := range []string{"this sidecar's store does not support acknowledge-loss", "nothing was sent to the registry", "--store"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "no such route") && !strings.Contains(r.stderr, "does not support") {
		t.Errorf("the bare route error:\n%s", r.stderr)
	}
}

// TestAcknowledgeLossOfAStoreNotLost: the explicit form (--store,
// --generation, no --sidecar) naming a generation the store never
// presented, for a store that lost nothing, is refused by the real
// registry (409 CONFLICT, exit 1) and changes nothing: the anchored
// generation stays, and the store's sidecar still accepts writes (an
// adopted wrong generation would refuse all of them until the real one
// was acknowledged). The anchored generation itself is a no-op, exit 0.
func TestAcknowledgeLossOfAStoreNotLost(t *testing.T) {
	reg, bundle := registrytest.Serve(t)
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	t.Cleanup(back.Close)
	srv := runSidecarServerStore(t, `{url: "`+back.URL+`"}`, reg.URL, bundle, "{backend: memory, service: billing-api}")
	s := &testSidecar{reg: reg.URL, addr: srv.Addr(), admin: "http://" + srv.AdminAddr()}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := wantExit(t, "store status", runCLI(t, "store", "status", "--sidecar", s.admin), exitOK)
	var st adminapi.StoreStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Lost || st.Generation == "" {
		t.Fatalf("store status of a store not lost: %+v %v", st, err)
	}
	typo := st.Generation[:len(st.Generation)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", st.Generation[len(st.Generation)-1])+1)%16])
	r = wantExit(t, "acknowledge a generation not presented",
		runCLI(t, "store", "acknowledge-loss", "--store", "billing-api", "--generation", typo, "--registry", reg.URL, "--admin-token-file", tok), exitFailure)
	for _, w := range []string{"409 CONFLICT", "has not presented generation \"" + typo + "\"", "no loss of it is reported", "nothing was changed"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	rc, err := client.New(reg.URL, client.WithIdentityHeader(identity.DefaultHeader, "billing-api"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.StoreAnchor(context.Background(), "billing-api")
	if err != nil || v.Generation != st.Generation || v.Acknowledged != 0 {
		t.Fatalf("the store at the registry after the refused acknowledgement: %+v %v", v, err)
	}
	h := holdFor(t, reg.URL, "worker-a", "item/1")
	if code, rcpt := s.put(t, h, "1", 1); code != http.StatusCreated {
		t.Fatalf("a write after the refused acknowledgement: %d %s", code, rcpt)
	}
	r = wantExit(t, "acknowledge the anchored generation",
		runCLI(t, "store", "acknowledge-loss", "--store", "billing-api", "--generation", st.Generation, "--registry", reg.URL, "--admin-token-file", tok), exitOK)
	if !strings.Contains(r.stdout, `"generation": "`+st.Generation+`"`) || strings.Contains(r.stdout, `"acknowledged"`) {
		t.Errorf("acknowledging the anchored generation:\n%s", r.stdout)
	}
}
