package authn

import (
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate/store"
)

// The pure part of the trust pins: which keys of the bundle file verify,
// which wait for a controlled step, which pins a reload removes, and how
// often "in use" is written. trust.go does the I/O.

// Key states, as the admin API lists them and the gauge counts them.
const (
	// KeyTrusted: in the bundle file and pinned as the same key: grants
	// it signed are verified.
	KeyTrusted = "trusted"
	// KeyUnpinned: in the bundle file, not pinned: a grant it signed is
	// GRANT_INVALID (unknown kid) until an operator accepts it or a
	// signed bundle pins it.
	KeyUnpinned = "unpinned"
	// KeyConflict: in the bundle file, but its kid is pinned as another
	// key (thumbprint or algorithm): refused like an unpinned key.
	KeyConflict = "conflict"
	// KeyNotInBundle: pinned, not in the bundle file (kept while in use,
	// or because the last pins are never removed).
	KeyNotInBundle = "not-in-bundle"
)

// pinIndex finds pins by kid.
type pinIndex map[string]store.TrustedKey

func indexPins(pins []store.TrustedKey) pinIndex {
	m := make(pinIndex, len(pins))
	for _, p := range pins {
		m[p.Kid] = p
	}
	return m
}

// pinned reports whether k is pinned as this very key.
func (ix pinIndex) pinned(k fileKey) bool {
	p, ok := ix[k.kid]
	return ok && p.Thumbprint == k.thumbprint && p.Alg == k.alg
}

// stateOf is the state of a key of the file.
func (ix pinIndex) stateOf(k fileKey) string {
	switch p, ok := ix[k.kid]; {
	case !ok:
		return KeyUnpinned
	case p.Thumbprint != k.thumbprint || p.Alg != k.alg:
		return KeyConflict
	}
	return KeyTrusted
}

// trustedKeys are the file's keys that are pinned: the verification set.
func trustedKeys(f *bundleFile, ix pinIndex) []fileKey {
	var out []fileKey
	for _, k := range f.keys {
		if ix.pinned(k) {
			out = append(out, k)
		}
	}
	return out
}

// unpinnedKeys are the file's keys whose kid is not pinned at all (a kid
// pinned as another key is a conflict, never pinned by a bundle).
func unpinnedKeys(f *bundleFile, ix pinIndex) []fileKey {
	var out []fileKey
	for _, k := range f.keys {
		if _, ok := ix[k.kid]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// inUseUntil is until when a grant signed by kid may still be held: the
// later of what this sidecar saw and what the pin stores.
func inUseUntil(kid string, ix pinIndex, mem map[string]time.Time) time.Time {
	u := mem[kid]
	if p, ok := ix[kid]; ok && p.InUseUntil.After(u) {
		u = p.InUseUntil
	}
	return u
}

// droppedInUse are the keys of the current verification set (kid ->
// thumbprint) that the next one lacks while a grant they signed may still
// be held: a reload that drops them is refused unless forced. Sorted.
func droppedInUse(current map[string]string, next []fileKey, ix pinIndex, mem map[string]time.Time, now time.Time) []string {
	var out []string
	for kid, tp := range current {
		if slices.ContainsFunc(next, func(k fileKey) bool { return k.kid == kid && k.thumbprint == tp }) {
			continue
		}
		if inUseUntil(kid, ix, mem).After(now) {
			out = append(out, kid)
		}
	}
	slices.Sort(out)
	return out
}

// toUnpin are the pins a reload of f removes: those whose key (kid,
// thumbprint and alg) was in the previous file prev and is not in f (at
// the start, prev nil: every pin not in f), and that are not in use (or
// force). Only a key this sidecar saw leave the file: a key pinned from
// a newer file that another replica sees first is not in this sidecar's
// file yet, and stays. The second list are those kept because they are
// in use. Never every pin: a store without pins would trust the next
// bundle on first use, so when nothing of the file is pinned the pins
// stay (the third result says so).
func toUnpin(f, prev *bundleFile, pins []store.TrustedKey, mem map[string]time.Time, now time.Time, force bool) (unpin, inUse []string, keptLast bool) {
	ix := indexPins(pins)
	has := func(b *bundleFile, p store.TrustedKey) bool {
		k, ok := b.find(p.Kid)
		return ok && k.thumbprint == p.Thumbprint && k.alg == p.Alg
	}
	for _, p := range pins {
		if has(f, p) || prev != nil && !has(prev, p) {
			continue
		}
		if !force && inUseUntil(p.Kid, ix, mem).After(now) {
			inUse = append(inUse, p.Kid)
			continue
		}
		unpin = append(unpin, p.Kid)
	}
	if len(unpin) > 0 && len(unpin) == len(pins) {
		return nil, inUse, true
	}
	return unpin, inUse, false
}

// inUseStep is how far ahead of a grant's end the stored "in use until"
// is written, and so how often it is written while the key signs grants:
// a tenth of the grant's TTL, at least a second, in whole seconds. The
// stored time is always at least the true one (it is rewritten when a
// grant's end passes it, with the step added), so a restarted sidecar
// never drops a key earlier than it should; it refuses the removal at
// most one step longer than needed (a tenth of a TTL, or a second), and
// writes at most once per step per key: at most once a second, ten times
// per TTL under steady load, instead of once per request.
func inUseStep(ttl time.Duration) time.Duration {
	s := max(ttl/10, time.Second)
	if r := s % time.Second; r != 0 {
		s += time.Second - r
	}
	return s
}

// thumbprintsOf maps the kids of keys to their thumbprints.
func thumbprintsOf(keys []fileKey) map[string]string {
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k.kid] = k.thumbprint
	}
	return m
}

// keyRefs are the store references of keys (for PIN).
func keyRefs(keys []fileKey) []store.KeyRef {
	out := make([]store.KeyRef, len(keys))
	for i, k := range keys {
		out[i] = store.KeyRef{Kid: k.kid, Thumbprint: k.thumbprint, Alg: k.alg}
	}
	return out
}

// kidList is the kids of keys, comma-separated (for logs).
func kidList(keys []fileKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.kid
	}
	return strings.Join(s, ", ")
}
