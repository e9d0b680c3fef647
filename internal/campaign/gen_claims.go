package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// Generators that attack the claims: every token they make is signed by
// the trusted key and, where the grant changes, comes with a proof
// restated for it, so the claim check under test is what must reject.

func ms(t time.Time) uint64 { return uint64(t.UnixMilli()) }

var digestSwap = []variant{
	{"proof restated with another grant's digest", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		d := f.other(r, o).digest
		return f.reproved(o, func(st *fencegate.Status) { st.GrantDigest = d })
	}},
	{"grant with another grant's proof", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 1, f.other(r, o).Proof)
	}},
	{"digest of a near-identical token", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		var d string
		switch r.IntN(4) {
		case 0:
			d = sha(o.gSeg[1]) // the payload only
		case 1:
			d = sha(append(clone(o.Grant), '\n'))
		case 2:
			d = sha(o.Grant[:len(o.Grant)-1])
		default:
			d = sha([]byte(enc.EncodeToString(o.gSeg[1])))
		}
		return f.reproved(o, func(st *fencegate.Status) { st.GrantDigest = d })
	}},
	{"digest in another form", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		d := pick(r, []string{strings.ToUpper(o.digest), strings.TrimPrefix(o.digest, "sha256:"),
			"SHA256:" + strings.TrimPrefix(o.digest, "sha256:"), "sha512:" + strings.TrimPrefix(o.digest, "sha256:"),
			o.digest + "0", o.digest[:len(o.digest)-1], o.digest + " "})
		return f.reproved(o, func(st *fencegate.Status) { st.GrantDigest = d })
	}},
	{"proof for another lease or fence", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		oth := f.other(r, o)
		return f.reproved(o, func(st *fencegate.Status) {
			switch r.IntN(3) {
			case 0:
				st.Lease = oth.grant.Lease
			case 1:
				st.FenceToken++
			default:
				st.FenceToken--
			}
		})
	}},
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func genDigestSwap(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, digestSwap) }

// nearMisses returns strings that differ from s in ways a lax comparison
// (case, whitespace, prefix, encoding, look-alike letters) might miss.
func nearMisses(r *rand.Rand, s string, others []string) string {
	switch r.IntN(10) {
	case 0:
		return pick(r, others)
	case 1:
		return strings.ToUpper(s[:1]) + s[1:]
	case 2:
		return s + pick(r, []string{"/", " ", "\u0000", "\n", "/."})
	case 3:
		return s[:len(s)-1]
	case 4:
		return pick(r, []string{"./", "/", " "}) + s
	case 5:
		return strings.Replace(s, "/", "%2F", 1)
	case 6:
		return strings.Replace(s, "o", "\u043e", 1) // Cyrillic o
	case 7:
		return ""
	case 8:
		return s + s[len(s)-1:]
	default:
		return strings.Replace(s, "/", "//", 1)
	}
}

func (f *Fixture) resources() []string {
	out := make([]string, 0, len(f.originals))
	for _, o := range f.originals {
		out = append(out, o.Resource)
	}
	return out
}

func (f *Fixture) owners() []string {
	return []string{f.originals[0].Owner, f.originals[5].Owner, "spiffe://evil.test/ns/default/sa/worker"}
}

// differentFrom draws near misses of s until one differs from s.
func differentFrom(r *rand.Rand, s string, others []string) string {
	for {
		if x := nearMisses(r, s, others); x != s {
			return x
		}
	}
}

var wrongResource = []variant{
	{"grant presented on another route", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		t := o.Tuple
		t.Resource = differentFrom(r, o.Resource, f.resources())
		return t
	}},
	{"grant re-signed for another resource", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		res := differentFrom(r, o.Resource, f.resources())
		return f.resigned(o, func(g *fencegate.Grant) { g.Resource = res }, nil)
	}},
	{"proof re-signed for another resource", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		res := differentFrom(r, o.Resource, f.resources())
		return f.reproved(o, func(st *fencegate.Status) { st.Resource = res })
	}},
}

func genWrongResource(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, wrongResource) }

var wrongOwner = []variant{
	{"grant presented by another caller", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		t := o.Tuple
		t.Owner = differentFrom(r, o.Owner, f.owners())
		return t
	}},
	{"grant re-signed for another owner", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		owner := differentFrom(r, o.Owner, f.owners())
		return f.resigned(o, func(g *fencegate.Grant) { g.Owner = owner }, nil)
	}},
}

func genWrongOwner(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, wrongOwner) }

