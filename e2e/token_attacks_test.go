package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
)

// unchanged fails unless an attack left the store's record of resource
// and the backend exactly as they were: authentication and status
// failures never touch the store, and nothing reaches the backend.
type unchanged struct {
	t        *testing.T
	m        *matrix
	resource string
	record   string
	arrivals int
}

func snapshotOf(t *testing.T, m *matrix, resource string) unchanged {
	t.Helper()
	u := unchanged{t: t, m: m, resource: resource, arrivals: m.back.arrivals()}
	u.record = u.read()
	return u
}

func (u unchanged) read() string {
	u.t.Helper()
	rec, ok := storeRecord(u.t, u.m.sc.admin, u.resource)
	if !ok {
		return "(none)"
	}
	b, _ := json.Marshal(rec)
	return string(b)
}

func (u unchanged) check(what string) {
	u.t.Helper()
	if now := u.read(); now != u.record {
		u.t.Fatalf("%s changed the store's record of %s:\nbefore %s\nafter  %s", what, u.resource, u.record, now)
	}
	if n := u.m.back.arrivals(); n != u.arrivals {
		u.t.Fatalf("%s reached the backend (%d writes arrived, %d before)", what, n, u.arrivals)
	}
}

// tamperClaims re-encodes a JWS's payload after edit, keeping its header
// and signature: what an attacker can do without the key.
func tamperClaims(t *testing.T, jws string, edit func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", jws)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		t.Fatal(err)
	}
	edit(claims)
	out, _ := json.Marshal(claims)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(out) + "." + parts[2]
}

// TestTokenAttacks, proof mode, one stack: forged, tampered and misused
// tokens are refused with their documented codes, leave the store's record
// as it was and never reach the backend; the legitimate owner's writes go
// on, and the backend holds exactly the receipts.
func TestTokenAttacks(t *testing.T) {
	m := startMatrix(t, sidecarOpts{status: "proof", maxAge: "30s"})
	a := m.acquire("worker-a", "t1", 60*time.Second, 0)
	a2 := m.acquire("worker-a", "t2", 60*time.Second, 0)
	path := accountsPath("t1")
	wantAccepted(t, "A's segment 1", m.write(of("worker-a", a, path, "1", "A1")))

	attacks := []struct {
		name     string
		resource string
		w        rawWrite
		code     fencegate.Code
	}{
		{"a forged oversized grant (9 KiB)", "account/t1",
			rawWrite{Owner: "worker-a", Grant: "eyJhbGciOiJFZERTQSJ9." + strings.Repeat("A", 9<<10) + ".sig", Status: a.Status, Segment: "2", Path: path, Body: "X"},
			fencegate.CodeGrantInvalid},
		{"a real grant padded over the size limit", "account/t1",
			rawWrite{Owner: "worker-a", Grant: a.Grant + strings.Repeat("A", 9<<10), Status: a.Status, Segment: "2", Path: path, Body: "X"},
			fencegate.CodeGrantInvalid},
		{"a grant whose fence was raised (payload tampered)", "account/t1",
			rawWrite{Owner: "worker-a", Grant: tamperClaims(t, a.Grant, func(c map[string]any) { c["fenceToken"] = json.Number("999") }), Status: a.Status, Segment: "1", Path: path, Body: "X"},
			fencegate.CodeGrantInvalid},
		{"a grant whose signature was flipped", "account/t1",
			rawWrite{Owner: "worker-a", Grant: flipSignature(a.Grant), Status: a.Status, Segment: "2", Path: path, Body: "X"},
			fencegate.CodeGrantInvalid},
		{"a proof whose grant digest was rewritten to the grant's", "account/t2",
			rawWrite{Owner: "worker-a", Grant: a2.Grant, Status: tamperClaims(t, a.Status, func(c map[string]any) {
				c["grantDigest"], c["resource"], c["lease"], c["fenceToken"] = a2.GrantDigest, a2.Resource, a2.Lease, json.Number(jsonUint(a2.FenceToken))
			}), Segment: "1", Path: accountsPath("t2"), Body: "X"},
			fencegate.CodeGrantInvalid},
		{"another grant's proof (its grant digest names account/t1's grant)", "account/t2",
			rawWrite{Owner: "worker-a", Grant: a2.Grant, Status: a.Status, Segment: "1", Path: accountsPath("t2"), Body: "X"},
			fencegate.CodeStatusStale},
		{"grant and proof of account/t1 replayed against account/t2", "account/t2",
			rawWrite{Owner: "worker-a", Grant: a.Grant, Status: a.Status, Segment: "2", Path: accountsPath("t2"), Body: "X"},
			fencegate.CodeResourceMismatch},
		{"A's grant presented by another identity", "account/t1",
			rawWrite{Owner: "worker-b", Grant: a.Grant, Status: a.Status, Segment: "2", Path: path, Body: "X"},
			fencegate.CodeOwnerMismatch},
		{"a grant without its proof on a proof-mode route", "account/t1",
			rawWrite{Owner: "worker-a", Grant: a.Grant, Segment: "2", Path: path, Body: "X"},
			fencegate.CodeStatusStale},
		{"no grant at all", "account/t1",
			rawWrite{Owner: "worker-a", Segment: "2", Path: path, Body: "X"},
			fencegate.CodeGrantRequired},
	}
	for _, at := range attacks {
		before := snapshotOf(t, m, at.resource)
		wantProblem(t, at.name, m.write(at.w), at.code)
		before.check(at.name)
	}

	wantAccepted(t, "A's segment 2 after the attacks", m.write(of("worker-a", a, path, "2", "A2")))
	wantAccepted(t, "A's account/t2 segment 1 after the attacks", m.write(of("worker-a", a2, accountsPath("t2"), "1", "B1")))
	m.back.wantBodies(t, path, "A1", "A2")
	checkFinalData(t, m.sc.admin, m.back, "t1", a.Grant)
	checkFinalData(t, m.sc.admin, m.back, "t2", a2.Grant)
}

