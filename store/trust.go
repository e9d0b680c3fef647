package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// Trust pin limits.
const (
	// MaxTrustedKeys bounds the keys pinned in a store, and the keys of
	// one TrustInput.
	MaxTrustedKeys = 64
	// MaxKidLen is the maximum length in bytes of a key ID.
	MaxKidLen = 256
	// ThumbprintLen is the length of a key's RFC 7638 JWK thumbprint: the
	// SHA-256 of its canonical JWK, base64url without padding.
	ThumbprintLen = 43
	// MaxInUseAhead bounds how far after Now an IN_USE may extend a pin's
	// InUseUntil.
	MaxInUseAhead = 31 * 24 * time.Hour
)

// TrustKind is the kind of a change to the trust pins.
type TrustKind string

// Trust changes.
const (
	// TrustPin pins keys: a grant signed by a pinned key that is also in
	// the trust bundle is verified. A kid pinned already with the same
	// thumbprint is left as it is; with another thumbprint the whole input
	// is refused (ErrConflict): a kid names one key for ever, unless an
	// operator unpins it first. A PIN of kind SIGNED_BUNDLE carries the
	// bundle's sequence (TrustInput.BundleSeq) and is refused when the pin
	// set has taken that sequence or a later one already (a replay).
	TrustPin TrustKind = "PIN"
	// TrustUnpin removes pins. A pin whose InUseUntil is after Now (a
	// grant signed by it may still be held) is removed only with Force
	// (else ErrKeyInUse), and the last pins are never all removed
	// (ErrConflict): a store with no pins would trust the next bundle it
	// is shown on first use.
	TrustUnpin TrustKind = "UNPIN"
	// TrustInUse extends pins' InUseUntil to Until; it never shortens it.
	TrustInUse TrustKind = "IN_USE"
)

// TrustHow says how a key came to be pinned.
type TrustHow string

// How keys are pinned.
const (
	// TrustFirstUse: the trust bundle as the sidecar found it on a store
	// with no pins (trust on first use). A PIN of this kind pins all its
	// keys when the store holds no pin at all, and changes nothing
	// otherwise, so replicas starting together pin one bundle.
	TrustFirstUse TrustHow = "FIRST_USE"
	// TrustOperator: an operator's explicit command.
	TrustOperator TrustHow = "OPERATOR"
	// TrustSignedBundle: a bundle signed by a key already pinned. Its
	// sequence must be above the pin set's (TrustedKey.BundleSeq): a
	// signed bundle taken once, or an older one, pins nothing again, so a
	// replayed old bundle cannot bring back a key removed since.
	TrustSignedBundle TrustHow = "SIGNED_BUNDLE"
)

// TrustedKey is one pinned key.
type TrustedKey struct {
	// Kid is the key ID.
	Kid string `json:"kid"`
	// Thumbprint is the key's RFC 7638 JWK thumbprint (SHA-256,
	// base64url without padding): the key material the kid names.
	Thumbprint string `json:"thumbprint"`
	// Alg is the key's JWS algorithm (fencegate.Algorithms).
	Alg string `json:"alg"`
	// PinnedAt is the Now of the PIN.
	PinnedAt time.Time `json:"pinnedAt"`
	// How is how it was pinned.
	How TrustHow `json:"how"`
	// Detail is free text for operators (who, which bundle).
	Detail string `json:"detail,omitempty"`
	// InUseUntil is until when a grant signed by the key may still be
	// held (zero: none seen); see TrustInUse.
	InUseUntil time.Time `json:"inUseUntil,omitzero"`
	// BundleSeq is the pin set's signed-bundle watermark: the highest
	// sequence of a signed bundle the set has taken (the sidecar uses the
	// bundle's issue time, Unix milliseconds), 0 when none. It is a
	// property of the whole set, kept in every pin (the set's watermark is
	// the maximum over its pins; the last pins are never removed, so it
	// survives every UNPIN). Pins of earlier versions decode as 0.
	BundleSeq uint64 `json:"bundleSeq,omitempty"`
}

// BundleSeqOf returns the pin set's signed-bundle watermark: the highest
// BundleSeq of its pins.
func BundleSeqOf(pins []TrustedKey) uint64 {
	var s uint64
	for _, p := range pins {
		s = max(s, p.BundleSeq)
	}
	return s
}

