package overlap

import (
	"errors"
	"fmt"
	"net/http"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
)

// Overlap of chi patterns: is there a path that every pattern of one set
// matches and no pattern of another does? proxy's Config.Validate asks it of an
// enforced route and a route of a lower mode (they must not overlap), and
// the enforcement ledger asks it of an enforced shape and the routes now
// configured (docs/design.md 6.2, 10).
//
// A pattern matches a path the way chi's tree does with that pattern alone:
//
//   - a static part matches itself, byte for byte;
//   - {name} takes the path up to the first byte equal to its tail (the
//     pattern's byte after '}', '/' at the end), never a '/'; at least one
//     byte must be left (the value is empty when that byte is the tail);
//   - {name:re} takes the path up to the first tail byte, at least one
//     byte, a '/' included when the tail is not '/'; chi's regexp (re with
//     "^" and "$" added where missing, so "a|b" is "^a|b$") must match it
//     somewhere (MatchString);
//   - * takes the rest, possibly nothing.
//
// So each pattern is a deterministic automaton over runes (a regexp's state
// is the set of its threads, as in a Pike VM), and the question is a
// breadth-first search over the product of the automata, trying one
// representative rune per class of runes that no pattern tells apart. It is
// exact for static parts, parameters, catch-alls and regexps whose only
// assertions are ^ and $ (begin and end of the value). The other assertions
// (\b, \B, multi-line ^ and $) are taken as always true in a pattern that
// must match and always false in one that must not, and the search gives up
// past searchLimit steps; in both cases it reports an overlap it could not
// show (assumed). An overlap may thus be reported that does not exist; none
// is missed. A path the search found is checked against chi itself before it
// is called shown.

// searchLimit bounds the work of one search (states explored times the
// alphabet); past it the search assumes an overlap.
const searchLimit = 1 << 21

// errPatternUnsupported: a pattern the overlap search cannot read (chi
// refuses it, or a parameter's tail byte is not ASCII).
var errPatternUnsupported = errors.New("overlap: pattern not understood by the overlap check")

type tokKind uint8

const (
	tokStatic tokKind = iota
	tokParam
	tokRegexp
	tokCatchAll
)

// patTok is one token of a chi pattern.
type patTok struct {
	kind tokKind
	lit  []rune       // static
	tail rune         // parameter: the byte its value stops before
	prog *syntax.Prog // regexp parameter
}

// chiPat is a parsed chi pattern.
type chiPat struct {
	text string
	toks []patTok
	// exact: every regexp assertion is ^ or $ (modelled exactly).
	exact bool
}

// parseChiPattern reads a pattern as chi's patNextSegment does.
func parseChiPattern(pattern string) (*chiPat, error) {
	p := &chiPat{text: pattern, exact: true}
	static := func(s string) {
		if s != "" {
			p.toks = append(p.toks, patTok{kind: tokStatic, lit: []rune(s)})
		}
	}
	if !strings.HasPrefix(pattern, "/") || !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("%w: %q", errPatternUnsupported, pattern)
	}
	rest := pattern
	for rest != "" {
		ps, ws := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '*')
		if ps < 0 && ws < 0 {
			static(rest)
			break
		}
		if ws >= 0 && (ps < 0 || ws < ps) {
			if ps >= 0 || ws != len(rest)-1 {
				return nil, fmt.Errorf("%w: %q: '*' must end the pattern", errPatternUnsupported, pattern)
			}
			static(rest[:ws])
			p.toks = append(p.toks, patTok{kind: tokCatchAll})
			break
		}
		static(rest[:ps])
		cc, pe := 0, ps
		for i, c := range rest[ps:] {
			if c == '{' {
				cc++
			} else if c == '}' {
				cc--
				if cc == 0 {
					pe = ps + i
					break
				}
			}
		}
		if pe == ps {
			return nil, fmt.Errorf("%w: %q: '}' missing", errPatternUnsupported, pattern)
		}
		key := rest[ps+1 : pe]
		pe++
		tail := byte('/')
		if pe < len(rest) {
			tail = rest[pe]
		}
		if tail >= utf8.RuneSelf {
			return nil, fmt.Errorf("%w: %q: a parameter followed by a non-ASCII byte", errPatternUnsupported, pattern)
		}
		tok := patTok{kind: tokParam, tail: rune(tail)}
		if _, rexpat, isRegexp := strings.Cut(key, ":"); isRegexp {
			tok.kind = tokRegexp
			if rexpat != "" { // chi anchors only where the regexp does not
				if rexpat[0] != '^' {
					rexpat = "^" + rexpat
				}
				if rexpat[len(rexpat)-1] != '$' {
					rexpat += "$"
				}
			}
			re, err := syntax.Parse(rexpat, syntax.Perl)
			if err != nil {
				return nil, fmt.Errorf("%w: %q: %v", errPatternUnsupported, pattern, err)
			}
			if tok.prog, err = syntax.Compile(re.Simplify()); err != nil {
				return nil, fmt.Errorf("%w: %q: %v", errPatternUnsupported, pattern, err)
			}
			for _, in := range tok.prog.Inst {
				if in.Op == syntax.InstEmptyWidth && syntax.EmptyOp(in.Arg)&^(syntax.EmptyBeginText|syntax.EmptyEndText) != 0 {
					p.exact = false
				}
			}
		}
		p.toks = append(p.toks, tok)
		rest = rest[pe:]
	}
	return p, nil
}

