package proxy_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// TestSegmentAboveStoreMaxIsHeaderInvalid: a Fence-Segment the store cannot
// hold (above fencegate.MaxSeq) is bad input, 400 FENCE_HEADER_INVALID, and
// never reaches the store or the backend; fencegate.MaxSeq itself reaches the
// store (here a gap).
func TestSegmentAboveStoreMaxIsHeaderInvalid(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	send := func(seg string) answer {
		return f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: seg, body: "x"})
	}
	send("1").expect(t, http.StatusCreated, "")
	before, _ := f.record("item/1")
	n := f.back.count()
	for _, seg := range []string{strconv.FormatUint(fencegate.MaxSeq+1, 10), "18446744073709551615", "0004294967296"} {
		a := send(seg)
		a.expect(t, http.StatusBadRequest, fencegate.CodeFenceHeaderInvalid)
		if a.header.Get("Retry-After") != "" {
			t.Fatalf("segment %s: bad input must not ask for a retry", seg)
		}
		if rec, _ := f.record("item/1"); !reflect.DeepEqual(rec, before) {
			t.Fatalf("segment %s changed the record: %+v -> %+v", seg, before, rec)
		}
		if f.back.count() != n {
			t.Fatalf("segment %s reached the backend", seg)
		}
	}
	send(strconv.FormatUint(fencegate.MaxSeq, 10)).expect(t, http.StatusConflict, fencegate.CodeSegmentGap)
}

// TestGrantClaimsBeyondStoreLimits: an authentic grant whose lease or
// operation root the store cannot hold is GRANT_INVALID (an oversized or
// malformed claim), not a store outage; nothing is written or forwarded.
func TestGrantClaimsBeyondStoreLimits(t *testing.T) {
	f := newFixture(t)
	cases := map[string]func(*fencegate.Grant){
		"oversized lease": func(g *fencegate.Grant) { g.Lease = strings.Repeat("l", store.MaxLeaseLen+1) },
		"oversized root":  func(g *fencegate.Grant) { g.OperationRoot = strings.Repeat("r", fencegate.MaxRootLen+1) },
		"newline in root": func(g *fencegate.Grant) { g.OperationRoot = "root\nx" },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			tok, g := f.crafted("doc/1", "worker-a", 5, mut)
			a := f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), body: "x"})
			a.expect(t, http.StatusUnauthorized, fencegate.CodeGrantInvalid)
			if _, ok := f.record("doc/1"); ok || f.back.count() != 0 {
				t.Fatal("a grant the store cannot hold touched the store or the backend")
			}
		})
	}
}

// TestStoreInputErrorIsBadInputNotOutage: should the store still refuse a
// Begin input the sidecar validated (a bug), the answer is a 400 problem
// with the field's code, not 503 STORE_UNAVAILABLE, nothing is forwarded,
// and the bug is logged at error level.
func TestStoreInputErrorIsBadInputNotOutage(t *testing.T) {
	f := newFixture(t)
	for field, code := range map[string]fencegate.Code{"seq": fencegate.CodeFenceHeaderInvalid, "resource": fencegate.CodeInvalidResource, "deadline": fencegate.CodeFenceHeaderInvalid} {
		t.Run(field, func(t *testing.T) {
			f.restartWith(&failingStore{Store: f.store, beginErr: fmt.Errorf("memory: begin: %w", &store.InputError{Field: field, Reason: "injected"})}, nil)
			l := f.acquire("worker-a", "item/"+field)
			a := f.do(call{path: "/v1/items/" + field, owner: "worker-a", grant: string(l.Grant), body: "x"})
			a.expect(t, http.StatusBadRequest, code)
			if a.header.Get("Retry-After") != "" || f.back.count() != 0 {
				t.Fatalf("bad input must be neither retried nor forwarded (Retry-After %q, backend calls %d)", a.header.Get("Retry-After"), f.back.count())
			}
			if f.logs.FilterLevelExact(zap.ErrorLevel).FilterMessageSnippet("BUG").Len() != 1 {
				t.Fatalf("the store's refusal was not logged as a bug: %v", f.logs.All())
			}
		})
	}
}

// TestSupersededLookupFailureIsLogged: when the store cannot be read while
// refining GRANT_NOT_HELD into STALE_OWNER, the original rejection stands
// (fail closed) and the failure is logged at error level.
func TestSupersededLookupFailureIsLogged(t *testing.T) {
	f := newFixture(t)
	f.restartWith(&failingStore{Store: f.store, recordErr: fmt.Errorf("memory: record: %w", store.ErrClosed)}, nil)
	l := f.acquire("worker-a", "item/1")
	if _, err := f.reg.Release(t.Context(), "worker-a", l.View.Lease.Lease); err != nil {
		t.Fatal(err)
	}
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"}).expect(t, http.StatusForbidden, fencegate.CodeGrantNotHeld)
	if f.logs.FilterLevelExact(zap.ErrorLevel).FilterMessageSnippet("stale owner").Len() != 1 {
		t.Fatalf("the store failure was swallowed: %v", f.logs.All())
	}
	if f.back.count() != 0 {
		t.Fatal("forwarded")
	}
}
