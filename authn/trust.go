package authn

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/verify"
)

// ErrKeyInUse: a trust-bundle reload would drop a key behind grants still
// held; it is refused unless forced.
var ErrKeyInUse = errors.New("authn: trust bundle reload drops a key still in use")

// FirstUseCheck answers whether a fenced store with no trust pins may pin
// the trust bundle file as it is (Options.FirstUseAllowed).
type FirstUseCheck func(ctx context.Context) (bool, error)

// trust holds the keys the sidecar verifies with: the keys of the trust
// bundle file that are pinned in the fenced store (same kid, RFC 7638
// thumbprint and alg; store.TrustedKeys). The file supplies key material,
// the pins decide which of it is trusted, so a key added to the file is
// not trusted until a controlled step pins it: an operator's
// "fencegate trust accept" (AcceptTrust), or a signed bundle (the file is
// a fencegate.BundleSchema JWS signed by a pinned key, newer than every
// signed bundle the store took). A store with no pins pins the file as it
// is (trust on first use) when FirstUseAllowed says so.
//
// Reloads (the watch loop, the admin API) run one at a time. A reload that
// drops a key of the current set while a grant it signed may still be
// held is refused unless forced; "in use until" is kept both here and in
// the pin (written by a coarse step, inUseStep), so a restarted sidecar
// remembers it. A pinned key that was in the previous file and is not in
// the new one is unpinned, unless it is in use.
//
// Each verification set in turn has a generation, and verifications go
// through a cache keyed by token and generation (verifycache.go): a change
// of the set makes every cached verification miss.
type trust struct {
	trustDeps
	tm *trustMetrics

	// reloadMu makes reloads and accepts one at a time; firstUseRefused
	// and logged are theirs.
	reloadMu        sync.Mutex
	firstUseRefused bool
	logged          string // the unpinned keys last logged

	mu     sync.RWMutex
	file   *bundleFile    // the file the set was drawn from
	bundle *verify.Bundle // the verification set; nil when empty
	// unpinnedStore: the set is empty because the store holds no pins
	// and first use was refused (a store that may have lost its data).
	unpinnedStore bool
	trusted       map[string]string // kid -> thumbprint of bundle's keys
	pins          []store.TrustedKey
	gen           uint64               // +1 at each change of the set
	inUse         map[string]time.Time // kid -> a grant signed with it may be held until (seen here)
	stored        map[string]time.Time // kid -> InUseUntil as the pin stores it
	writing       map[string]bool      // kid -> an IN_USE write is under way
	retryAt       map[string]time.Time // kid -> no IN_USE write before (after a failure)
	cache         *verifyCache
}

// trustDeps are what a trust needs.
type trustDeps struct {
	path     string
	allowHS  bool
	skew     time.Duration // for a signed bundle's iat
	store    store.Store
	firstUse FirstUseCheck // nil: first use allowed
	clk      clock.Clock
	log      *zap.Logger
	reloads  *prometheus.CounterVec // fencegate_proxy_trust_reloads_total
	reg      prometheus.Registerer
}

// trustView is one bundle and its generation, taken once per request, so
// the grant and its proof are verified with the same bundle.
type trustView struct {
	bundle *verify.Bundle
	gen    uint64
	cache  *verifyCache
	// unpinnedStore: nothing is trusted because the store holds no pins
	// and first use was refused (trust.unpinnedStore).
	unpinnedStore bool
}

// newTrust loads the bundle file and the pins (pinning on first use when
// the store has none and first use is allowed).
func newTrust(ctx context.Context, d trustDeps) (*trust, error) {
	tm, err := newTrustMetrics(d.reg)
	if err != nil {
		return nil, err
	}
	t := &trust{trustDeps: d, tm: tm, inUse: map[string]time.Time{}, stored: map[string]time.Time{},
		writing: map[string]bool{}, retryAt: map[string]time.Time{}, cache: newVerifyCache(DefaultVerifyCacheEntries)}
	f, err := readBundleFile(d.path, d.allowHS)
	if err != nil {
		return nil, err
	}
	t.reloadMu.Lock()
	defer t.reloadMu.Unlock()
	if _, err := t.apply(ctx, f, false, true); err != nil {
		return nil, err
	}
	return t, nil
}

// keyIDs are the kids of the verification set, sorted.
func (t *trust) keyIDs() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.trusted))
}