// KeyRef names a key in a TrustInput.
type KeyRef struct {
	// Kid is the key ID.
	Kid string
	// Thumbprint is the key's RFC 7638 thumbprint: required for PIN; for
	// UNPIN and IN_USE it may be "" (any), else it must be the pin's.
	Thumbprint string
	// Alg is the key's algorithm: required for PIN, empty otherwise.
	Alg string
}

// TrustInput is one change to the trust pins, applied to all its keys at
// once or not at all.
type TrustInput struct {
	// Kind is PIN, UNPIN or IN_USE.
	Kind TrustKind
	// Keys are the keys changed: 1..MaxTrustedKeys, distinct kids.
	Keys []KeyRef
	// How is, for PIN, how the keys are pinned; empty otherwise.
	How TrustHow
	// Detail is, for PIN, kept with the new pins (at most MaxDetailLen
	// bytes); empty otherwise.
	Detail string
	// Until is, for IN_USE, the time a grant signed by the keys may be
	// held until: after Now, at most MaxInUseAhead later. Zero otherwise.
	Until time.Time
	// Force is, for UNPIN, removal even while a key is in use.
	Force bool
	// BundleSeq is, for a PIN of kind SIGNED_BUNDLE, the signed bundle's
	// sequence (>= 1; the sidecar passes its issue time in Unix
	// milliseconds); for FIRST_USE the sequence of the bundle pinned when
	// it is a signed one (else 0). Zero otherwise.
	BundleSeq uint64
	// Now is the caller's current time.
	Now time.Time
}

// Validate checks a trust input field by field.
func (in TrustInput) Validate() error {
	if in.Kind != TrustPin && in.Kind != TrustUnpin && in.Kind != TrustInUse {
		return invalid("kind", "want PIN, UNPIN or IN_USE")
	}
	if err := in.validateKeys(); err != nil {
		return err
	}
	if err := in.validateKindFields(); err != nil {
		return err
	}
	if err := checkText("detail", in.Detail, MaxDetailLen, false); err != nil {
		return err
	}
	if err := checkNow(in.Now); err != nil {
		return err
	}
	if in.Kind == TrustInUse {
		if !in.Until.After(in.Now) {
			return invalid("until", "must be after now")
		}
		if in.Until.Sub(in.Now) > MaxInUseAhead {
			return invalid("until", "further than "+MaxInUseAhead.String()+" after now")
		}
	}
	return nil
}

// validateKeys checks Keys: 1..MaxTrustedKeys of them, each kid once, a
// thumbprint where given (and always for PIN), an algorithm only and
// always for PIN.
func (in TrustInput) validateKeys() error {
	if len(in.Keys) == 0 || len(in.Keys) > MaxTrustedKeys {
		return invalid("keys", "want 1.."+strconv.Itoa(MaxTrustedKeys)+" keys")
	}
	seen := make(map[string]bool, len(in.Keys))
	for _, k := range in.Keys {
		if err := checkText("keys.kid", k.Kid, MaxKidLen, true); err != nil {
			return err
		}
		if seen[k.Kid] {
			return invalid("keys.kid", "kid "+strconv.Quote(k.Kid)+" given twice")
		}
		seen[k.Kid] = true
		if k.Thumbprint != "" || in.Kind == TrustPin {
			if err := checkThumbprint(k.Thumbprint); err != nil {
				return err
			}
		}
		switch {
		case in.Kind == TrustPin && !slices.Contains(fencegate.Algorithms(), k.Alg):
			return invalid("keys.alg", "want one of "+strings.Join(fencegate.Algorithms(), ", "))
		case in.Kind != TrustPin && k.Alg != "":
			return invalid("keys.alg", "only with PIN")
		}
	}
	return nil
}

// validateKindFields checks the fields that belong to one kind only (how,
// detail and bundleSeq to PIN, force to UNPIN, until to IN_USE), in that
// order.
func (in TrustInput) validateKindFields() error {
	if err := in.validatePinFields(); err != nil {
		return err
	}
	switch {
	case in.Kind != TrustUnpin && in.Force:
		return invalid("force", "only with UNPIN")
	case in.Kind != TrustInUse && !in.Until.IsZero():
		return invalid("until", "only with IN_USE")
	}
	return in.validateBundleSeq()
}

