package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate"
)

// Generators that attack the JSON of the payload and header: duplicated
// members and numbers outside the exact-uint64 domain. Every token is
// signed by the trusted key, so only the strict JSON rules can reject it.

var (
	grantNames = []string{"schema", "iss", "grantId", "resource", "owner", "requestId", "lease", "operationRoot",
		"fenceToken", "backendRevision", "policyGeneration", "issuerEpoch", "ttlMs", "opClass", "iat", "lineage"}
	grantNums  = []string{"fenceToken", "backendRevision", "policyGeneration", "issuerEpoch", "ttlMs", "iat"}
	proofNames = []string{"schema", "iss", "grantDigest", "resource", "lease", "fenceToken", "state",
		"backendRevision", "policyGeneration", "issuerEpoch", "iat", "exp"}
	proofNums = []string{"fenceToken", "backendRevision", "policyGeneration", "issuerEpoch", "iat", "exp"}
)

// valueSpan returns the extent of the value of member name in the compact
// JSON object p (as json.Marshal writes claims: no string value holds the
// member's quoted name followed by a colon).
func valueSpan(p []byte, name string) (int, int) {
	key := []byte(quote(name) + ":")
	i := bytes.Index(p, key)
	if i < 0 {
		return -1, -1
	}
	start := i + len(key)
	end := start
	if p[start] == '"' {
		end = start + 1
		for p[end] != '"' {
			if p[end] == '\\' {
				end++
			}
			end++
		}
		return start, end + 1
	}
	for p[end] != ',' && p[end] != '}' {
		end++
	}
	return start, end
}

// escapedName spells name with its first letter as a \u escape: the same
// member after unescaping.
func escapedName(name string) string {
	return fmt.Sprintf(`"\u%04x%s"`, name[0], name[1:])
}

// dupValue is the value of the duplicate: the same raw value or another one
// of the same type.
func dupValue(r *rand.Rand, raw []byte) []byte {
	if r.IntN(3) == 0 {
		return raw
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s) // raw is a string json.Marshal wrote
		return mustJSON(s + "x")
	}
	n, _ := strconv.ParseUint(string(raw), 10, 64)
	return []byte(strconv.FormatUint(n+1, 10))
}

// genDuplicateMembers duplicates a claim of the grant or the proof, or a
// member of a protected header, and re-signs with the trusted key.
func genDuplicateMembers(f *Fixture, r *rand.Rand) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	side := r.IntN(2)
	_, seg, typ := sideOf(o, side)
	if r.IntN(4) == 0 {
		dups := [][2]string{{"alg", "EdDSA"}, {"alg", "none"}, {"alg", "HS256"}, {"kid", f.mainKid}, {"kid", f.rotKid},
			{"typ", typ}, {"typ", fencegate.GrantSchema}, {"typ", fencegate.StatusSchema}}
		d := pick(r, dups)
		members := [][2]string{{"alg", "EdDSA"}, {"kid", f.mainKid}, {"typ", typ}}
		at := r.IntN(len(members) + 1)
		members = append(members[:at], append([][2]string{d}, members[at:]...)...)
		var pairs []string
		for _, m := range members {
			pairs = append(pairs, m[0], m[1])
		}
		tok := signEd(f.main, rawHeader(pairs...), seg[1])
		return mutation{Tuple: onSide(o, side, tok), variant: "header member " + d[0] + " twice" + sideName[side], base: o}
	}
	names := grantNames
	if side == 1 {
		names = proofNames
	}
	name := pick(r, names)
	p := seg[1]
	s, e := valueSpan(p, name)
	member := quote(name)
	if r.IntN(3) == 0 {
		member = escapedName(name)
	}
	dup := append([]byte(member+":"), dupValue(r, p[s:e])...)
	var out []byte
	where := "last"
	if r.IntN(2) == 0 {
		out = append(append(append([]byte("{"), dup...), ','), p[1:]...)
		where = "first"
	} else {
		out = append(append(append(clone(p[:len(p)-1]), ','), dup...), '}')
	}
	tok := signEd(f.main, seg[0], out)
	return mutation{Tuple: onSide(o, side, tok), variant: "claim " + name + " twice, duplicate " + where + sideName[side], base: o}
}

// hugeNumbers are number spellings outside plain integers in [0, 2^64-1],
// and values of other JSON types.
var hugeNumbers = []string{
	"1e400", "18446744073709551616", "18446744073709551617", "36893488147419103232", "99999999999999999999999",
	"-1", "-0", "-18446744073709551615", "1.5", "7.0", "0.0", "1e2", "7E0", "1E+19", "0x7", "+7", "007", "00",
	`"1"`, `"18446744073709551615"`, "null", "true", "[]", "{}", "[1]", "Infinity", "NaN", "1_000",
	strings.Repeat("9", 400), "1" + strings.Repeat("0", 20), "18446744073709551615.0", "18446744073709551615e0",
}

// genHugeNumbers replaces an integer claim of the grant or the proof with
// one of hugeNumbers (or 0 for fenceToken and ttlMs, which must be >= 1)
// and re-signs with the trusted key.
func genHugeNumbers(f *Fixture, r *rand.Rand) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	side := r.IntN(2)
	_, seg, _ := sideOf(o, side)
	names := grantNums
	if side == 1 {
		names = proofNums
	}
	name := pick(r, names)
	val := pick(r, hugeNumbers)
	if (name == "fenceToken" || name == "ttlMs") && r.IntN(8) == 0 {
		val = "0"
	}
	p := seg[1]
	s, e := valueSpan(p, name)
	out := append(append(clone(p[:s]), val...), p[e:]...)
	tok := signEd(f.main, seg[0], out)
	return mutation{Tuple: onSide(o, side, tok), variant: name + " as " + val[:min(len(val), 24)] + sideName[side], base: o}
}