// view is the bundle to verify a request with, its generation and the cache.
func (t *trust) view() trustView {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return trustView{bundle: t.bundle, gen: t.gen, cache: t.cache, unpinnedStore: t.unpinnedStore}
}

// setCacheEntries replaces the verification cache by one of at most n
// entries; n <= 0 disables it. Call it before serving.
func (t *trust) setCacheEntries(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cache = newVerifyCache(n)
}

func (t *trust) cacheStats() VerifyCacheStats {
	t.mu.RLock()
	c := t.cache
	t.mu.RUnlock()
	return c.stats()
}

// grant verifies a grant with the view's bundle (through the cache).
func (v trustView) grant(token []byte, opts []verify.Option) (*fencegate.Grant, string, string, error) {
	return v.cache.grant(token, v.bundle, v.gen, opts)
}

// status verifies a proof with the view's bundle (through the cache).
func (v trustView) status(token []byte, opts []verify.Option) (*fencegate.Status, error) {
	return v.cache.status(token, v.bundle, v.gen, opts)
}

// noteUse records that a grant signed by the key kid was accepted and may
// be held for ttl more. The time kept here is rounded up to the next whole
// second, so the write lock is taken about once a second per kid, not on
// every request; a key is protected a little longer, never shorter. When
// that time passes the one the pin stores, the pin's is written (IN_USE)
// with inUseStep(ttl) added, by one request at a time (others go on); a
// failed write is logged, counted and retried a second later, and does
// not refuse the request (the grant was verified: the pin's time only
// protects the key from a removal after a restart).
func (t *trust) noteUse(ctx context.Context, kid string, ttl time.Duration) {
	if kid == "" {
		return
	}
	now := t.clk.Now()
	until := now.Add(ttl + time.Second).Truncate(time.Second)
	t.mu.RLock()
	cur, st := t.inUse[kid], t.stored[kid]
	t.mu.RUnlock()
	if !until.After(cur) && !until.After(st) {
		return
	}
	t.mu.Lock()
	if until.After(t.inUse[kid]) {
		t.inUse[kid] = until
	}
	write := until.After(t.stored[kid]) && !t.writing[kid] && !now.Before(t.retryAt[kid])
	if write {
		t.writing[kid] = true
	}
	t.mu.Unlock()
	if !write {
		return
	}
	target := until.Add(inUseStep(ttl))
	if limit := now.Add(store.MaxInUseAhead - time.Minute); target.After(limit) {
		target = limit
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	pins, err := t.store.RecordTrust(ctx, store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: kid}}, Until: target, Now: now})
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writing[kid] = false
	if err != nil {
		t.retryAt[kid] = now.Add(time.Second)
		t.tm.event(trustEventInUseFailed)
		t.log.Warn("recording that a trusted key is in use failed; a restart may forget it until the next write", zap.String("kid", kid), zap.Error(err))
		return
	}
	t.tm.event(trustEventInUse)
	for _, p := range pins {
		if p.Kid == kid && p.InUseUntil.After(t.stored[kid]) {
			t.stored[kid] = p.InUseUntil
		}
	}
}

// kidOf reads the kid of a compact JWS's protected header (after the token
// was verified; the cache keeps it, so this runs once per grant).
func kidOf(token []byte) string {
	head, _, ok := bytes.Cut(token, []byte("."))
	if !ok {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(head))
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	return h.Kid
}

// reload re-reads the file and the pins now and applies the file (first
// use, a signed bundle's keys, removals). It reports whether the file or
// the verification set changed.
func (t *trust) reload(ctx context.Context, force bool) (bool, error) {
	t.reloadMu.Lock()
	defer t.reloadMu.Unlock()
	f, err := readBundleFile(t.path, t.allowHS)
	if err != nil {
		t.reloads.WithLabelValues("error").Inc()
		return false, err
	}
	return t.applyCounted(ctx, f, force, true)
}

// poll is one tick of the watch loop: the pins are read again (another
// replica, or an operator at another sidecar, may have changed them); the
// file is applied when it is not the one loaded (a reload refused or
// failed is tried again at every tick).
func (t *trust) poll(ctx context.Context) {
	t.reloadMu.Lock()
	defer t.reloadMu.Unlock()
	f, err := readBundleFile(t.path, t.allowHS)
	if err != nil {
		t.reloads.WithLabelValues("error").Inc()
		t.log.Error("trust bundle reload failed; keeping the current bundle", zap.Error(err))
		return
	}
	t.mu.RLock()
	act := t.file == nil || t.file.sum != f.sum
	t.mu.RUnlock()
	if _, err := t.applyCounted(ctx, f, false, act); err != nil && !errors.Is(err, ErrKeyInUse) {
		t.log.Error("trust bundle reload failed; keeping the current bundle", zap.Error(err))
	}
}

