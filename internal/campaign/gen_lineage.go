package campaign

import (
	"math/rand/v2"
	"strings"
)

// badLineages are values of the optional "lineage" claim that verify must
// refuse: anything but a JSON string of 1..64 bytes of [0-9a-z]. (An
// absent claim is valid, a grant of a registry older than the claim, so it
// is not a mutation.)
var badLineages = []string{
	`""`, `null`, `7`, `true`, `[]`, `{}`, `["` + Lineage + `"]`,
	`"` + strings.ToUpper(Lineage) + `"`, `"` + Lineage[:8] + "-" + Lineage[9:] + `"`, `" ` + Lineage + `"`,
	`"` + Lineage + `\u0000"`, `"` + Lineage + `\n"`, `"` + Lineage[:31] + `\u0430"`, `"\u00e9"`,
	`"` + strings.Repeat("a", 65) + `"`, `"` + Lineage + Lineage + `0"`,
}

// genBadLineage replaces the original grant's lineage with a malformed
// value, or spells the member's name another way (an unknown claim),
// re-signs it with the trusted key and restates the proof for it, so only
// the lineage check can refuse it.
func genBadLineage(f *Fixture, r *rand.Rand) mutation {
	o := f.originals[r.IntN(len(f.originals))]
	p := o.gSeg[1]
	s, e := valueSpan(p, "lineage")
	var out []byte
	var variant string
	if r.IntN(5) == 0 {
		name := pick(r, []string{`"Lineage"`, `"LINEAGE"`, `"lineage "`, `"issuerLineage"`, `"lineAge"`})
		k := s - len(`"lineage":`)
		out = append(append(append(clone(p[:k]), name...), ':'), p[s:]...)
		variant = "lineage member named " + name
	} else {
		val := pick(r, badLineages)
		out = append(append(clone(p[:s]), val...), p[e:]...)
		variant = "lineage as " + val[:min(len(val), 24)]
	}
	gtok := signEd(f.main, o.gSeg[0], out)
	t := o.Tuple
	t.Grant, t.Proof = gtok, f.proofFor(o, gtok, o.grant, nil)
	return mutation{Tuple: t, variant: variant, base: o}
}
