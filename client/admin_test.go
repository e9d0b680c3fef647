package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// adminClients are a worker's client and an operator's, of one real
// registry over HTTP (registrytest.Serve: loopback callers are admins).
func adminClients(t *testing.T, owner string) (worker, operator *client.Client) {
	t.Helper()
	srv, _ := registrytest.Serve(t)
	worker, err := client.New(srv.URL, client.WithIdentityHeader(identity.DefaultHeader, owner))
	if err != nil {
		t.Fatal(err)
	}
	operator, err = client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return worker, operator
}

// TestAdminRevokeLease: an operator revokes a worker's lease; the
// worker's renewal is then ErrLeaseNotHeld, the lease's status is
// REVOKED, another worker acquires with a higher fence, a second revoke
// answers Revoked false, a missing lease is ErrNotFound.
func TestAdminRevokeLease(t *testing.T) {
	ctx := context.Background()
	worker, op := adminClients(t, "worker-a")
	l, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "adm/r1", RequestID: "rq-1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := op.RevokeLease(ctx, l.Lease, "incident 42")
	if err != nil || !ans.Revoked || ans.Lease.State != fencegate.StateRevoked || ans.Lease.Grant != "" {
		t.Fatalf("revoke: %+v, %v", ans, err)
	}
	if _, err := worker.Renew(ctx, l.Lease, 0); !errors.Is(err, client.ErrLeaseNotHeld) {
		t.Errorf("renew of the revoked lease: %v, want ErrLeaseNotHeld", err)
	}
	if st, err := worker.Status(ctx, l.Lease); err != nil || st.State != fencegate.StateRevoked {
		t.Errorf("status of the revoked lease: %+v, %v", st, err)
	}
	again, err := op.RevokeLease(ctx, l.Lease, "")
	if err != nil || again.Revoked {
		t.Errorf("second revoke: %+v, %v", again, err)
	}
	if _, err := op.RevokeLease(ctx, "lease-missing", ""); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("revoke of a missing lease: %v, want ErrNotFound", err)
	}
	if _, err := op.RevokeLease(ctx, "", ""); !errors.Is(err, client.ErrInvalidRequest) {
		t.Errorf("revoke of an empty lease ID: %v, want ErrInvalidRequest", err)
	}
	next, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "adm/r1", RequestID: "rq-2", TTL: time.Minute})
	if err != nil || next.FenceToken <= l.FenceToken {
		t.Errorf("acquire after revoke: %+v, %v (want a fence above %d)", next, err, l.FenceToken)
	}
	got, err := op.LeaseOf(ctx, "adm/r1")
	if err != nil || got.Lease != next.Lease || got.State != fencegate.StateHeld || got.Grant != "" {
		t.Errorf("lease of adm/r1: %+v, %v; want %s HELD without its grant", got, err, next.Lease)
	}
	if _, err := op.LeaseOf(ctx, "adm/never"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("lease of a resource never granted: %v, want ErrNotFound", err)
	}
	if _, err := op.LeaseOf(ctx, "adm/../x"); err == nil {
		t.Error("lease of a malformed resource: no error")
	}
}

// TestAdminLeases: the listing pages by Next and AllLeases reads them all
// in order; filters by resource, prefix and state reach the registry.
func TestAdminLeases(t *testing.T) {
	ctx := context.Background()
	worker, op := adminClients(t, "worker-a")
	for i, r := range []string{"adm/a", "adm/b", "adm/c", "zzz/d"} {
		if _, err := worker.Acquire(ctx, client.AcquireRequest{Resource: r, RequestID: "rq-" + string(rune('a'+i)), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "adm/b", RequestID: "rq-x", TTL: time.Minute}); !errors.Is(err, client.ErrLeaseHeld) {
		t.Fatalf("second acquire of adm/b: %v", err)
	}
	page, err := op.Leases(ctx, client.LeasesRequest{Prefix: "adm/", Limit: 2})
	if err != nil || len(page.Leases) != 2 || page.Next == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	all, err := op.AllLeases(ctx, client.LeasesRequest{Prefix: "adm/", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range all {
		got = append(got, l.Resource)
	}
	if len(got) != 3 || got[0] != "adm/a" || got[1] != "adm/b" || got[2] != "adm/c" {
		t.Errorf("all leases of adm/ by pages of 1: %v", got)
	}
	if one, err := op.Leases(ctx, client.LeasesRequest{Resource: "zzz/d", State: fencegate.StateHeld}); err != nil || len(one.Leases) != 1 {
		t.Errorf("leases of zzz/d: %+v, %v", one, err)
	}
	if none, err := op.Leases(ctx, client.LeasesRequest{State: fencegate.StateReleased}); err != nil || len(none.Leases) != 0 {
		t.Errorf("released leases: %+v, %v", none, err)
	}
	if _, err := op.Leases(ctx, client.LeasesRequest{After: "not-a-cursor"}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Errorf("a bad cursor: %v, want ErrInvalidRequest", err)
	}
}

// TestAdminEpochFloorPoliciesMeta: the Go client calls every other admin
// route: the epoch bump revokes a held lease, a fence floor raises the
// next fence, a policy is put, listed and deleted (a second delete is
// ErrNotFound), and the meta reads the state after them.
func TestAdminEpochFloorPoliciesMeta(t *testing.T) {
	ctx := context.Background()
	worker, op := adminClients(t, "worker-a")
	l, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "adm/e", RequestID: "rq-e", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m, err := op.BumpEpoch(ctx)
	if err != nil || m.IssuerEpoch != 2 {
		t.Fatalf("bump epoch: %+v, %v", m, err)
	}
	if st, err := worker.Status(ctx, l.Lease); err != nil || st.State != fencegate.StateRevoked {
		t.Errorf("lease after the bump: %+v, %v", st, err)
	}
	fl, err := op.FenceFloor(ctx, "adm/f", 40)
	if err != nil || fl.Resource.Resource != "adm/f" || fl.Resource.FenceFloor != 40 || fl.Meta.IssuerEpoch != 2 {
		t.Errorf("fence floor: %+v, %v", fl, err)
	}
	if err := op.RaiseFenceFloor(ctx, "", 10); err != nil {
		t.Errorf("global fence floor: %v", err)
	}
	if f, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "adm/f", RequestID: "rq-f", TTL: time.Minute}); err != nil || f.FenceToken <= 40 {
		t.Errorf("acquire above the floor: %+v, %v", f, err)
	}
	p, err := op.PutPolicy(ctx, fencegate.Policy{Pattern: "adm/p/*", MaxTTLMs: 5000})
	if err != nil || p.Generation == 0 {
		t.Fatalf("put policy: %+v, %v", p, err)
	}
	ps, err := op.Policies(ctx)
	if err != nil || len(ps) != 1 || ps[0].Pattern != "adm/p/*" {
		t.Errorf("policies: %+v, %v", ps, err)
	}
	del, err := op.DeletePolicy(ctx, "adm/p/*")
	if err != nil || !del.Deleted || del.Generation <= p.Generation {
		t.Errorf("delete policy: %+v, %v", del, err)
	}
	if _, err := op.DeletePolicy(ctx, "adm/p/*"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	meta, err := op.Meta(ctx)
	if err != nil || meta.IssuerEpoch != 2 || meta.FenceFloor != 10 || meta.PolicySeq < 2 {
		t.Errorf("meta: %+v, %v", meta, err)
	}
}
