package campaign

import (
	"bytes"
	"crypto/ed25519"
	"math/rand/v2"
	"strings"

	"github.com/fencegate/fencegate"
)

// Generators that attack the JWS envelope: the bytes, the header and the
// signature. Each acts on the grant or the proof of an original (side 0 or
// 1), or on both.

// genBitflip flips one random bit (sometimes up to eight) of the grant or
// the proof.
func genBitflip(f *Fixture, r *rand.Rand) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	side := r.IntN(2)
	tok, _, _ := sideOf(o, side)
	tok = clone(tok)
	bits, name := 1, "one bit"
	if r.IntN(5) == 0 {
		bits, name = 2+r.IntN(7), "several bits"
	}
	for range bits {
		tok[r.IntN(len(tok))] ^= 1 << r.IntN(8)
	}
	return mutation{Tuple: onSide(o, side, tok), variant: name + sideName[side], base: o}
}

var sideName = [2]string{" of the grant", " of the proof"}

// noneAlgs are spellings of the unsecured algorithm.
var noneAlgs = []string{"none", "None", "NONE", "nOnE", "", "none "}

// rawHeader writes a header with the members as given, in order, empty
// values included (header() drops them).
func rawHeader(pairs ...string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(pairs[i]) + ":" + quote(pairs[i+1]))
	}
	b.WriteByte('}')
	return b.Bytes()
}

var algNone = []variant{
	{"grant alg none, empty signature", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 0, compact(rawHeader("alg", pick(r, noneAlgs), "kid", f.mainKid, "typ", fencegate.GrantSchema), o.gSeg[1], nil))
	}},
	{"grant alg none, original signature", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 0, compact(rawHeader("alg", pick(r, noneAlgs), "kid", f.mainKid, "typ", fencegate.GrantSchema), o.gSeg[1], o.gSeg[2]))
	}},
	{"grant alg none without kid", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 0, compact(rawHeader("alg", "none", "typ", fencegate.GrantSchema), o.gSeg[1], nil))
	}},
	{"proof alg none, empty signature", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 1, compact(rawHeader("alg", pick(r, noneAlgs), "kid", f.mainKid, "typ", fencegate.StatusSchema), o.pSeg[1], nil))
	}},
	{"proof alg none, original signature", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 1, compact(rawHeader("alg", pick(r, noneAlgs), "kid", f.mainKid, "typ", fencegate.StatusSchema), o.pSeg[1], o.pSeg[2]))
	}},
	{"forged grant and proof, both alg none", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		// The attacker's own claims: a higher fence, a matching proof.
		g := o.grant
		g.FenceToken++
		gtok := compact(rawHeader("alg", "none", "kid", f.mainKid, "typ", fencegate.GrantSchema), mustJSON(g), nil)
		st := o.proof
		st.GrantDigest, st.FenceToken = fencegate.Digest(gtok), g.FenceToken
		ptok := compact(rawHeader("alg", "none", "kid", f.mainKid, "typ", fencegate.StatusSchema), mustJSON(st), nil)
		return Tuple{Grant: gtok, Proof: ptok, Resource: o.Resource, Owner: o.Owner}
	}},
}

func genAlgNone(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, algNone) }

// hsSecrets are what a confused verifier might use as the HMAC secret of a
// public key: its raw bytes or their base64url text.
func (f *Fixture) hsSecrets(r *rand.Rand) []byte {
	pub := f.main.Public().(ed25519.PublicKey)
	if r.IntN(2) == 0 {
		return pub
	}
	return []byte(enc.EncodeToString(pub))
}

var hsConfusion = []variant{
	{"HS256 with the EdDSA key's kid and public key as secret", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, signHS(f.hsSecrets(r), f.header("HS256", f.mainKid, typ), seg[1]))
	}},
	{"HS256 with the ES256 key's kid and public point as secret", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, signHS(f.esPub, f.header("HS256", f.esKid, typ), seg[1]))
	}},
	{"HS256 with the HS256 key's kid and the EdDSA public key as secret", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, signHS(f.hsSecrets(r), f.header("HS256", f.hsKid, typ), seg[1]))
	}},
	{"HS384/HS512 with the EdDSA key's kid", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, signHS(f.hsSecrets(r), f.header(pick(r, []string{"HS384", "HS512", "hs256"}), f.mainKid, typ), seg[1]))
	}},
	{"EdDSA header with an HMAC signature", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, _ := sideOf(o, side)
		return onSide(o, side, signHS(f.hsSecrets(r), seg[0], seg[1]))
	}},
	{"forged grant and proof, both HS256 with the EdDSA public key", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		secret := f.hsSecrets(r)
		g := o.grant
		g.FenceToken++
		gtok := signHS(secret, f.header("HS256", f.mainKid, fencegate.GrantSchema), mustJSON(g))
		st := o.proof
		st.GrantDigest, st.FenceToken = fencegate.Digest(gtok), g.FenceToken
		ptok := signHS(secret, f.header("HS256", f.mainKid, fencegate.StatusSchema), mustJSON(st))
		return Tuple{Grant: gtok, Proof: ptok, Resource: o.Resource, Owner: o.Owner}
	}},
}

