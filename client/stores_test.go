package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	regserver "github.com/fencegate/fencegate/registry/server"
)

// startRegistry runs a real registry (memory backend, identity from the
// header, admin by the token "s3cret") for the test and returns its URL.
func startRegistry(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	token := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rc := regserver.Default()
	rc.Listen = "127.0.0.1:0"
	rc.Backend = "memory"
	rc.DataDir = filepath.Join(dir, "registry")
	rc.Identity = identity.Config{Mode: identity.ModeInsecureHeader}
	rc.Admin.TokenFile = token
	rs, err := regserver.New(rc, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rs.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + rs.Addr()
}

func newClient(t *testing.T, url, who string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, append([]client.Option{client.WithIdentityHeader(identity.DefaultHeader, who)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const payload = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// TestStoreAnchorCalls drives every store anchor call against a real
// registry, with the errors mapped to the SDK's sentinels.
func TestStoreAnchorCalls(t *testing.T) {
	url := startRegistry(t)
	ctx := context.Background()
	sc := newClient(t, url, "spiffe://test/sidecar")
	op := newClient(t, url, "operator", client.WithAdminToken("s3cret"))

	a, created, err := sc.RegisterStore(ctx, "billing", "gen-1")
	if err != nil || !created || a.Generation != "gen-1" || fencegate.ValidateLineage(a.Lineage) != nil {
		t.Fatalf("first registration: %+v %v %v", a, created, err)
	}
	if _, created, err := sc.RegisterStore(ctx, "billing", "gen-1"); err != nil || created {
		t.Fatalf("same generation: created %v, %v", created, err)
	}
	var items []fencegate.AnchorItem
	for i := range 3 {
		items = append(items, fencegate.AnchorItem{Resource: fmt.Sprintf("inv/%d", i), Op: fencegate.AnchorBegin,
			Next: fencegate.Progress{Fence: 1, Root: "r", Pending: &fencegate.PendingOp{Seq: 1, PayloadDigest: payload}}})
	}
	resp, err := sc.AnchorProgress(ctx, "billing", fencegate.AnchorRequest{Generation: "gen-1", Items: items})
	if err != nil || resp.Lineage != a.Lineage || resp.Results[2].Outcome != fencegate.AnchorAnchored {
		t.Fatalf("anchor: %+v %v", resp, err)
	}
	resp, err = sc.AnchorProgress(ctx, "billing", fencegate.AnchorRequest{Generation: "gen-1", Items: items[:1]})
	if err != nil || resp.Results[0].Outcome != fencegate.AnchorLoss {
		t.Fatalf("the same Begin again (its Prior no longer covers the anchor): %+v %v", resp, err)
	}
	var listed []string
	for after := ""; ; {
		page, err := sc.StoreAnchors(ctx, "billing", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Anchors {
			listed = append(listed, r.Resource)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if strings.Join(listed, ",") != "inv/0,inv/1,inv/2" {
		t.Fatalf("listed %v", listed)
	}
	led, err := sc.RecordLedger(ctx, "billing", fencegate.LedgerBody{Shape: "PUT /v1/items/{}", Kind: fencegate.LedgerEnforce})
	if err != nil || len(led.Ledger) != 1 || led.Resources != 3 || led.Losses != 1 {
		t.Fatalf("ledger: %+v %v", led, err)
	}

	// The store comes back as another data set.
	_, _, err = sc.RegisterStore(ctx, "billing", "gen-2")
	var cerr *client.Error
	if !errors.Is(err, client.ErrStoreLost) || !errors.As(err, &cerr) || cerr.Problem.Extra["anchored"] != "gen-1" || cerr.Problem.Extra["presented"] != "gen-2" {
		t.Fatalf("another generation: %v", err)
	}
	if _, err := sc.AnchorProgress(ctx, "billing", fencegate.AnchorRequest{Generation: "gen-2", Items: items[:1]}); !errors.Is(err, client.ErrStoreLost) {
		t.Fatalf("anchor with the lost generation: %v", err)
	}
	if _, err := sc.AcknowledgeStoreLoss(ctx, "billing", "gen-2"); !errors.Is(err, client.ErrAdminRequired) {
		t.Fatalf("acknowledge without the admin token: %v", err)
	}
	ack, err := op.AcknowledgeStoreLoss(ctx, "billing", "gen-2")
	if err != nil || ack.Generation != "gen-2" || ack.Acknowledged != 1 {
		t.Fatalf("acknowledge: %+v %v", ack, err)
	}
	if st, err := sc.StoreAnchor(ctx, "billing"); err != nil || st.Generation != "gen-2" || len(st.Ledger) != 1 {
		t.Fatalf("store after the acknowledgement: %+v %v", st, err)
	}
	if m, err := op.Meta(ctx); err != nil || m.Lineage != a.Lineage {
		t.Fatalf("meta: %+v %v, want lineage %q", m, err, a.Lineage)
	}

	// Other refusals.
	if _, err := sc.AnchorProgress(ctx, "never", fencegate.AnchorRequest{Generation: "g", Items: items[:1]}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("anchor of an unregistered store: %v", err)
	}
	if _, err := sc.AnchorProgress(ctx, "billing", fencegate.AnchorRequest{Generation: "gen-2"}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Errorf("an empty batch: %v", err)
	}
	if _, err := newClient(t, url, "").StoreAnchor(ctx, "billing"); !errors.Is(err, client.ErrIdentityRequired) {
		t.Errorf("no identity: %v", err)
	}
	if _, err := op.PutPolicy(ctx, fencegate.Policy{Pattern: "fencegate-store/billing", AllowedOwners: []string{"spiffe://test/sidecar"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(t, url, "spiffe://test/intruder").StoreAnchors(ctx, "billing", "", 0); !errors.Is(err, client.ErrPolicyDenied) {
		t.Errorf("a caller the store's policy refuses: %v", err)
	}
	if _, err := sc.StoreAnchors(ctx, "billing", "", 0); err != nil {
		t.Errorf("the allowed sidecar: %v", err)
	}
	// A malformed store name never reaches the registry as a path.
	for _, s := range []string{"", "..", "a/../b", "a?b", "a%2Fb"} {
		if _, _, err := sc.RegisterStore(ctx, s, "g"); !errors.Is(err, fencegate.ErrInvalidAnchor) {
			t.Errorf("store %q: %v, want a local ErrInvalidAnchor", s, err)
		}
	}
}

// TestGrantClaimsWithAndWithoutLineage: the SDK reads its own grant
// whether the registry that issued it sets the lineage claim or not.
func TestGrantClaimsWithAndWithoutLineage(t *testing.T) {
	url := startRegistry(t)
	l, err := newClient(t, url, "worker").Acquire(context.Background(), client.AcquireRequest{Resource: "inv/1", RequestID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := client.GrantClaims(l.Grant)
	if err != nil || fencegate.ValidateLineage(g.Lineage) != nil || g.FenceToken != l.FenceToken {
		t.Fatalf("a grant with lineage: %+v %v", g, err)
	}
	// The same claims without the member, as a registry before lineages
	// issued them (the SDK does not verify its own grant's signature).
	parts := strings.Split(l.Grant, ".")
	old := parts[0] + "." + strings.TrimRight(encodeWithout(t, parts[1], "lineage"), "=") + "." + parts[2]
	g2, err := client.GrantClaims(old)
	if err != nil || g2.Lineage != "" || g2.FenceToken != l.FenceToken || g2.OperationRoot != g.OperationRoot {
		t.Fatalf("a grant without lineage: %+v %v", g2, err)
	}
}
