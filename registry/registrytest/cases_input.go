package registrytest

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testBadInput checks that malformed identifiers and out-of-bounds TTLs or
// waits fail with ErrInvalidInput and change nothing, and that the longest
// legal identifiers are accepted.
func testBadInput(t *testing.T, e *env) {
	const held, free = "bad/held", "bad/free"
	reg := e.registry
	h := e.acquire(t, req(held, "owner-h", "bi-h", time.Minute))

	base := req(free, "owner-b", "bi-1", time.Second)
	with := func(f func(*registry.AcquireRequest)) registry.AcquireRequest {
		r := base
		f(&r)
		return r
	}
	resource := func(s string) registry.AcquireRequest {
		return with(func(r *registry.AcquireRequest) { r.Resource = s })
	}
	owner := func(s string) registry.AcquireRequest {
		return with(func(r *registry.AcquireRequest) { r.Owner = s })
	}
	requestID := func(s string) registry.AcquireRequest {
		return with(func(r *registry.AcquireRequest) { r.RequestID = s })
	}
	cases := map[string]registry.AcquireRequest{
		"empty resource":          resource(""),
		"oversized resource":      resource(strings.Repeat("r", fencegate.MaxResourceLen+1)),
		"resource with space":     resource("bad/free r"),
		"resource with NUL":       resource("bad/free\x00"),
		"resource with non-ASCII": resource("bad/frée"),
		"resource with ?":         resource("bad/free?x=1"),
		"resource trailing /":     resource("bad/free/"),
		"resource leading /":      resource("/bad/free"),
		"resource empty segment":  resource("bad//free"),
		"resource . segment":      resource("bad/./free"),
		"resource .. segment":     resource("bad/../free"),
		"empty owner":             owner(""),
		"oversized owner":         owner(strings.Repeat("o", registry.MaxOwnerLen+1)),
		"owner with space":        owner("owner b"),
		"owner with newline":      owner("owner-b\n"),
		"owner with *":            owner("owner-*"),
		"empty request ID":        requestID(""),
		"oversized request ID":    requestID(strings.Repeat("q", registry.MaxRequestIDLen+1)),
		"request ID with /":       requestID("bi/1"),
		"request ID with space":   requestID("bi 1"),
		"illegal op class":        with(func(r *registry.AcquireRequest) { r.OpClass = "write all" }),
		"oversized op class":      with(func(r *registry.AcquireRequest) { r.OpClass = strings.Repeat("c", registry.MaxOpClassLen+1) }),
		"TTL below minimum":       with(func(r *registry.AcquireRequest) { r.TTL = MinTTL - time.Millisecond }),
		"TTL of 1ns":              with(func(r *registry.AcquireRequest) { r.TTL = time.Nanosecond }),
		"negative TTL":            with(func(r *registry.AcquireRequest) { r.TTL = -time.Second }),
		"TTL above maximum":       with(func(r *registry.AcquireRequest) { r.TTL = MaxTTL + time.Millisecond }),
		"negative wait":           with(func(r *registry.AcquireRequest) { r.Wait = -time.Nanosecond }),
		"wait above maximum":      with(func(r *registry.AcquireRequest) { r.Wait = MaxWait + time.Millisecond }),
		"bad input on held":       with(func(r *registry.AcquireRequest) { r.Resource, r.Owner = held, "" }),
		"bad input, held, waits":  with(func(r *registry.AcquireRequest) { r.Resource, r.RequestID, r.Wait = held, "", time.Second }),
		"wait on bad resource":    with(func(r *registry.AcquireRequest) { r.Resource, r.Wait = "bad//free", time.Second }),
		"repeat of held, bad TTL": with(func(r *registry.AcquireRequest) {
			r.Resource, r.Owner, r.RequestID, r.TTL = held, "owner-h", "bi-h", MaxTTL+1
		}),
	}
	before := e.snapshot(t, held, free, "bad", "/bad/free", "bad/free/", "bad//free")
	for name, rq := range cases {
		_, err := e.tryAcquire(t, rq)
		if !errors.Is(err, registry.ErrInvalidInput) {
			t.Errorf("%s: acquire error %v, want ErrInvalidInput", name, err)
		}
	}
	e.waitQueued(t, 0)
	if _, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: "owner-b", RequestID: "bi-1", Now: e.clock.Now()}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("an invalid acquire recorded its request ID: %v", err)
	}

	// Other calls with bad input.
	_, err := reg().Renew(e.ctx, "owner-h", h.View.Lease.Lease, MaxTTL+time.Millisecond)
	wantErr(t, "renew with a TTL above the maximum", err, registry.ErrInvalidInput)
	_, err = reg().Status(e.ctx, registry.LeaseQuery{})
	wantErr(t, "status with an empty query", err, registry.ErrInvalidInput)
	_, err = reg().Status(e.ctx, registry.LeaseQuery{Owner: "owner-h"})
	wantErr(t, "status by owner without a request ID", err, registry.ErrInvalidInput)
	_, _, err = reg().RaiseFenceFloor(e.ctx, "bad//free", 100)
	wantErr(t, "fence floor of an illegal resource", err, registry.ErrInvalidInput)
	_, err = reg().Resource(e.ctx, "bad/../free")
	wantErr(t, "read of an illegal resource", err, registry.ErrInvalidInput)
	_, err = reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "bad/*", AllowedOwners: []string{""}})
	wantErr(t, "policy with an empty owner", err, registry.ErrInvalidInput)
	e.unchanged(t, "invalid input", before)
	if st := e.status(t, h); st.View.State != fencegate.StateHeld || st.View.Lease != h.View.Lease {
		t.Errorf("the holder changed after invalid input: %s %+v", st.View.State, st.View.Lease)
	}

	// The longest legal identifiers and the TTL and wait bounds are accepted.
	long := registry.AcquireRequest{
		Resource:  strings.Repeat("r", fencegate.MaxResourceLen),
		Owner:     strings.Repeat("o", registry.MaxOwnerLen),
		RequestID: strings.Repeat("q", registry.MaxRequestIDLen),
		OpClass:   strings.Repeat("c", registry.MaxOpClassLen),
		TTL:       MaxTTL,
	}
	e.acquire(t, long)
	for i, rq := range []registry.AcquireRequest{
		{Resource: "bad/ok-1:a@b~c/d_e.f-g", Owner: "spiffe://fencegate.test/ns/x/sa/w@1", RequestID: "A-z_0.9:x", TTL: MinTTL},
		{Resource: "bad/ok-2", Owner: "owner-b", RequestID: "bi-ok-2", TTL: MaxTTL, Wait: MaxWait},
		{Resource: "bad/ok-3", Owner: "owner-b", RequestID: "bi-ok-3"}, // default TTL
	} {
		r := e.acquire(t, rq)
		want := rq.TTL
		if want == 0 {
			want = DefaultTTL
		}
		if r.View.Lease.TTLMs != uint64(want.Milliseconds()) || r.View.Lease.ExpiresAt != ms(e.clock.Now())+want.Milliseconds() {
			t.Errorf("legal request %d: ttl %dms expiresAt %d", i, r.View.Lease.TTLMs, r.View.Lease.ExpiresAt)
		}
	}
}