// mstate is a pattern's automaton state.
type mstate struct {
	tok     int  // current token; len(toks): the pattern is done; -1: dead
	off     int  // static: runes of it matched
	started bool // parameter: its value is not empty
	sticky  bool // regexp: a match was found already
	threads []uint32
}

func (p *chiPat) enter(i int) mstate { return mstate{tok: i} }

// step feeds r to s and appends the states reached to out. over says
// how assertions that are not modelled count (true: always hold); fall
// allows chi's fall-through: when no value of a parameter leads to a match,
// chi goes on with the parameter's children on the same input, the value
// empty (tree.go, findRoute, after the loop over a parameter's nodes).
func (p *chiPat) step(s mstate, r rune, over, fall bool, out []mstate) []mstate {
	if s.tok < 0 || s.tok >= len(p.toks) {
		return out
	}
	t := &p.toks[s.tok]
	switch t.kind {
	case tokStatic:
		if t.lit[s.off] != r {
			return out
		}
		s.off++
		if s.off == len(t.lit) {
			return append(out, p.enter(s.tok+1))
		}
		return append(out, s)
	case tokCatchAll:
		return append(out, s)
	}
	if fall && !s.started {
		out = p.step(p.enter(s.tok+1), r, over, fall, out)
	}
	if r == t.tail { // the value ends before its first tail byte
		if !valueOK(t, s, over) {
			return out
		}
		return p.step(p.enter(s.tok+1), r, over, fall, out)
	}
	if r == '/' && t.kind == tokParam {
		return out
	}
	if t.kind == tokRegexp && !s.sticky {
		runes, matched := closure(t.prog, s.threads, !s.started, false, over)
		if matched {
			s.sticky, s.threads = true, nil
		} else {
			s.threads = advance(t.prog, runes, r)
		}
	}
	s.started = true
	return append(out, s)
}

// accepts reports whether the path may end in state s.
func (p *chiPat) accepts(s mstate, over bool) bool {
	switch {
	case s.tok < 0:
		return false
	case s.tok == len(p.toks):
		return true
	}
	t := &p.toks[s.tok]
	switch t.kind {
	case tokStatic:
		return false
	case tokCatchAll:
		return true
	}
	// No tail byte left: chi takes the rest only when the tail is '/', and
	// nothing may follow.
	return t.tail == '/' && s.tok == len(p.toks)-1 && s.started && valueOK(t, s, over)
}

// valueOK reports whether the parameter's value may end here.
func valueOK(t *patTok, s mstate, over bool) bool {
	if t.kind == tokParam {
		return true
	}
	if !s.started {
		return false
	}
	if s.sticky {
		return true
	}
	_, matched := closure(t.prog, s.threads, false, true, over)
	return matched
}

// closure follows the empty moves from the pending threads and a new one at
// the program's start (a match may begin anywhere): the rune instructions
// reached, and whether Match was.
func closure(prog *syntax.Prog, pending []uint32, atBegin, atEnd, over bool) ([]uint32, bool) {
	seen := make([]bool, len(prog.Inst))
	stack := append(slices.Clip(pending), uint32(prog.Start))
	var runes []uint32
	matched := false
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Out, in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			if emptyHolds(syntax.EmptyOp(in.Arg), atBegin, atEnd, over) {
				stack = append(stack, in.Out)
			}
		case syntax.InstMatch:
			matched = true
		case syntax.InstFail:
		default:
			runes = append(runes, pc)
		}
	}
	return runes, matched
}