// applyCounted is apply with the reload counted (ok when something
// changed, refused, error).
func (t *trust) applyCounted(ctx context.Context, f *bundleFile, force, act bool) (bool, error) {
	changed, err := t.apply(ctx, f, force, act)
	switch {
	case errors.Is(err, ErrKeyInUse):
		t.reloads.WithLabelValues("refused").Inc()
	case err != nil:
		t.reloads.WithLabelValues("error").Inc()
	case changed:
		t.reloads.WithLabelValues("ok").Inc()
		t.log.Info("trust bundle reloaded", zap.Strings("bundleKids", f.kids()), zap.Strings("trustedKids", t.keyIDs()))
	}
	return changed, err
}

// apply makes f the file the verification set is drawn from, with the
// pins read now. In order: a file that drops a key of the current set in
// use is refused (unless force: nothing changes); a store with no pins
// pins f on first use (if allowed); with act (a new file, the start, an
// explicit reload), a signed bundle's new keys are pinned and pins that
// left the file are unpinned; then the set is rebuilt. A store error
// changes nothing here (the next tick tries again), except on a store
// known lost (FirstUseAllowed false): its pins went with its data, and
// the set is emptied. The caller holds reloadMu.
func (t *trust) apply(ctx context.Context, f *bundleFile, force, act bool) (bool, error) {
	now := t.clk.Now()
	t.mu.RLock()
	prev, current, mem := t.file, t.trusted, maps.Clone(t.inUse)
	t.mu.RUnlock()
	fileChanged := prev == nil || prev.sum != f.sum
	pins, err := t.store.TrustedKeys(ctx)
	if err != nil {
		if t.lostStore(ctx) {
			// The store lost its data, and its pins with it: nothing
			// it pinned is known any more, so nothing is trusted
			// (STORE_UNAVAILABLE) until the loss is acknowledged and
			// a reload pins the file on first use.
			t.refuseFirstUse(f, nil)
			return t.install(f, nil, fileChanged, act)
		}
		return false, fmt.Errorf("authn: trust pins: %w", err)
	}
	if fileChanged {
		if dropped := droppedInUse(current, f.keys, indexPins(pins), mem, now); len(dropped) > 0 {
			if !force {
				t.log.Error("trust bundle reload refused: it drops keys behind grants still held; keep old and new keys during the overlap, or force the reload",
					zap.Strings("kids", dropped))
				return false, fmt.Errorf("%w: %s", ErrKeyInUse, strings.Join(dropped, ", "))
			}
			t.log.Warn("trust bundle reload FORCED: keys behind grants still held are dropped", zap.Strings("kids", dropped))
		}
	}
	if len(pins) == 0 {
		if pins, err = t.pinFirstUse(ctx, f, now); err != nil {
			return false, err
		}
	}
	if act && f.signed != nil && len(pins) > 0 {
		if pins, err = t.takeSigned(ctx, f, prev, pins, now); err != nil {
			return false, err
		}
	}
	if act {
		if pins, err = t.unpinRemoved(ctx, f, prev, pins, mem, now, force); err != nil {
			return false, err
		}
	}
	return t.install(f, pins, fileChanged, act)
}

// pinFirstUse pins f as it is on a store with no pins, when first use is
// allowed; otherwise nothing is trusted (logged once, counted) until an
// operator accepts keys, and it is asked again at the next reload.
func (t *trust) pinFirstUse(ctx context.Context, f *bundleFile, now time.Time) ([]store.TrustedKey, error) {
	allowed, err := true, error(nil)
	if t.firstUse != nil {
		allowed, err = t.firstUse(ctx)
	}
	if err != nil || !allowed {
		t.refuseFirstUse(f, err)
		return nil, nil
	}
	in := store.TrustInput{Kind: store.TrustPin, How: store.TrustFirstUse, Keys: keyRefs(f.keys), Now: now,
		Detail: "bundle sha256:" + hex.EncodeToString(f.sum[:8])}
	if f.signed != nil {
		in.BundleSeq = f.signed.IssuedAt
	}
	pins, err := t.store.RecordTrust(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("authn: trust: first use: %w", err)
	}
	t.firstUseRefused = false
	t.tm.event(trustEventFirstUse)
	t.log.Warn("trust on first use: the fenced store had no trust pins; the bundle file as it is now is pinned (a key added to it later needs fencegate trust accept or a signed bundle)",
		zap.Strings("bundleKids", f.kids()), zap.Int("pins", len(pins)))
	return pins, nil
}