// testBadInputBackend calls Backend.Acquire directly with input the
// Registry would never send: it must refuse it without sealing a grant or
// writing anything.
func testBadInputBackend(t *testing.T, e *env) {
	const res = "badbe/r1"
	be := e.backend()
	sealed := 0
	seal := func(c *fencegate.Grant) ([]byte, error) {
		sealed++
		return e.keys.Signer.Sign(fencegate.GrantSchema, c)
	}
	good := registry.AcquireInput{Resource: res, Owner: "owner-a", RequestID: "bb-1", OpClass: "write",
		TTL: time.Second, Issuer: Issuer, LeaseID: "lease-bb-1", GrantID: "g-bb-1", Lineage: "0123456789abcdef0123456789abcdef", Now: e.clock.Now()}
	bad := map[string]func(*registry.AcquireInput){
		"no lease ID":      func(in *registry.AcquireInput) { in.LeaseID = "" },
		"no grant ID":      func(in *registry.AcquireInput) { in.GrantID = "" },
		"zero TTL":         func(in *registry.AcquireInput) { in.TTL = 0 },
		"sub-ms TTL":       func(in *registry.AcquireInput) { in.TTL = time.Microsecond },
		"no op class":      func(in *registry.AcquireInput) { in.OpClass = "" },
		"illegal resource": func(in *registry.AcquireInput) { in.Resource = "a/../b" },
		"illegal owner":    func(in *registry.AcquireInput) { in.Owner = "a b" },
		"illegal request":  func(in *registry.AcquireInput) { in.RequestID = "a/b" },
		// The data set has no lineage yet (no Init, no grant): the first
		// grant must bring a well-formed one.
		"no lineage":        func(in *registry.AcquireInput) { in.Lineage = "" },
		"malformed lineage": func(in *registry.AcquireInput) { in.Lineage = "ABC" },
	}
	before := e.snapshot(t, res)
	for name, f := range bad {
		in := good
		f(&in)
		_, err := be.Acquire(e.ctx, in, seal)
		if !errors.Is(err, registry.ErrInvalidInput) {
			t.Errorf("backend acquire, %s: error %v, want ErrInvalidInput", name, err)
		}
	}
	_, err := be.Lease(e.ctx, registry.LeaseQuery{Now: e.clock.Now()})
	wantErr(t, "backend lease query without a key", err, registry.ErrInvalidInput)
	e.unchanged(t, "invalid backend input", before)
	if sealed != 0 {
		t.Errorf("invalid input sealed %d grants", sealed)
	}

	// A sealing failure writes nothing either.
	failing := func(*fencegate.Grant) ([]byte, error) { return nil, errors.New("signer down") }
	if _, err := be.Acquire(e.ctx, good, failing); err == nil {
		t.Fatal("acquire with a failing seal succeeded")
	}
	e.unchanged(t, "a failed seal", before)

	res1, err := be.Acquire(e.ctx, good, seal)
	if err != nil || !res1.Granted || sealed != 1 {
		t.Fatalf("backend acquire: %+v %v (sealed %d)", res1, err, sealed)
	}
	// A retry with fresh IDs returns the stored grant and seals nothing.
	retry := good
	retry.LeaseID, retry.GrantID = "lease-bb-2", "g-bb-2"
	res2, err := be.Acquire(e.ctx, retry, seal)
	if err != nil || !res2.Existing || res2.View.Lease.Lease != "lease-bb-1" || !bytes.Equal([]byte(res2.View.Lease.Token), []byte(res1.View.Lease.Token)) || sealed != 1 {
		t.Errorf("backend retry: %+v %v (sealed %d)", res2, err, sealed)
	}
}
