package sim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// attack sends a write no sidecar may accept (outside the documented
// proof window, for a revoked grant): a forged grant, a tampered one, a
// valid grant of another resource, or a grant replayed after the
// registry's epoch was bumped.
func (r *round) attack(e event) {
	ctx := context.Background()
	switch e.Attack {
	case FaultForged, FaultTampered, FaultKeyAdd:
		tmpl := r.or.latest
		if tmpl == nil {
			r.logf("%s: no grant to imitate yet", e)
			return
		}
		claims, err := decodeClaims(tmpl.token)
		if err != nil {
			r.logf("%s: %v", e, err)
			return
		}
		claims.FenceToken += 1000 // above anything the registry issued: the store would take it
		claims.GrantID = fmt.Sprintf("g-FORGED%d", e.ID)
		claims.OperationRoot = operationRoot(claims.Resource, claims.FenceToken, claims.GrantID)
		var token, proof string
		if e.Attack == FaultForged || e.Attack == FaultKeyAdd {
			signer := r.m.forger
			if e.ID%2 == 0 && e.Attack == FaultForged {
				signer = r.m.forgerSame // the trusted key's kid, another key: a bad signature
			}
			tok, err := signer.Sign(fencegate.GrantSchema, claims)
			if err != nil {
				r.logf("%s: %v", e, err)
				return
			}
			token = string(tok)
			st := fencegate.Status{Schema: fencegate.StatusSchema, Issuer: claims.Issuer, GrantDigest: fencegate.Digest(tok),
				Resource: claims.Resource, Lease: claims.Lease, FenceToken: claims.FenceToken, State: fencegate.StateHeld,
				IssuerEpoch: claims.IssuerEpoch, PolicyGeneration: claims.PolicyGeneration, BackendRevision: claims.BackendRevision,
				IssuedAt: uint64(r.nowMs()), ExpiresAt: uint64(r.nowMs() + 1000)}
			p, err := signer.Sign(fencegate.StatusSchema, &st)
			if err != nil {
				r.logf("%s: %v", e, err)
				return
			}
			proof = string(p)
		} else {
			// The real header and signature over changed payload bytes.
			parts := strings.Split(tmpl.token, ".")
			payload, _ := json.Marshal(claims)
			token = parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
			if res, err := r.reg.GrantStatus(ctx, tmpl.digest); err == nil {
				proof = string(res.Status)
			}
		}
		r.sendAttack(e, claims.Owner, token, proof, 1)
	case FaultCross:
		res, err := r.reg.Acquire(ctx, registry.AcquireRequest{Resource: otherResource, Owner: "worker-M",
			RequestID: fmt.Sprintf("cross-%d", e.ID), TTL: 10 * time.Second})
		if err != nil {
			r.logf("%s: %v", e, err)
			return
		}
		r.or.granted(res)
		r.sendAttack(e, "worker-M", string(res.Grant), string(res.Status), 1)
	case FaultRevoked:
		g := r.or.latest
		if g == nil {
			r.logf("%s: no grant to replay yet", e)
			return
		}
		res, err := r.reg.GrantStatus(ctx, g.digest)
		if err != nil {
			r.logf("%s: %v", e, err)
			return
		}
		r.or.proved(res)
		meta, err := r.reg.BumpEpoch(ctx)
		if err != nil {
			r.logf("%s: %v", e, err)
			return
		}
		r.or.bump(meta.IssuerEpoch, r.now())
		r.logf("%s: captured %s's grant (fence %d), epoch bumped to %d", e, g.owner, g.fence, meta.IssuerEpoch)
		seq := uint64(1)
		if rec, err := r.st.Record(ctx, mainResource); err == nil && rec.Root == g.root {
			seq = rec.LastSeq + 1
		}
		proof := string(res.Status)
		r.after(e.Delay, "replay of a revoked grant", func() { r.sendAttack(e, g.owner, g.token, proof, seq) })
	}
}

func (r *round) sendAttack(e event, who, token, proof string, seq uint64) {
	if !r.sc.Config.Proof {
		proof = ""
	}
	w := newWire(mainPath, who, token, proof, seq, []byte(fmt.Sprintf("attack-%d", e.ID)))
	if e.Net.ReqDrop {
		return
	}
	r.after(e.Net.ReqDelay, "attack delivery", func() {
		out := r.serve(w, e.Replica, delivery{statusDrop: e.Net.StatusDrop})
		r.logf("attacker (%s) as %s, segment %d at replica %d -> %s", e.Attack, who, seq, e.Replica%len(r.sidecars), out)
	})
}

func decodeClaims(token string) (*fencegate.Grant, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("sim: not a compact JWS")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var g fencegate.Grant
	return &g, json.Unmarshal(raw, &g)
}

func decodeStatus(token string) (*fencegate.Status, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("sim: not a compact JWS")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var st fencegate.Status
	return &st, json.Unmarshal(raw, &st)
}

// operationRoot is the contract's sha256(resource "\n" fence "\n" grantId).
func operationRoot(resource string, fence uint64, grantID string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\n%d\n%s", resource, fence, grantID)))
	return fencegate.DigestPrefix + hex.EncodeToString(sum[:])
}
