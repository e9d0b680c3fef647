package authn

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/store"
)

// The operator's surface of the trust pins: the list, and the explicit
// acceptance of a key added to the bundle file.

var (
	// ErrTrustKeyNotInBundle: trust accept named a kid that is not in the
	// trust bundle file now.
	ErrTrustKeyNotInBundle = errors.New("authn: the kid is not in the trust bundle file")
	// ErrTrustThumbprint: trust accept named a thumbprint that is not the
	// one of the bundle file's key.
	ErrTrustThumbprint = errors.New("authn: the bundle file's key has another thumbprint")
)

// TrustKey is one row of the trust list: a key of the bundle file, a pin,
// or both.
type TrustKey struct {
	Kid string `json:"kid"`
	// Thumbprint is the RFC 7638 thumbprint of the bundle file's key (of
	// the pin when the key is not in the file).
	Thumbprint string `json:"thumbprint"`
	Alg        string `json:"alg"`
	// State is KeyTrusted, KeyUnpinned, KeyConflict or KeyNotInBundle.
	State string `json:"state"`
	// How, PinnedAt and Detail are the pin's (empty when not pinned).
	How      store.TrustHow `json:"how,omitempty"`
	PinnedAt time.Time      `json:"pinnedAt,omitzero"`
	Detail   string         `json:"detail,omitempty"`
	// PinnedThumbprint is, for a conflict, the thumbprint the kid is
	// pinned with.
	PinnedThumbprint string `json:"pinnedThumbprint,omitempty"`
	// InUseUntil is until when a grant signed by the key may still be
	// held: the later of the pin's and this sidecar's.
	InUseUntil time.Time `json:"inUseUntil,omitzero"`
}