func jsonUint(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// flipSignature changes the first character of the JWS's signature (a
// whole 6 bits of it, unlike the last character's padding bits).
func flipSignature(jws string) string {
	i := strings.LastIndexByte(jws, '.') + 1
	c := byte('A')
	if jws[i] == 'A' {
		c = 'B'
	}
	return jws[:i] + string(c) + jws[i+1:]
}

// TestRevokedIssuerEpoch: after the registry's issuer epoch is bumped
// (POST /v1/admin/epoch, as an operator does after a restore), a grant of
// the old epoch is EPOCH_REVOKED. Registry mode learns it from the
// registry's proof at once. Proof mode never asks the registry: it learns
// the new epoch from the first newer proof it verifies (design 6.4), so
// until then the old grant's still-fresh proof is accepted (the documented
// window), and from then on it is EPOCH_REVOKED. The backend holds exactly
// the receipts.
func TestRevokedIssuerEpoch(t *testing.T) {
	for _, mode := range []string{"registry", "proof"} {
		t.Run(mode, func(t *testing.T) {
			m := startMatrix(t, sidecarOpts{status: mode, maxAge: "30s"})
			id := "epoch-" + mode
			path := accountsPath(id)
			a := m.acquire("worker-a", id, 60*time.Second, 0)
			wantAccepted(t, "A's segment 1", m.write(of("worker-a", a, path, "1", "A1")))

			meta, err := registryClient(t, m.reg.url, "operator").BumpEpoch(context.Background())
			if err != nil {
				t.Fatalf("bumping the issuer epoch: %v", err)
			}
			if meta.IssuerEpoch <= a.IssuerEpoch {
				t.Fatalf("epoch after the bump %d, A's grant has %d", meta.IssuerEpoch, a.IssuerEpoch)
			}
			next := "2"
			if mode == "proof" {
				// The sidecar has not seen a newer proof yet: A's fresh
				// proof is still accepted.
				wantAccepted(t, "A's segment 2 before the sidecar saw the new epoch", m.write(of("worker-a", a, path, "2", "A2")))
				b := m.acquire("worker-b", id+"-other", 60*time.Second, 0)
				if b.IssuerEpoch != meta.IssuerEpoch {
					t.Fatalf("B's grant has epoch %d, want %d", b.IssuerEpoch, meta.IssuerEpoch)
				}
				wantAccepted(t, "B's write (the sidecar learns the epoch)", m.write(of("worker-b", b, accountsPath(id+"-other"), "1", "B1")))
				next = "3"
			}
			before := snapshotOf(t, m, "account/"+id)
			wantProblem(t, "A's write with a grant of the revoked epoch", m.write(of("worker-a", a, path, next, "A-revoked")), fencegate.CodeEpochRevoked)
			before.check("the revoked grant's write")

			// A's lease was revoked: a new grant, of the new epoch and a
			// higher fence, writes again.
			a2 := m.acquire("worker-a", id, 60*time.Second, 5*time.Second)
			wantAccepted(t, "A's write under a new grant", m.write(of("worker-a", a2, path, "1", "A-new")))
			want := []string{"A1", "A-new"}
			if mode == "proof" {
				want = []string{"A1", "A2", "A-new"}
			}
			m.back.wantBodies(t, path, want...)
			checkFinalData(t, m.sc.admin, m.back, id, a.Grant, a2.Grant)
		})
	}
}
