package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/inbound"
)

// Look-alikes: a mutation the sidecar would pass without enforcement (no
// route while unmatchedMutations is pass, a route in off, a route in
// shadow) whose path, read as the most lenient backend may read it
// (proxy/inbound, lenientpath.go), is the path of a stricter route is that route's
// business, never passed as it is: /v1/items/1/, //v1/items/1,
// /v1/./items/1, /V1/ITEMS/1, /v1/items;v=1/1, /v1\items\1 and
// /v1/%69tems/1 all write item 1 on many backends. Such a mutation is
// refused with ROUTE_NOT_PROTECTED when the look-alike is an enforced
// route or an enforced shape of the ledger, and handled as a shadow
// route's refusal (forwarded and counted) when it is a shadow route. A
// mutation without a lenient reading (NUL, control characters, invalid
// UTF-8) is refused when it would be passed unchecked (no route, or off).
//
// The patterns are read leniently too: static parts folded and with '\'
// as '/', repeated slashes merged, a trailing slash dropped (and a
// trailing "/*" also matching nothing), regexp parameters matched case
// insensitively.

// lookalikes holds the lenient trees of the enforced and of the shadow
// routes.
type lookalikes struct {
	trees   map[Mode]*chi.Mux
	targets map[string]lookalike // by tree mode, method and lenient pattern
	methods []string
}

// lookalike is what a lenient reading matched: a route, or an enforced
// ledger shape no route is configured for.
type lookalike struct {
	rt    *route
	shape string
}

func (l lookalike) name() string {
	if l.rt != nil {
		return l.rt.key
	}
	return l.shape
}