// validatePinFields checks how (one of the ways to pin, with PIN only)
// and detail (with PIN only).
func (in TrustInput) validatePinFields() error {
	switch {
	case in.Kind == TrustPin && in.How != TrustFirstUse && in.How != TrustOperator && in.How != TrustSignedBundle:
		return invalid("how", "want FIRST_USE, OPERATOR or SIGNED_BUNDLE")
	case in.Kind != TrustPin && in.How != "":
		return invalid("how", "only with PIN")
	case in.Kind != TrustPin && in.Detail != "":
		return invalid("detail", "only with PIN")
	}
	return nil
}

// validateBundleSeq checks bundleSeq: required by a SIGNED_BUNDLE pin,
// allowed with FIRST_USE, refused otherwise.
func (in TrustInput) validateBundleSeq() error {
	switch {
	case in.How == TrustSignedBundle && in.BundleSeq == 0:
		return invalid("bundleSeq", "a SIGNED_BUNDLE pin needs the bundle's sequence")
	case in.How != TrustSignedBundle && in.How != TrustFirstUse && in.BundleSeq != 0:
		return invalid("bundleSeq", "only with a PIN of SIGNED_BUNDLE or FIRST_USE")
	}
	return nil
}

// checkThumbprint accepts ThumbprintLen characters of base64url.
func checkThumbprint(t string) error {
	if len(t) != ThumbprintLen {
		return invalid("keys.thumbprint", "want "+strconv.Itoa(ThumbprintLen)+" base64url characters (RFC 7638, SHA-256)")
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return invalid("keys.thumbprint", "not base64url")
		}
	}
	return nil
}

// DecideTrust is RecordTrust as a pure function over the pins stored (in
// any order). It returns the pins after the change, by kid (fresh copies),
// and the change to write: Change.Trust (another copy) with WriteTrust when
// they must be stored. The whole pin set is the unit of
// atomicity. The rules are those of the kinds (TrustPin, TrustUnpin,
// TrustInUse, TrustFirstUse); an error changes nothing: ErrConflict for a
// kid pinned with another thumbprint, a thumbprint that is not the pin's,
// more than MaxTrustedKeys pins, or an UNPIN of every pin; ErrNotFound for
// an UNPIN or IN_USE of a kid not pinned; ErrKeyInUse for an UNPIN of a
// key in use without Force; ErrCorrupt for a stored set that repeats a kid
// or holds more than MaxTrustedKeys pins.
//
// The set's signed-bundle watermark (BundleSeqOf) is kept in every pin: a
// FIRST_USE pins with its BundleSeq, an OPERATOR pin takes the set's, and
// a SIGNED_BUNDLE PIN is refused (ErrConflict) when its BundleSeq is below
// the watermark, or equal to it while one of its keys is not pinned (that
// bundle was taken, and the key removed since); equal with every key
// pinned changes nothing (a replica taking the same bundle again); above,
// its keys are pinned and every pin takes its BundleSeq.
func DecideTrust(pins []TrustedKey, in TrustInput) ([]TrustedKey, Change, error) {
	next, changed, err := decideTrust(pins, in)
	if err != nil || !changed {
		return next, Change{}, err
	}
	return next, Change{Trust: slices.Clone(next), WriteTrust: true}, nil
}

