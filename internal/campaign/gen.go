package campaign

import (
	"encoding/json"
	"math/rand/v2"

	"github.com/fencegate/fencegate"
)

// mutation is one generated tuple, the original it was derived from and the
// name of the generator's variant (for examples and reproduction).
type mutation struct {
	Tuple
	variant string
	base    *original
}

// equivalent reports whether m is semantically its original: the same
// decoded grant and proof segments, on the same route, for the same caller.
func (m *mutation) equivalent() bool {
	b := m.base
	return m.Resource == b.Resource && m.Owner == b.Owner &&
		sameToken(m.Grant, b.gSeg) && sameToken(m.Proof, b.pSeg)
}

// variant is one way of a kind to mutate an original.
type variant struct {
	name string
	gen  func(f *Fixture, r *rand.Rand, o *original) Tuple
}

// pickVariant draws an original and one of vs and applies it.
func (f *Fixture) pickVariant(r *rand.Rand, vs []variant) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	v := vs[r.IntN(len(vs))]
	return mutation{Tuple: v.gen(f, r, o), variant: v.name, base: o}
}

// other returns an original other than o.
func (f *Fixture) other(r *rand.Rand, o *original) *original {
	i := r.IntN(len(f.originals) - 1)
	if i >= o.version {
		i++
	}
	return f.originals[i]
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// clone copies t so that a mutation never writes into an original's bytes.
func clone(b []byte) []byte { return append([]byte(nil), b...) }

// mustJSON marshals claims as keys.Signer does. The claim structs hold only
// strings and integers, so it cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("campaign: claims do not marshal: " + err.Error())
	}
	return b
}

// signGrant signs grant claims with the trusted signing key, exactly as
// the registry does.
func (f *Fixture) signGrant(g fencegate.Grant) []byte {
	return signEd(f.main, f.header("EdDSA", f.mainKid, fencegate.GrantSchema), mustJSON(g))
}

// signProof signs proof claims with the trusted signing key.
func (f *Fixture) signProof(st fencegate.Status) []byte {
	return signEd(f.main, f.header("EdDSA", f.mainKid, fencegate.StatusSchema), mustJSON(st))
}

// proofFor is o's proof restated, by the trusted key, for the grant token
// gtok with claims g (what the registry would say of that grant), after
// mut.
func (f *Fixture) proofFor(o *original, gtok []byte, g fencegate.Grant, mut func(*fencegate.Status)) []byte {
	st := o.proof
	st.GrantDigest = fencegate.Digest(gtok)
	st.Resource, st.Lease, st.FenceToken = g.Resource, g.Lease, g.FenceToken
	if mut != nil {
		mut(&st)
	}
	return f.signProof(st)
}

// resigned is o with its grant claims changed by gmut and re-signed by the
// trusted key, and a proof restated for the new grant and changed by pmut:
// only the changed claims can make the sidecar reject it.
func (f *Fixture) resigned(o *original, gmut func(*fencegate.Grant), pmut func(*fencegate.Status)) Tuple {
	g := o.grant
	if gmut != nil {
		gmut(&g)
	}
	gtok := f.signGrant(g)
	return Tuple{Grant: gtok, Proof: f.proofFor(o, gtok, g, pmut), Resource: o.Resource, Owner: o.Owner}
}

// reproved is o with its own grant and a proof re-signed after pmut.
func (f *Fixture) reproved(o *original, pmut func(*fencegate.Status)) Tuple {
	return Tuple{Grant: o.Grant, Proof: f.proofFor(o, o.Grant, o.grant, pmut), Resource: o.Resource, Owner: o.Owner}
}

// onSide applies tok to the grant (side 0) or the proof (side 1) of o.
func onSide(o *original, side int, tok []byte) Tuple {
	t := o.Tuple
	if side == 0 {
		t.Grant = tok
	} else {
		t.Proof = tok
	}
	return t
}

// sideOf returns o's token, decoded segments and typ of side.
func sideOf(o *original, side int) ([]byte, [3][]byte, string) {
	if side == 0 {
		return o.Grant, o.gSeg, fencegate.GrantSchema
	}
	return o.Proof, o.pSeg, fencegate.StatusSchema
}