var expired = []variant{
	{"proof expired", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		exp := ms(Now) - uint64(r.IntN(3)*r.IntN(100_000))
		return f.reproved(o, func(st *fencegate.Status) { st.ExpiresAt, st.IssuedAt = exp, exp-uint64(1+r.IntN(5000)) })
	}},
	{"proof older than maxAge", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		iat := ms(Now.Add(-MaxAge)) - 1 - uint64(r.IntN(3)*r.IntN(1_000_000))
		return f.reproved(o, func(st *fencegate.Status) { st.IssuedAt, st.ExpiresAt = iat, ms(Now)+1+uint64(r.IntN(5000)) })
	}},
	{"proof issued in the future", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		iat := ms(Now.Add(ClockSkew)) + 1 + uint64(r.IntN(3)*r.IntN(1_000_000_000))
		return f.reproved(o, func(st *fencegate.Status) { st.IssuedAt, st.ExpiresAt = iat, iat+uint64(MaxProofTTL.Milliseconds()) })
	}},
	{"expired lease, proof as the registry states it", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		// The lease ended before now; the registry says EXPIRED, or its
		// last HELD proof ends at the lease's expiry.
		leaseExp := ms(Now) - uint64(r.IntN(60_000))
		gIat := leaseExp - uint64(grantTTL.Milliseconds())
		held := r.IntN(2) == 0
		return f.resigned(o, func(g *fencegate.Grant) { g.IssuedAt = gIat }, func(st *fencegate.Status) {
			if held {
				st.IssuedAt = leaseExp - 1 - uint64(r.IntN(int(MaxProofTTL.Milliseconds())))
				st.ExpiresAt = leaseExp
				return
			}
			st.State = fencegate.StateExpired
		})
	}},
}

func genExpired(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, expired) }

var revokedEpoch = []variant{
	{"grant and proof of a revoked epoch", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		e := uint64(r.IntN(MinEpoch))
		return f.resigned(o, func(g *fencegate.Grant) { g.IssuerEpoch = e }, func(st *fencegate.Status) { st.IssuerEpoch = e })
	}},
	{"grant and proof of an epoch the sidecar has learned is old", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		e := uint64(MinEpoch + r.IntN(Epoch-MinEpoch))
		return f.resigned(o, func(g *fencegate.Grant) { g.IssuerEpoch = e }, func(st *fencegate.Status) { st.IssuerEpoch = e })
	}},
	{"grant of an old epoch, proof of the current one", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		e := uint64(r.IntN(Epoch))
		return f.resigned(o, func(g *fencegate.Grant) { g.IssuerEpoch = e }, nil)
	}},
	{"proof of a newer epoch (the registry bumped it)", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		e := uint64(Epoch + 1 + r.IntN(3))
		return f.reproved(o, func(st *fencegate.Status) { st.IssuerEpoch = e })
	}},
	{"proof of an older epoch than the grant", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		ge, pe := uint64(Epoch+1+r.IntN(3)), uint64(Epoch)
		return f.resigned(o, func(g *fencegate.Grant) { g.IssuerEpoch = ge }, func(st *fencegate.Status) { st.IssuerEpoch = pe })
	}},
}

func genRevokedEpoch(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, revokedEpoch) }

var stalePolicy = []variant{
	{"grant of an older policy generation", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		p := uint64(r.IntN(Policy))
		return f.resigned(o, func(g *fencegate.Grant) { g.PolicyGeneration = p }, nil)
	}},
	{"policy changed since the grant", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		p := uint64(Policy + 1 + r.IntN(3))
		return f.reproved(o, func(st *fencegate.Status) { st.PolicyGeneration = p })
	}},
	{"proof of an older generation than the grant", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		gp := uint64(Policy + 1 + r.IntN(3))
		return f.resigned(o, func(g *fencegate.Grant) { g.PolicyGeneration = gp }, nil)
	}},
}

func genStalePolicy(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, stalePolicy) }

var notHeld = []variant{
	{"proof of an ended lease", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		s := pick(r, []string{fencegate.StateExpired, fencegate.StateReleased, fencegate.StateRevoked})
		return f.reproved(o, func(st *fencegate.Status) { st.State = s })
	}},
	{"proof with a near-miss state", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		s := pick(r, []string{"held", "Held", "HELD ", " HELD", "HELD\u0000", "ACTIVE", "", "HELD,EXPIRED", "H\u0415LD"})
		return f.reproved(o, func(st *fencegate.Status) { st.State = s })
	}},
}

func genNotHeld(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, notHeld) }