func genHSConfusion(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, hsConfusion) }

// kidSwaps returns a kid other than the signing key's: another trusted
// key's, an untrusted key's, or a near miss of the right one.
func (f *Fixture) kidSwaps(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return f.rotKid
	case 1:
		return f.esKid
	case 2:
		return f.hsKid
	case 3:
		return f.evilKid
	case 4:
		return strings.ToUpper(f.mainKid)
	case 5:
		return f.mainKid[:r.IntN(len(f.mainKid))]
	case 6:
		return f.mainKid + pick(r, []string{" ", "=", "\u0000", "x", "\n"})
	default:
		return string(randBytes(r, 1+r.IntN(12)))
	}
}

var kidSwap = []variant{
	{"kid swapped, original signature", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, compact(rawHeader("alg", "EdDSA", "kid", f.kidSwaps(r), "typ", typ), seg[1], seg[2]))
	}},
	{"kid swapped, signed by the untrusted key", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, signEd(f.evil, rawHeader("alg", "EdDSA", "kid", f.kidSwaps(r), "typ", typ), seg[1]))
	}},
	{"trusted kid, signed by the untrusted key", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		kid := pick(r, []string{f.mainKid, f.rotKid})
		return onSide(o, side, signEd(f.evil, f.header("EdDSA", kid, typ), seg[1]))
	}},
	{"trusted kid of the rotation key, signed by the signing key", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		return onSide(o, side, signEd(f.main, f.header("EdDSA", f.rotKid, typ), seg[1]))
	}},
}

func genKidSwap(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, kidSwap) }

// stripHeader drops a non-empty subset of alg, kid and typ. Re-signed by
// the trusted key, so only the header check can reject it, or with the
// original signature.
func genStripHeader(f *Fixture, r *rand.Rand) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	side := r.IntN(2)
	_, seg, typ := sideOf(o, side)
	drop := 1 + r.IntN(7) // bit 0 alg, bit 1 kid, bit 2 typ; never none
	var pairs []string
	var name strings.Builder
	name.WriteString("without")
	for i, m := range [][2]string{{"alg", "EdDSA"}, {"kid", f.mainKid}, {"typ", typ}} {
		if drop&(1<<i) != 0 {
			name.WriteString(" " + m[0])
			continue
		}
		pairs = append(pairs, m[0], m[1])
	}
	hdr := rawHeader(pairs...)
	var tok []byte
	if r.IntN(3) == 0 {
		tok = compact(hdr, seg[1], seg[2])
		name.WriteString(", original signature")
	} else {
		tok = signEd(f.main, hdr, seg[1])
		name.WriteString(", re-signed")
	}
	name.WriteString(sideName[side])
	return mutation{Tuple: onSide(o, side, tok), variant: name.String(), base: o}
}

var payloadSwap = []variant{
	{"grant payload of another grant", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 0, compact(o.gSeg[0], f.other(r, o).gSeg[1], o.gSeg[2]))
	}},
	{"proof payload of another proof", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 1, compact(o.pSeg[0], f.other(r, o).pSeg[1], o.pSeg[2]))
	}},
	{"grant payload with the attacker's claims", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		g := o.grant
		g.FenceToken, g.Owner = g.FenceToken+1+uint64(r.IntN(1000)), f.other(r, o).Owner
		return onSide(o, 0, compact(o.gSeg[0], mustJSON(g), o.gSeg[2]))
	}},
	{"grant signature of another grant", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 0, compact(o.gSeg[0], o.gSeg[1], f.other(r, o).gSeg[2]))
	}},
	{"proof signature of another proof", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 1, compact(o.pSeg[0], o.pSeg[1], f.other(r, o).pSeg[2]))
	}},
	{"proof payload restated for a forged grant", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		// The grant's payload swapped for a higher fence; the proof's
		// payload restated for it; both keep their original signatures.
		g := o.grant
		g.FenceToken++
		gtok := compact(o.gSeg[0], mustJSON(g), o.gSeg[2])
		st := o.proof
		st.GrantDigest, st.FenceToken = fencegate.Digest(gtok), g.FenceToken
		return Tuple{Grant: gtok, Proof: compact(o.pSeg[0], mustJSON(st), o.pSeg[2]), Resource: o.Resource, Owner: o.Owner}
	}},
}