// newLookalikes builds the trees of the routes in enforce and shadow and
// of the enforced ledger shapes.
func newLookalikes(routes []*route, enforcedShapes []string) (*lookalikes, error) {
	l := &lookalikes{trees: map[Mode]*chi.Mux{ModeEnforce: chi.NewRouter(), ModeShadow: chi.NewRouter()}, targets: map[string]lookalike{}}
	slices.SortFunc(routes, func(a, b *route) int { return strings.Compare(a.key, b.key) })
	configured := map[string]bool{}
	add := func(mode Mode, method, pattern string, target lookalike) error {
		if err := registerRouteMethod(method); err != nil {
			return err
		}
		if !slices.Contains(l.methods, method) {
			l.methods = append(l.methods, method)
		}
		for _, lp := range lenientPatterns(pattern) {
			key := string(mode) + " " + method + " " + lp
			if _, dup := l.targets[key]; dup {
				continue
			}
			if err := addPattern(l.trees[mode], method, lp, "lenient pattern of "+target.name()); err != nil {
				return err
			}
			l.targets[key] = target
		}
		return nil
	}
	for _, r := range routes {
		configured[routeShape(r.Method, r.Path)] = true
		if r.Mode == ModeEnforce || r.Mode == ModeShadow {
			if err := add(r.Mode, r.Method, r.Path, lookalike{rt: r}); err != nil {
				return nil, err
			}
		}
	}
	for _, shape := range enforcedShapes {
		if configured[shape] {
			continue
		}
		method, pattern := shapePattern(shape)
		if err := add(ModeEnforce, method, pattern, lookalike{shape: shape}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// lenientPatterns are the patterns a lenient reading of a path is matched
// against for pattern: its static parts percent-decoded and folded, '\' as
// '/', repeated slashes merged and a trailing slash dropped; its regexp parameters case
// insensitive; for a trailing "/*" also the pattern without it (the
// catch-all matching nothing, whose slash the reading drops).
func lenientPatterns(pattern string) []string {
	var b strings.Builder
	static := func(text string) {
		// As a path is read: decoded, '\' as '/', folded, slashes merged.
		if d, ok := inbound.DecodeFully(text); ok && utf8.ValidString(d) {
			text = d
		}
		text = inbound.FoldString(strings.ReplaceAll(text, `\`, "/"))
		for strings.Contains(text, "//") {
			text = strings.ReplaceAll(text, "//", "/")
		}
		if strings.HasSuffix(b.String(), "/") {
			text = strings.TrimPrefix(text, "/")
		}
		b.WriteString(text)
	}
	for rest := pattern; rest != ""; {
		i := strings.IndexAny(rest, "{*")
		if i < 0 {
			static(rest)
			break
		}
		static(rest[:i])
		if rest[i] == '*' {
			b.WriteByte('*')
			rest = rest[i+1:]
			continue
		}
		end := matchingBrace(rest, i)
		if end < 0 {
			b.WriteString(rest[i:])
			break
		}
		name, re, isRegexp := strings.Cut(rest[i+1:end], ":")
		if isRegexp && re != "" {
			b.WriteString("{" + name + ":(?i)" + re + "}")
		} else {
			b.WriteString(rest[i : end+1])
		}
		rest = rest[end+1:]
	}
	s := b.String()
	if len(s) > 1 && strings.HasSuffix(s, "/") {
		s = s[:len(s)-1]
	}
	out := []string{s}
	if trimmed, ok := strings.CutSuffix(s, "/*"); ok {
		if trimmed == "" {
			trimmed = "/"
		}
		out = append(out, trimmed)
	}
	return out
}

// find returns the strictest look-alike of a mutation's escaped path that
// is stricter than mode (ModeOff also for an unmatched mutation), with
// the reading that matched; bad when the path has no lenient reading.
func (l *lookalikes) find(method, escaped string, mode Mode) (target lookalike, reading string, found, bad bool) {
	readings, ok := inbound.LenientPaths(escaped)
	if !ok {
		return lookalike{}, "", false, true
	}
	for _, m := range []Mode{ModeEnforce, ModeShadow} {
		if m == mode {
			break
		}
		for _, rd := range readings {
			for _, meth := range l.methods {
				// Unicode folding, as caseVariant: wider refuses more.
				if !strings.EqualFold(meth, method) {
					continue
				}
				if pattern := l.trees[m].Find(chi.NewRouteContext(), meth, rd); pattern != "" {
					if t, ok := l.targets[string(m)+" "+meth+" "+pattern]; ok {
						return t, rd, true, false
					}
				}
			}
		}
	}
	return lookalike{}, "", false, false
}

// lookalike decides on a mutation about to be passed without enforcement
// (rt nil: unmatched and passed; else rt in off or shadow): found when its
// path is a look-alike of a stricter route, or has no lenient reading and
// would pass unchecked; the outcome is then its refusal.
func (p *Proxy) lookalike(req *http.Request, rt *route) (outcome, bool) {
	label, mode, than := "unmatched", "pass", ModeOff
	if rt != nil {
		label, mode, than = rt.key, string(rt.Mode), rt.Mode
	}
	target, reading, found, bad := p.looks.find(req.Method, req.URL.EscapedPath(), than)
	var rej *rejection
	switch {
	case bad && than == ModeShadow:
		return outcome{}, false // the shadow route's pipeline checks it, and forwards it
	case bad:
		rej = reject(fencegate.CodeRouteNotProtected, req.Method+" "+req.URL.EscapedPath()+
			": after percent-decoding the path holds NUL, a control character or invalid UTF-8, or its encoding does not settle; such a mutation is never passed unchecked")
	case !found:
		return outcome{}, false
	default:
		rej = reject(fencegate.CodeRouteNotProtected, fmt.Sprintf(
			"%s %s is not passed: read as a lenient backend may read it (%s), it is the path of the protected %s; send the path as that route spells it",
			req.Method, req.URL.EscapedPath(), reading, target.name())).with("route", target.name())
		switch {
		case target.rt != nil && target.rt.Mode == ModeShadow:
			// The shadow route's own refusal: forwarded, and counted as
			// what enforce would refuse.
			return (&attempt{rt: target.rt, req: req}).refused(rej, 0), true
		case target.rt != nil:
			label, mode = target.rt.key, string(target.rt.Mode) // counted under the enforced route
		}
	}
	return rejected(req, label, mode, rej,
		zap.String("method", req.Method), zap.String("path", req.URL.EscapedPath()), zap.String("route", label)), true
}
