package campaign

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// kind is a named generator of mutations.
type kind struct {
	name  string
	about string
	gen   func(f *Fixture, r *rand.Rand) mutation
}

// kinds are the campaign's generators, in the order they are tabulated.
var kinds = []kind{
	{"bitflip", "random bits of the grant or proof flipped", genBitflip},
	{"alg-none", `"alg":"none" (and spellings), empty or original signature, forged pairs`, genAlgNone},
	{"hs-confusion", "HS256 keyed with a public key, with the kid of an EdDSA, ES256 or HS256 key", genHSConfusion},
	{"kid-swap", "kid of another trusted key, an untrusted key or a near miss", genKidSwap},
	{"strip-header", "alg, kid and/or typ removed, re-signed or not", genStripHeader},
	{"payload-swap", "payload or signature of another token under this one's", genPayloadSwap},
	{"digest-swap", "proof whose grantDigest, lease or fence is another grant's", genDigestSwap},
	{"wrong-resource", "route or claims for another resource (near misses included)", genWrongResource},
	{"wrong-owner", "caller or owner claim of another workload (near misses included)", genWrongOwner},
	{"expired", "proof expired, too old or from the future; lease expired", genExpired},
	{"revoked-epoch", "issuer epoch below the minimum or not the current one", genRevokedEpoch},
	{"stale-policy", "policy generation other than the current one", genStalePolicy},
	{"not-held", "proof states EXPIRED, RELEASED, REVOKED or a near miss of HELD", genNotHeld},
	{"truncation", "token cut at every kind of position", genTruncation},
	{"duplicate-members", "a claim or header member twice, re-signed", genDuplicateMembers},
	{"huge-numbers", "integer claims as 1e400, 2^64, -1, 1.5, \"1\", ..., re-signed", genHugeNumbers},
	{"typ-confusion", "a proof presented as a grant and vice versa; near-miss typ", genTypConfusion},
	{"bad-lineage", "lineage claim empty, null, not a string, outside [0-9a-z], too long or misspelt, re-signed", genBadLineage},
}

// Kinds returns the names of all mutation kinds, in table order.
func Kinds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

// About returns the one-line description of a kind ("" for an unknown one).
func About(name string) string {
	for _, k := range kinds {
		if k.name == name {
			return k.about
		}
	}
	return ""
}

// selectKinds returns the kinds named (all when names is empty), in table
// order, refusing unknown and repeated names.
func selectKinds(names []string) ([]kind, error) {
	if len(names) == 0 {
		return kinds, nil
	}
	var out []kind
	for _, k := range kinds {
		if slices.Contains(names, k.name) {
			out = append(out, k)
		}
	}
	for i, n := range names {
		if !slices.ContainsFunc(kinds, func(k kind) bool { return k.name == n }) {
			return nil, fmt.Errorf("%w: %q (want one of %v)", ErrUnknownKind, n, Kinds())
		}
		if slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("%w: %q named twice", ErrUnknownKind, n)
		}
	}
	return out, nil
}