// lostStore reports whether the store is known to have lost its data
// (first use is refused without an error: the anchor says lost).
func (t *trust) lostStore(ctx context.Context) bool {
	if t.firstUse == nil {
		return false
	}
	allowed, err := t.firstUse(ctx)
	return err == nil && !allowed
}

// refuseFirstUse records (logged once, counted) that nothing is trusted
// because the store has no pins it can vouch for; err is the first-use
// check's failure, if that is why.
func (t *trust) refuseFirstUse(f *bundleFile, err error) {
	if t.firstUseRefused {
		return
	}
	t.firstUseRefused = true
	t.tm.event(trustEventFirstUseRefused)
	why := "the store is not known to be its own data set (it may have lost its data, and its pins with it)"
	if err != nil {
		why = "the first-use check failed: " + err.Error()
	}
	t.log.Error("trust: the fenced store has no trust pins and first use is not allowed: no key is trusted, every protected write is refused (STORE_UNAVAILABLE) until the loss is acknowledged at the registry (the next reload then pins the file) or an operator accepts keys (fencegate trust accept --kid K --thumbprint T)",
		zap.String("why", why), zap.Strings("bundleKids", f.kids()))
}

// takeSigned pins the keys of a signed bundle f that are not pinned yet,
// when it verifies with a pinned key (key material from f or from the
// file loaded before, matched by the pin's thumbprint), has not expired,
// is not from the future, and is newer than every signed bundle the store
// took (the store decides that last part atomically). A bundle refused is
// logged and counted; its pinned keys are still trusted.
func (t *trust) takeSigned(ctx context.Context, f, prev *bundleFile, pins []store.TrustedKey, now time.Time) ([]store.TrustedKey, error) {
	ix := indexPins(pins)
	fresh := unpinnedKeys(f, ix)
	if len(fresh) == 0 {
		return pins, nil
	}
	var signers []fileKey
	for _, src := range []*bundleFile{f, prev} {
		if src == nil {
			continue
		}
		for _, k := range src.keys {
			if ix.pinned(k) && !slices.ContainsFunc(signers, func(s fileKey) bool { return s.kid == k.kid }) {
				signers = append(signers, k)
			}
		}
	}
	b, err := keySet(signers, t.allowHS)
	var sb *verify.SignedBundle
	if err == nil {
		sb, err = verify.ParseAndVerifySignedBundle(f.token, b)
	}
	if err == nil {
		err = verify.CheckBundleTime(sb, now, t.skew)
	}
	refuse := func(err error) ([]store.TrustedKey, error) {
		t.tm.event(trustEventSignedRefused)
		t.log.Error("signed trust bundle NOT taken: its new keys stay unpinned (grants they sign are refused) until a valid signed bundle or fencegate trust accept pins them",
			zap.String("newKids", kidList(fresh)), zap.String("signedBy", f.signed.Kid), zap.Error(err))
		return pins, nil
	}
	if err != nil {
		return refuse(err)
	}
	in := store.TrustInput{Kind: store.TrustPin, How: store.TrustSignedBundle, Keys: keyRefs(fresh), BundleSeq: sb.IssuedAt, Now: now,
		Detail: fmt.Sprintf("signed bundle of %s by %s", time.UnixMilli(int64(min(sb.IssuedAt, 1<<62))).UTC().Format(time.RFC3339Nano), sb.Kid)}
	next, err := t.store.RecordTrust(ctx, in)
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvalidInput):
		return refuse(fmt.Errorf("replayed or conflicting: %w", err))
	case err != nil:
		return nil, fmt.Errorf("authn: trust: signed bundle: %w", err)
	}
	t.tm.event(trustEventSignedBundle)
	t.log.Warn("signed trust bundle taken: new keys pinned", zap.String("kids", kidList(fresh)), zap.String("signedBy", sb.Kid), zap.Uint64("iat", sb.IssuedAt))
	return next, nil
}