func emptyHolds(op syntax.EmptyOp, atBegin, atEnd, over bool) bool {
	if op&syntax.EmptyBeginText != 0 && !atBegin || op&syntax.EmptyEndText != 0 && !atEnd {
		return false
	}
	if op&^(syntax.EmptyBeginText|syntax.EmptyEndText) != 0 {
		return over
	}
	return true
}

// advance moves the threads at rune instructions that match r.
func advance(prog *syntax.Prog, runes []uint32, r rune) []uint32 {
	var out []uint32
	for _, pc := range runes {
		in := &prog.Inst[pc]
		ok := false
		switch in.Op {
		case syntax.InstRune:
			ok = in.MatchRune(r)
		case syntax.InstRune1:
			ok = r == in.Rune[0]
		case syntax.InstRuneAny:
			ok = true
		case syntax.InstRuneAnyNotNL:
			ok = r != '\n'
		}
		if ok {
			out = append(out, in.Out)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// alphabet returns one rune of each class of runes that no pattern tells
// apart: the classes are cut at every static rune, tail, '/', regexp range
// bound and case-folded literal.
func alphabet(pats []*chiPat) []rune {
	cuts := map[rune]bool{0: true}
	cut := func(lo, hi rune) {
		cuts[lo] = true
		if hi < unicode.MaxRune {
			cuts[hi+1] = true
		}
	}
	cut('/', '/')
	cut(utf8.RuneError, utf8.RuneError) // how a regexp reads an invalid byte
	for _, p := range pats {
		for _, t := range p.toks {
			switch t.kind {
			case tokStatic:
				for _, r := range t.lit {
					cut(r, r)
				}
			case tokParam:
				cut(t.tail, t.tail)
			case tokRegexp:
				cut(t.tail, t.tail)
				for _, in := range t.prog.Inst {
					switch in.Op {
					case syntax.InstRune:
						if len(in.Rune) == 1 {
							r0 := in.Rune[0]
							cut(r0, r0)
							if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
								for f := unicode.SimpleFold(r0); f != r0; f = unicode.SimpleFold(f) {
									cut(f, f)
								}
							}
							continue
						}
						for i := 0; i+1 < len(in.Rune); i += 2 {
							cut(in.Rune[i], in.Rune[i+1])
						}
					case syntax.InstRune1:
						cut(in.Rune[0], in.Rune[0])
					case syntax.InstRuneAnyNotNL:
						cut('\n', '\n')
					}
				}
			}
		}
	}
	bounds := make([]rune, 0, len(cuts))
	for r := range cuts {
		bounds = append(bounds, r)
	}
	slices.Sort(bounds)
	var reps []rune
	for i, lo := range bounds {
		hi := rune(unicode.MaxRune + 1)
		if i+1 < len(bounds) {
			hi = bounds[i+1]
		}
		if r, ok := representative(lo, hi); ok {
			reps = append(reps, r)
		}
	}
	// Readable runes first: the search tries them in this order, so a
	// path it shows is made of them where it can be.
	slices.SortStableFunc(reps, func(a, b rune) int { return runeRank(a) - runeRank(b) })
	return reps
}

func runeRank(r rune) int {
	switch {
	case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
		return 0
	case 'A' <= r && r <= 'Z':
		return 1
	case 0x20 < r && r < 0x7f:
		return 2
	}
	return 3
}

// representative picks a readable rune of [lo, hi) that UTF-8 can encode.
func representative(lo, hi rune) (rune, bool) {
	for _, c := range "x1az09AZ-_.~" {
		if lo <= c && c < hi {
			return c, true
		}
	}
	for r := lo; r < hi && r < lo+0x1000; r++ {
		if utf8.ValidRune(r) && (r > 0x20 && r != 0x7f || r+1 == hi) {
			return r, true
		}
	}
	if utf8.ValidRune(lo) {
		return lo, true
	}
	for _, r := range []rune{0xE000, hi - 1} { // past the surrogates
		if lo <= r && r < hi && utf8.ValidRune(r) {
			return r, true
		}
	}
	return 0, false
}

// Result is the answer of Search.
type Result struct {
	// Found: a path may be matched by every must pattern and no mustNot one.
	Found bool
	// Shown: Witness is such a path, checked against chi; otherwise the
	// overlap is assumed (the search gave up or could not be exact).
	Shown   bool
	Witness string
}

// String describes the overlap for an error message.
func (o Result) String() string {
	switch {
	case !o.Found:
		return "no path"
	case o.Shown:
		return fmt.Sprintf("for example %q", o.Witness)
	}
	return "assumed: the check cannot rule it out"
}

// Search answers whether some path is matched by every pattern of
// must (at least one) and by no pattern of mustNot, each pattern as chi
// matches it alone. A must pattern the search cannot read is assumed to
// match every path; a mustNot pattern it cannot read is left out.
func Search(must, mustNot []string) Result {
	assumed := Result{Found: true}
	var ms, ns []*chiPat
	for _, s := range must {
		p, err := parseChiPattern(s)
		if err != nil {
			return assumed
		}
		ms = append(ms, p)
	}
	for _, s := range mustNot {
		if p, err := parseChiPattern(s); err == nil {
			ns = append(ns, p)
		}
	}
	if len(ms) == 0 {
		return assumed
	}
	witness, found, complete := searchPaths(ms, ns)
	if !complete {
		return assumed
	}
	if !found {
		return Result{}
	}
	if !chiAgrees(must, mustNot, witness) {
		return assumed
	}
	return Result{Found: true, Shown: true, Witness: witness}
}

type searchNode struct {
	sets   [][]mstate // per pattern, the states it may be in
	parent int
	r      rune
}

// searchPaths is the breadth-first search over the product automaton; it
// returns the shortest path found, whether one was, and whether the search
// was complete (not cut off by searchLimit). The must patterns run with
// unmodelled assertions holding and chi's fall-through (more matches), the
// mustNot ones with neither (fewer): in a tree of many routes chi falls
// through only to the last parameter node of a group, so a route may match
// less there than alone.
func searchPaths(must, mustNot []*chiPat) (string, bool, bool) {
	all := append(slices.Clip(must), mustNot...)
	sigma := alphabet(all)
	start := make([][]mstate, len(all))
	for i, p := range all {
		start[i] = []mstate{p.enter(0)}
	}
	nodes := []searchNode{{sets: start, parent: -1}}
	seen := map[string]bool{setsKey(start): true}
	work := 0
	for head := 0; head < len(nodes); head++ {
		cur := nodes[head].sets
	next:
		for _, r := range sigma {
			if work++; work > searchLimit {
				return "", false, false
			}
			sets := make([][]mstate, len(all))
			for i, p := range all {
				isMust := i < len(must)
				var out []mstate
				for _, s := range cur[i] {
					out = p.step(s, r, isMust, isMust, out)
				}
				if isMust && len(out) == 0 {
					continue next
				}
				sets[i] = canonical(out)
			}
			key := setsKey(sets)
			if seen[key] {
				continue
			}
			seen[key] = true
			nodes = append(nodes, searchNode{sets: sets, parent: head, r: r})
			if acceptsAll(all, sets, len(must)) {
				var rs []rune
				for n := len(nodes) - 1; n > 0; n = nodes[n].parent {
					rs = append(rs, nodes[n].r)
				}
				slices.Reverse(rs)
				return string(rs), true, true
			}
		}
	}
	return "", false, true
}

// acceptsAll: every must pattern may end here, no mustNot pattern may.
func acceptsAll(all []*chiPat, sets [][]mstate, nMust int) bool {
	for i, p := range all {
		isMust := i < nMust
		if slices.ContainsFunc(sets[i], func(s mstate) bool { return p.accepts(s, isMust) }) != isMust {
			return false
		}
	}
	return true
}

// canonical sorts and deduplicates a set of states.
func canonical(set []mstate) []mstate {
	slices.SortFunc(set, func(a, b mstate) int { return strings.Compare(a.key(), b.key()) })
	return slices.CompactFunc(set, func(a, b mstate) bool { return a.key() == b.key() })
}

func (s mstate) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d.%d.%t.%t", s.tok, s.off, s.started, s.sticky)
	for _, pc := range s.threads {
		fmt.Fprintf(&b, ",%d", pc)
	}
	return b.String()
}

func setsKey(sets [][]mstate) string {
	var b strings.Builder
	for _, set := range sets {
		for _, s := range set {
			b.WriteString(s.key())
			b.WriteByte(';')
		}
		b.WriteByte('|')
	}
	return b.String()
}

// chiAgrees checks a path against chi: every must pattern matches it
// alone, no mustNot pattern does.
func chiAgrees(must, mustNot []string, path string) bool {
	for i, pat := range append(slices.Clip(must), mustNot...) {
		if chiMatches(pat, path) != (i < len(must)) {
			return false
		}
	}
	return true
}

// chiMatches reports whether chi's tree with pattern alone matches path.
func chiMatches(pattern, path string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	mux := chi.NewRouter()
	mux.Method(http.MethodPost, pattern, http.NotFoundHandler())
	return mux.Find(chi.NewRouteContext(), http.MethodPost, path) != ""
}
