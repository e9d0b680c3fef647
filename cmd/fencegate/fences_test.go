package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	regmem "github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
	"github.com/fencegate/fencegate/verify/verifytest"
)

const adminToken = "sidecar-admin-token"

// fencesSidecar is a real sidecar's admin API over a memory store holding
// fences[resource] (first segment committed, lineage l, epoch epoch),
// reached from outside loopback, so only the admin token lets a caller in.
func fencesSidecar(t *testing.T, l string, epoch uint64, fences map[string]uint64) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	for res, fence := range fences {
		in := storetest.Attempt(res, fence, 1, "p")
		in.Evidence = store.Evidence{IssuerEpoch: epoch, BackendRevision: fence, Lineage: l}
		if r, err := st.Begin(ctx, in); err != nil || r.Decision != store.DecisionProceed {
			t.Fatalf("seeding %s: %v %v", res, r.Decision, err)
		}
		if _, err := st.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
			t.Fatal(err)
		}
	}
	cfg := proxy.Config{
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:1", Timeout: time.Minute},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: verifytest.BundleFile(t, verifytest.NewIssuer(t, jwa.EdDSA))},
	}
	cfg.SetDefaults()
	p, err := proxy.New(proxy.Options{Config: cfg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	h, err := adminapi.New(adminapi.Options{Proxy: p, Token: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = "10.9.8.7:4000" // a port-forwarded caller is on loopback; this one is not
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fencesRegistry is a real registry over the memory backend, admin from
// loopback.
func fencesRegistry(t *testing.T) (*registry.Registry, string) {
	t.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := keys.NewSigner(key)
	reg, err := registry.New(registry.Options{Backend: regmem.NewBackend(), Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.Start(t, reg)
	if _, err := reg.Init(context.Background(), registry.InitOptions{}); err != nil { // as the server does before serving
		t.Fatal(err)
	}
	res, _ := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	jwks, _ := keys.Bundle(false, key)
	h, err := httpapi.New(httpapi.Options{Registry: reg, Identity: res, JWKS: jwks, Admin: httpapi.Admin{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return reg, srv.URL
}

func tokenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	oldLineage = "0123456789abcdef0123456789abcdef"
	newLineage = "fedcba9876543210fedcba9876543210"
)

// TestFencesCollect: two sidecars with their own stores, one of them
// over more than one page; collect takes per resource the highest fence
// any sidecar accepted, and the floor is the highest of them all; the
// issuer epoch to exceed is the highest a sidecar accepted.
func TestFencesCollect(t *testing.T) {
	big := map[string]uint64{}
	for i := range 1500 {
		big[fmt.Sprintf("item/%04d", i)] = uint64(i%700 + 1)
	}
	big["item/0042"] = 9000
	a := fencesSidecar(t, oldLineage, 3, big)
	b := fencesSidecar(t, newLineage, 1, map[string]uint64{"item/0042": 12, "item/0007": 4000, "other/x": 5})
	r := runCLI(t, "fences", "collect", "--sidecar", a.URL, "--sidecar", b.URL+"/", "--sidecar", a.URL, "--admin-token-file", tokenFile(t), "--json")
	if r.code != 0 {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	var col collection
	if err := json.Unmarshal([]byte(r.stdout), &col); err != nil {
		t.Fatal(err)
	}
	if col.MaxFence != 9000 || col.FenceFloor != 9000 || col.MaxFenceResource != "item/0042" || col.MaxIssuerEpoch != 3 || len(col.Fences) != 1501 || col.FloorReason == "" {
		t.Fatalf("collection: max %d (%s), floor %d, epoch %d, %d resources", col.MaxFence, col.MaxFenceResource, col.FenceFloor, col.MaxIssuerEpoch, len(col.Fences))
	}
	if len(col.Sidecars) != 2 || col.Sidecars[0].Pages != 2 || col.Sidecars[0].Resources != 1500 || col.Sidecars[1].Resources != 3 || col.Sidecars[1].MaxFence != 4000 {
		t.Fatalf("sidecars: %+v (a repeated --sidecar is asked once)", col.Sidecars)
	}
	want := map[string]collectedFence{
		"item/0042": {Resource: "item/0042", HighestFence: 9000, Lineage: oldLineage, IssuerEpoch: 3, Sidecar: a.URL, Sidecars: 2},
		"item/0007": {Resource: "item/0007", HighestFence: 4000, Lineage: newLineage, IssuerEpoch: 1, Sidecar: b.URL + "/", Sidecars: 2},
		"other/x":   {Resource: "other/x", HighestFence: 5, Lineage: newLineage, IssuerEpoch: 1, Sidecar: b.URL + "/", Sidecars: 1},
		"item/0701": {Resource: "item/0701", HighestFence: 2, Lineage: oldLineage, IssuerEpoch: 3, Sidecar: a.URL, Sidecars: 1},
	}
	for _, c := range col.Fences {
		if w, ok := want[c.Resource]; ok {
			if c != w {
				t.Errorf("%s: %+v, want %+v", c.Resource, c, w)
			}
			delete(want, c.Resource)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing from the collection: %v", want)
	}
	if !strings.Contains(r.stderr, "1500 resources in 2 pages, highest fence 9000") {
		t.Errorf("progress on stderr:\n%s", r.stderr)
	}

	// The text output: the table, the floor and why it is enough.
	r = runCLI(t, "fences", "collect", "--sidecar", b.URL, "--admin-token-file", tokenFile(t))
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	s := r.stdout
	for _, w := range []string{"RESOURCE", "HIGHEST FENCE", "LINEAGE", "SIDECAR", "item/0007", "4000", newLineage, "fence floor:", "--fence-floor 4000",
		"every fence it issues is above every fence any of these sidecars accepted", "above 1"} {
		if !strings.Contains(s, w) {
			t.Errorf("text output lacks %q:\n%s", w, s)
		}
	}
	if f := fields(s); f["fence floor"] != "4000" || f["highest fence"] != "4000 (item/0007)" {
		t.Errorf("fields %v", f)
	}
}

// fields parses "key: value" lines.
func fields(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// TestFencesCollectApply: --apply raises the registry's global floor to
// the collected one, so its next fence is above every fence accepted; it
// never lowers a higher floor.
func TestFencesCollectApply(t *testing.T) {
	ctx := context.Background()
	sc := fencesSidecar(t, oldLineage, 1, map[string]uint64{"item/1": 40, "item/2": 77})
	reg, regURL := fencesRegistry(t)
	apply := func() *appliedFloor {
		t.Helper()
		r := runCLI(t, "fences", "collect", "--sidecar", sc.URL, "--admin-token-file", tokenFile(t), "--registry", regURL, "--apply", "-o", "json")
		if r.code != 0 {
			t.Fatal(r.stderr)
		}
		var col collection
		if err := json.Unmarshal([]byte(r.stdout), &col); err != nil || col.Applied == nil {
			t.Fatalf("%v %s", err, r.stdout)
		}
		return col.Applied
	}
	if a := apply(); !a.Raised || a.Before != 0 || a.After != 77 || a.Lineage == "" {
		t.Fatalf("first apply: %+v", a)
	}
	c, _ := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, "worker"))
	l, err := c.Acquire(ctx, client.AcquireRequest{Resource: "item/1", RequestID: "r1", TTL: time.Second})
	if err != nil || l.FenceToken != 78 {
		t.Fatalf("first fence after the floor: %v %v, want 78", l, err)
	}
	if a := apply(); a.Raised || a.Before != 77 || a.After != 77 {
		t.Fatalf("second apply: %+v", a)
	}
	if _, _, err := reg.RaiseFenceFloor(ctx, "", 500); err != nil {
		t.Fatal(err)
	}
	if a := apply(); a.Raised || a.Before != 500 || a.After != 500 {
		t.Fatalf("apply below the registry's floor: %+v, want unchanged", a)
	}
	if m, _ := reg.Meta(ctx); m.FenceFloor != 500 {
		t.Fatalf("the floor went to %d", m.FenceFloor)
	}
}

// TestFencesCollectFailsClosed: a sidecar that cannot be read (down,
// refusing the caller, not serving the list) fails the whole collection:
// no floor is printed and nothing is applied, because a floor from some
// sidecars only can be below a fence another accepted.
func TestFencesCollectFailsClosed(t *testing.T) {
	ctx := context.Background()
	good := fencesSidecar(t, oldLineage, 1, map[string]uint64{"item/1": 40})
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }))
	t.Cleanup(old.Close)
	reg, regURL := fencesRegistry(t)
	tok := tokenFile(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"a sidecar down", []string{"--sidecar", good.URL, "--sidecar", downURL, "--admin-token-file", tok}},
		{"no admin token", []string{"--sidecar", good.URL}},
		{"a sidecar without the list", []string{"--sidecar", old.URL, "--sidecar", good.URL, "--admin-token-file", tok}},
	} {
		r := runCLI(t, append(append([]string{"fences", "collect"}, c.args...), "--registry", regURL, "--apply")...)
		if r.code == 0 || !strings.Contains(r.stderr, "no floor") || r.stdout != "" {
			t.Errorf("%s: exit %d %s, output %q; want an error and no output", c.name, r.code, r.stderr, r.stdout)
		}
	}
	if m, _ := reg.Meta(ctx); m.FenceFloor != 0 {
		t.Fatalf("a failed collection raised the floor to %d", m.FenceFloor)
	}
	for _, args := range [][]string{
		{}, {"--apply", "--sidecar", good.URL}, {"--sidecar", good.URL, "--registry", regURL}, {"--sidecar", good.URL, "extra"},
	} {
		if r := runCLI(t, append([]string{"fences", "collect"}, args...)...); r.code != exitUsage {
			t.Errorf("%v: exit %d %s, want a usage error", args, r.code, r.stderr)
		}
	}
	if r := runCLI(t, "fences", "gather"); r.code != exitUsage {
		t.Errorf("fences gather: exit %d %s", r.code, r.stderr)
	}
}