// unpinRemoved unpins the pins whose key was in the previous file and is
// not in f (at the start: every pin not in f), unless in use (force:
// also those); never the last pins.
func (t *trust) unpinRemoved(ctx context.Context, f, prev *bundleFile, pins []store.TrustedKey, mem map[string]time.Time, now time.Time, force bool) ([]store.TrustedKey, error) {
	unpin, inUse, keptLast := toUnpin(f, prev, pins, mem, now, force)
	if len(inUse) > 0 {
		t.log.Warn("trust: pinned keys left the bundle file but may sign grants still held: kept pinned until then (they verify nothing without the file's key)",
			zap.Strings("kids", inUse))
	}
	if keptLast {
		t.log.Warn("trust: no key of the bundle file is pinned; the pins are kept (a store without pins would trust the next bundle on first use)")
	}
	if len(unpin) == 0 {
		return pins, nil
	}
	ix := indexPins(pins)
	refs := make([]store.KeyRef, len(unpin))
	for i, kid := range unpin {
		refs[i] = store.KeyRef{Kid: kid, Thumbprint: ix[kid].Thumbprint}
	}
	next, err := t.store.RecordTrust(ctx, store.TrustInput{Kind: store.TrustUnpin, Keys: refs, Force: force, Now: now})
	switch {
	case errors.Is(err, store.ErrKeyInUse), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
		// Another replica changed the pins in between: the next reload
		// of a changed file, or a restart, tries again.
		t.log.Warn("trust: unpinning keys that left the bundle file was refused; kept", zap.Strings("kids", unpin), zap.Error(err))
		if next, err = t.store.TrustedKeys(ctx); err != nil {
			return nil, fmt.Errorf("authn: trust pins: %w", err)
		}
		return next, nil
	case err != nil:
		return nil, fmt.Errorf("authn: trust: unpin: %w", err)
	}
	t.tm.event(trustEventUnpin)
	t.log.Info("trust: unpinned keys that left the bundle file", zap.Strings("kids", unpin), zap.Bool("forced", force))
	return next, nil
}

// install makes the file's pinned keys the verification set. It reports
// whether the file or the set changed.
func (t *trust) install(f *bundleFile, pins []store.TrustedKey, fileChanged, act bool) (bool, error) {
	ix := indexPins(pins)
	keys := trustedKeys(f, ix)
	tps := thumbprintsOf(keys)
	// The caller holds reloadMu: the set changes nowhere else meanwhile.
	t.mu.RLock()
	changed := fileChanged || !maps.Equal(tps, t.trusted)
	t.mu.RUnlock()
	var b *verify.Bundle
	if changed {
		// A set unchanged keeps its bundle: only a change builds one
		// (the same file and pins at every poll tick build none).
		var err error
		if b, err = f.keySet(keys, t.allowHS); err != nil {
			return false, err
		}
	}
	now := t.clk.Now()
	t.mu.Lock()
	if changed {
		t.bundle, t.trusted = b, tps
		t.gen++
		t.cache.reset()
	}
	t.file, t.pins = f, pins
	t.unpinnedStore = len(pins) == 0 && t.firstUseRefused
	clear(t.stored)
	for _, p := range pins {
		t.stored[p.Kid] = p.InUseUntil
	}
	for kid, u := range t.inUse {
		if !now.Before(u) {
			delete(t.inUse, kid)
		}
	}
	t.mu.Unlock()

	t.tm.keys.WithLabelValues("pinned").Set(float64(len(keys)))
	t.tm.keys.WithLabelValues("unpinned").Set(float64(len(f.keys) - len(keys)))
	var waiting []string
	for _, k := range f.keys {
		if s := ix.stateOf(k); s != KeyTrusted {
			waiting = append(waiting, k.kid+" ("+s+", thumbprint "+k.thumbprint+")")
		}
	}
	if msg := strings.Join(waiting, "; "); msg != t.logged || act && msg != "" {
		t.logged = msg
		if msg != "" {
			t.log.Warn("trust bundle keys NOT trusted: grants they sign are refused (GRANT_INVALID) until fencegate trust accept --kid K --thumbprint T, or a bundle signed by a pinned key, pins them",
				zap.String("keys", msg))
		}
	}
	return changed, nil
}

// watch polls the file and the pins every interval until ctx ends.
func (t *trust) watch(ctx context.Context, interval time.Duration) {
	tk := t.clk.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			t.poll(pctx)
			cancel()
		}
	}
}
