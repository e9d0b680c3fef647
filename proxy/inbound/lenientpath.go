package inbound

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lenient reading of a request path: how the most lenient backend may
// read it, so that a mutation the sidecar would pass unchecked (no route
// with unmatchedMutations: pass, a route in off, or in shadow) is refused
// when that reading is a protected route's path (lenient.go;
// docs/design.md 6.2). Backends differ in which of these they apply and in
// what order; the reading applies all of them:
//
//  1. percent-decoding of every %XX, repeated until nothing changes (at
//     most maxDecodeRounds rounds, so %2569 is i): %2F and %5C become
//     separators, %2e a dot, and so on;
//  2. a path holding, after decoding, NUL or another control character
//     (C0, DEL, C1) or invalid UTF-8 (overlong forms and surrogates
//     included), or still changing after maxDecodeRounds rounds, has no
//     reading: such a mutation is never passed unchecked;
//  3. a backslash is a slash;
//  4. each segment loses its ";parameters" (Tomcat's /..;/ is a dot
//     segment);
//  5. dot segments are removed (RFC 3986 5.2.4) and empty segments dropped
//     (repeated and trailing slashes). The order of these two differs
//     between backends (/v1//../items is /items to one that merges slashes
//     first, /v1/items to RFC 3986), so there are two readings, one of each
//     order;
//  6. case is folded: each rune becomes the smallest of its simple case
//     folding orbit (k, K and the Kelvin sign are K), which the route
//     patterns' static parts are folded with too.
//
// Not applied: Unicode compatibility mappings (fullwidth ／ for /, which
// IIS's best-fit mapping may apply).
//
// Each reading is idempotent: reading a reading gives itself
// (FuzzLenientPath).

// maxDecodeRounds bounds the rounds of percent-decoding.
const maxDecodeRounds = 8

// LenientPaths returns the readings of an escaped request path (one or
// two), or ok=false when the path must not pass unchecked at all.
func LenientPaths(escaped string) (readings []string, ok bool) {
	segs, ok := lenientSegments(escaped)
	if !ok {
		return nil, false
	}
	merged, rfc := joinSegments(mergeFirst(segs)), joinSegments(rfcOrder(segs))
	if merged == rfc {
		return []string{merged}, true
	}
	return []string{merged, rfc}, true
}

// lenientPath is the reading that merges slashes before it removes dot
// segments.
func lenientPath(escaped string) (string, bool) {
	segs, ok := lenientSegments(escaped)
	if !ok {
		return "", false
	}
	return joinSegments(mergeFirst(segs)), true
}

// lenientPathRFC is the reading that removes dot segments in RFC 3986's
// order, then drops empty segments.
func lenientPathRFC(escaped string) (string, bool) {
	segs, ok := lenientSegments(escaped)
	if !ok {
		return "", false
	}
	return joinSegments(rfcOrder(segs)), true
}

// lenientSegments applies steps 1-4 and 6 and splits the path into its
// segments (the empty one before a leading slash dropped).
func lenientSegments(escaped string) ([]string, bool) {
	path, ok := DecodeFully(escaped)
	if !ok || !utf8.ValidString(path) {
		return nil, false
	}
	for _, r := range path {
		if unicode.IsControl(r) {
			return nil, false
		}
	}
	path = FoldString(strings.ReplaceAll(path, `\`, "/"))
	segs := strings.Split(path, "/")
	if len(segs) > 1 && segs[0] == "" {
		segs = segs[1:]
	}
	for i, s := range segs {
		segs[i], _, _ = strings.Cut(s, ";")
	}
	return segs, true
}

// mergeFirst drops empty segments, then removes dot segments.
func mergeFirst(segs []string) []string {
	var out []string
	for _, s := range segs {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return out
}

// rfcOrder removes dot segments with the empty ones in place (a ".." after
// "//" removes the empty segment), then drops the empty segments.
func rfcOrder(segs []string) []string {
	var out []string
	for _, s := range segs {
		switch s {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return mergeFirst(out)
}

func joinSegments(segs []string) string { return "/" + strings.Join(segs, "/") }

// DecodeFully percent-decodes s until nothing changes. A '%' not followed
// by two hex digits stays as it is. It fails when s still changes after
// maxDecodeRounds rounds.
func DecodeFully(s string) (string, bool) {
	for range maxDecodeRounds + 1 {
		next, changed := decodeOnce(s)
		if !changed {
			return s, true
		}
		s = next
	}
	return "", false
}

func decodeOnce(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	b := make([]byte, 0, len(s))
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			changed = true
			continue
		}
		b = append(b, s[i])
	}
	return string(b), changed
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// foldRune is the smallest rune of r's simple case folding orbit.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// FoldString folds every rune of a valid UTF-8 string.
func FoldString(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}