func genPayloadSwap(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, payloadSwap) }

var typConfusion = []variant{
	{"proof as grant, grant as proof", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		t := o.Tuple
		t.Grant, t.Proof = o.Proof, o.Grant
		return t
	}},
	{"proof as grant and as proof", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 0, o.Proof)
	}},
	{"grant as grant and as proof", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		return onSide(o, 1, o.Grant)
	}},
	{"grant claims under typ lockStatus.v1", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		tok := signEd(f.main, f.header("EdDSA", f.mainKid, fencegate.StatusSchema), o.gSeg[1])
		return onSide(o, r.IntN(2), tok)
	}},
	{"proof claims under typ lockGrant.v1", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		tok := signEd(f.main, f.header("EdDSA", f.mainKid, fencegate.GrantSchema), o.pSeg[1])
		return onSide(o, r.IntN(2), tok)
	}},
	{"near-miss typ", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		side := r.IntN(2)
		_, seg, typ := sideOf(o, side)
		bad := pick(r, []string{"JWT", "JOSE", strings.ToLower(typ), typ + " ", "application/" + typ + "+jws",
			strings.Replace(typ, "v1", "v2", 1), typ + "\u0000"})
		return onSide(o, side, signEd(f.main, f.header("EdDSA", f.mainKid, bad), seg[1]))
	}},
	{"grant claims with schema lockStatus.v1", func(f *Fixture, r *rand.Rand, o *original) Tuple {
		g := o.grant
		g.Schema = fencegate.StatusSchema
		tok := signEd(f.main, f.header("EdDSA", f.mainKid, fencegate.StatusSchema), mustJSON(g))
		return onSide(o, 1, tok)
	}},
}

func genTypConfusion(f *Fixture, r *rand.Rand) mutation { return f.pickVariant(r, typConfusion) }

// genTruncation cuts the grant or the proof at every kind of position: in
// and at the ends of each segment, at and after each dot, and inside the
// decoded JSON or signature (re-signed or re-encoded, so the cut survives
// the base64url checks).
func genTruncation(f *Fixture, r *rand.Rand) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	side := r.IntN(2)
	tok, seg, _ := sideOf(o, side)
	d1 := bytes.IndexByte(tok, '.')
	d2 := d1 + 1 + bytes.IndexByte(tok[d1+1:], '.')
	var cut []byte
	var name string
	switch r.IntN(12) {
	case 0:
		cut, name = nil, "empty"
	case 1:
		cut, name = tok[:1+r.IntN(d1-1)], "inside the header"
	case 2:
		cut, name = tok[:d1], "before the first dot"
	case 3:
		cut, name = tok[:d1+1], "after the first dot"
	case 4:
		cut, name = tok[:d1+2+r.IntN(d2-d1-2)], "inside the payload"
	case 5:
		cut, name = tok[:d2], "before the second dot"
	case 6:
		cut, name = tok[:d2+1], "after the second dot"
	case 7:
		cut, name = tok[:d2+2+r.IntN(len(tok)-d2-2)], "inside the signature"
	case 8:
		cut, name = tok[:len(tok)-1-r.IntN(4)], "the last 1 to 4 characters"
	case 9:
		cut, name = tok[1+r.IntN(len(tok)-1):], "from the front"
	case 10:
		short := seg[1][:r.IntN(len(seg[1]))]
		cut, name = signEd(f.main, seg[0], short), "decoded payload, re-signed"
	default:
		short := seg[2][:r.IntN(len(seg[2]))]
		cut, name = compact(seg[0], seg[1], short), "decoded signature, re-encoded"
	}
	return mutation{Tuple: onSide(o, side, clone(cut)), variant: name + sideName[side], base: o}
}