// TrustBundleInfo describes the bundle file loaded.
type TrustBundleInfo struct {
	Path string `json:"path"`
	// SHA256 is the file's SHA-256, hex.
	SHA256 string `json:"sha256"`
	// Signed: the file is a signed bundle; SignedBy, IssuedAt and
	// ExpiresAt are then its header's kid and its iat and exp (as read,
	// whether or not they verified).
	Signed    bool      `json:"signed"`
	SignedBy  string    `json:"signedBy,omitempty"`
	IssuedAt  time.Time `json:"issuedAt,omitzero"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// BundleSeq is the signed-bundle watermark of the pins: a signed
	// bundle pins keys only when its iat (Unix ms) is above it.
	BundleSeq uint64 `json:"bundleSeq"`
}

// TrustList is the answer of the admin API's GET /v1/trust.
type TrustList struct {
	Bundle TrustBundleInfo `json:"bundle"`
	// Keys are by kid: every key of the bundle file and every pin.
	Keys []TrustKey `json:"keys"`
}

// TrustAccepted is the answer of POST /v1/trust/accept.
type TrustAccepted struct {
	// Pin is the key's pin after the call.
	Pin store.TrustedKey `json:"pin"`
	// Trusted: the key verifies now (false when the reload that followed
	// was refused or failed; Reload says why, and the pin stands).
	Trusted bool   `json:"trusted"`
	Reload  string `json:"reload,omitempty"`
}

// TrustList lists every key of the bundle file as loaded and every pin as
// the store holds it now, with the state the next reload gives each key
// (it changes nothing; the watch loop or ReloadTrust applies them).
func (au *Authenticator) TrustList(ctx context.Context) (TrustList, error) {
	t := au.trust
	pins, err := t.store.TrustedKeys(ctx)
	if err != nil {
		return TrustList{}, fmt.Errorf("authn: trust pins: %w", err)
	}
	t.mu.RLock()
	f, mem := t.file, make(map[string]time.Time, len(t.inUse))
	for k, v := range t.inUse {
		mem[k] = v
	}
	t.mu.RUnlock()
	ix := indexPins(pins)
	out := TrustList{Bundle: TrustBundleInfo{Path: t.path, SHA256: hex.EncodeToString(f.sum[:]), Signed: f.signed != nil,
		BundleSeq: store.BundleSeqOf(pins)}, Keys: []TrustKey{}}
	if sb := f.signed; sb != nil {
		out.Bundle.SignedBy = sb.Kid
		out.Bundle.IssuedAt = time.UnixMilli(int64(min(sb.IssuedAt, 1<<62))).UTC()
		out.Bundle.ExpiresAt = time.UnixMilli(int64(min(sb.ExpiresAt, 1<<62))).UTC()
	}
	row := func(kid, tp, alg, state string) TrustKey {
		r := TrustKey{Kid: kid, Thumbprint: tp, Alg: alg, State: state, InUseUntil: inUseUntil(kid, ix, mem)}
		if pin, ok := ix[kid]; ok {
			r.How, r.PinnedAt, r.Detail = pin.How, pin.PinnedAt, pin.Detail
			if state == KeyConflict {
				r.PinnedThumbprint = pin.Thumbprint
			}
		}
		return r
	}
	for _, k := range f.keys {
		out.Keys = append(out.Keys, row(k.kid, k.thumbprint, k.alg, ix.stateOf(k)))
	}
	for _, pin := range pins {
		if _, ok := f.find(pin.Kid); !ok {
			out.Keys = append(out.Keys, row(pin.Kid, pin.Thumbprint, pin.Alg, KeyNotInBundle))
		}
	}
	slices.SortFunc(out.Keys, func(a, b TrustKey) int { return strings.Compare(a.Kid, b.Kid) })
	return out, nil
}

// AcceptTrust pins the key kid of the trust bundle file as it is now (an
// operator's controlled step, OPERATOR): refused when the file has no
// such kid (ErrTrustKeyNotInBundle), or when thumbprint is given and is
// not the file key's RFC 7638 thumbprint (ErrTrustThumbprint); a kid
// pinned as another key is the store's ErrConflict. Then the file is
// reloaded, so the key verifies from now on; detail is kept with the pin.
func (au *Authenticator) AcceptTrust(ctx context.Context, kid, thumbprint, detail string) (TrustAccepted, error) {
	t := au.trust
	t.reloadMu.Lock()
	f, err := readBundleFile(t.path, t.allowHS)
	if err != nil {
		t.reloadMu.Unlock()
		return TrustAccepted{}, err
	}
	k, ok := f.find(kid)
	switch {
	case !ok:
		t.reloadMu.Unlock()
		return TrustAccepted{}, fmt.Errorf("%w: %q (it has %s)", ErrTrustKeyNotInBundle, kid, strings.Join(f.kids(), ", "))
	case thumbprint != "" && thumbprint != k.thumbprint:
		t.reloadMu.Unlock()
		return TrustAccepted{}, fmt.Errorf("%w: kid %q is %s, not %s", ErrTrustThumbprint, kid, k.thumbprint, thumbprint)
	}
	d := "accepted by an operator"
	if detail != "" {
		d += ": " + detail
	}
	pins, err := t.store.RecordTrust(ctx, store.TrustInput{Kind: store.TrustPin, How: store.TrustOperator, Keys: keyRefs([]fileKey{k}),
		Detail: d, Now: t.clk.Now()})
	t.reloadMu.Unlock()
	if err != nil {
		return TrustAccepted{}, fmt.Errorf("authn: trust accept: %w", err)
	}
	t.tm.event(trustEventOperator)
	t.log.Warn("trust: key accepted by an operator and pinned", zap.String("kid", kid), zap.String("thumbprint", k.thumbprint), zap.String("detail", detail))
	var out TrustAccepted
	for _, pin := range pins {
		if pin.Kid == kid {
			out.Pin = pin
		}
	}
	if _, err := t.reload(ctx, false); err != nil {
		out.Reload = err.Error()
	}
	out.Trusted = slices.Contains(t.keyIDs(), kid)
	return out, nil
}