// decideTrust is DecideTrust, reporting whether the pins changed.
func decideTrust(pins []TrustedKey, in TrustInput) ([]TrustedKey, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	if len(pins) > MaxTrustedKeys {
		return nil, false, fmt.Errorf("store: trust: %d pins stored, more than %d: %w", len(pins), MaxTrustedKeys, ErrCorrupt)
	}
	next := slices.Clone(pins)
	slices.SortFunc(next, func(a, b TrustedKey) int { return strings.Compare(a.Kid, b.Kid) })
	for i := 1; i < len(next); i++ {
		if next[i].Kid == next[i-1].Kid {
			return nil, false, fmt.Errorf("store: trust: kid %q pinned twice: %w", next[i].Kid, ErrCorrupt)
		}
	}
	find := func(kid string) int {
		i, ok := slices.BinarySearchFunc(next, kid, func(k TrustedKey, kid string) int { return strings.Compare(k.Kid, kid) })
		if !ok {
			return -1
		}
		return i
	}
	// pinned returns the index of k's pin, checking its thumbprint.
	pinned := func(k KeyRef) (int, error) {
		i := find(k.Kid)
		if i < 0 {
			return -1, fmt.Errorf("store: trust %s: kid %q is not pinned: %w", in.Kind, k.Kid, ErrNotFound)
		}
		if k.Thumbprint != "" && k.Thumbprint != next[i].Thumbprint {
			return -1, fmt.Errorf("store: trust %s: kid %q is pinned with thumbprint %s, not %s: %w", in.Kind, k.Kid, next[i].Thumbprint, k.Thumbprint, ErrConflict)
		}
		return i, nil
	}
	now := normTime(in.Now)
	changed := false
	switch in.Kind {
	case TrustPin:
		if in.How == TrustFirstUse && len(next) > 0 {
			return next, false, nil
		}
		seq := BundleSeqOf(next)
		if in.How == TrustSignedBundle {
			if in.BundleSeq < seq {
				return nil, false, fmt.Errorf("store: trust PIN: signed bundle %d is older than bundle %d taken already (a replay pins nothing): %w", in.BundleSeq, seq, ErrConflict)
			}
			if in.BundleSeq == seq {
				for _, k := range in.Keys {
					if i := find(k.Kid); i < 0 || next[i].Thumbprint != k.Thumbprint || next[i].Alg != k.Alg {
						return nil, false, fmt.Errorf("store: trust PIN: signed bundle %d was taken already and kid %q is not pinned as in it now (removed since; a replay pins nothing): %w", in.BundleSeq, k.Kid, ErrConflict)
					}
				}
				return next, false, nil
			}
			seq = in.BundleSeq
			for i := range next {
				next[i].BundleSeq = seq
			}
			changed = true
		}
		if in.How == TrustFirstUse {
			seq = in.BundleSeq
		}
		for _, k := range in.Keys {
			if i := find(k.Kid); i >= 0 {
				if p := next[i]; p.Thumbprint != k.Thumbprint || p.Alg != k.Alg {
					return nil, false, fmt.Errorf("store: trust PIN: kid %q is pinned as another key (thumbprint %s, %s), not %s (%s); unpin it first: %w",
						k.Kid, p.Thumbprint, p.Alg, k.Thumbprint, k.Alg, ErrConflict)
				}
				continue
			}
			next = append(next, TrustedKey{Kid: k.Kid, Thumbprint: k.Thumbprint, Alg: k.Alg, PinnedAt: now, How: in.How, Detail: in.Detail, BundleSeq: seq})
			changed = true
		}
		if len(next) > MaxTrustedKeys {
			return nil, false, fmt.Errorf("store: trust PIN: %d pins, more than %d: %w", len(next), MaxTrustedKeys, ErrConflict)
		}
		slices.SortFunc(next, func(a, b TrustedKey) int { return strings.Compare(a.Kid, b.Kid) })
	case TrustUnpin:
		drop := map[int]bool{}
		for _, k := range in.Keys {
			i, err := pinned(k)
			if err != nil {
				return nil, false, err
			}
			if u := next[i].InUseUntil; u.After(now) && !in.Force {
				return nil, false, fmt.Errorf("store: trust UNPIN: kid %q may sign a grant still held until %s: %w", k.Kid, u.Format(time.RFC3339), ErrKeyInUse)
			}
			drop[i] = true
		}
		if len(drop) == len(next) {
			return nil, false, fmt.Errorf("store: trust UNPIN: would leave no key pinned (a store without pins trusts the next bundle on first use): %w", ErrConflict)
		}
		kept := next[:0]
		for i, p := range next {
			if !drop[i] {
				kept = append(kept, p)
			}
		}
		next, changed = kept, true
	case TrustInUse:
		until := normTime(in.Until)
		for _, k := range in.Keys {
			i, err := pinned(k)
			if err != nil {
				return nil, false, err
			}
			if until.After(next[i].InUseUntil) {
				next[i].InUseUntil = until
				changed = true
			}
		}
	}
	return next, changed, nil
}
