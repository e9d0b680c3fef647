package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/verify"
)

// ErrKeyInUse: a trust-bundle reload would drop a key behind grants still
// held; it is refused unless forced.
var ErrKeyInUse = errors.New("proxy: trust bundle reload drops a key still in use")

// trust holds the current trust bundle and reloads it from its file. A
// reload that drops the key of a grant seen within that grant's TTL is
// refused (old and new keys must overlap during a rotation) unless forced.
//
// Each bundle in turn has a generation, and verifications go through a
// cache keyed by token and generation (verifycache.go): a reload makes
// every cached verification miss, so a dropped key refuses its tokens on
// the next request.
type trust struct {
	path    string
	allowHS bool
	clk     clock.Clock
	log     *zap.Logger
	m       *metrics

	mu     sync.RWMutex
	bundle *verify.Bundle
	gen    uint64 // generation of bundle: +1 at each reload that changes it
	sum    [32]byte
	inUse  map[string]time.Time // kid -> a grant signed with it may be held until
	cache  *verifyCache
}

// trustView is one bundle and its generation, taken once per request, so
// the grant and its proof are verified with the same bundle.
type trustView struct {
	bundle *verify.Bundle
	gen    uint64
	cache  *verifyCache
}

func newTrust(path string, allowHS bool, clk clock.Clock, log *zap.Logger, m *metrics) (*trust, error) {
	t := &trust{path: path, allowHS: allowHS, clk: clk, log: log, m: m, inUse: map[string]time.Time{},
		cache: newVerifyCache(DefaultVerifyCacheEntries)}
	b, sum, err := t.load()
	if err != nil {
		return nil, err
	}
	t.bundle, t.sum = b, sum
	return t, nil
}

func (t *trust) load() (*verify.Bundle, [32]byte, error) {
	raw, err := os.ReadFile(t.path)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("proxy: trust bundle: %w", err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("proxy: trust bundle %s: %w", t.path, err)
	}
	b, err := verify.NewBundle(set, verify.AllowList(t.allowHS)...)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("proxy: trust bundle %s: %w", t.path, err)
	}
	return b, sha256.Sum256(raw), nil
}

// current is the bundle to verify with.
func (t *trust) current() *verify.Bundle {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.bundle
}

// view is the bundle to verify a request with, its generation and the cache.
func (t *trust) view() trustView {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return trustView{bundle: t.bundle, gen: t.gen, cache: t.cache}
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
func (v trustView) grant(token []byte, opts []verify.Option) (*verify.Grant, string, string, error) {
	return v.cache.grant(token, v.bundle, v.gen, opts)
}

// status verifies a proof with the view's bundle (through the cache).
func (v trustView) status(token []byte, opts []verify.Option) (*verify.Status, error) {
	return v.cache.status(token, v.bundle, v.gen, opts)
}

// noteUse records that a grant signed by the key kid was accepted and may
// be held for ttl more. The time kept is rounded up to the next whole
// second, so the write lock is taken about once a second per kid, not on
// every request; a key is protected a little longer, never shorter.
func (t *trust) noteUse(kid string, ttl time.Duration) {
	if kid == "" {
		return
	}
	until := t.clk.Now().Add(ttl + time.Second).Truncate(time.Second)
	t.mu.RLock()
	cur := t.inUse[kid]
	t.mu.RUnlock()
	if !until.After(cur) {
		return
	}
	t.mu.Lock()
	if until.After(t.inUse[kid]) {
		t.inUse[kid] = until
	}
	t.mu.Unlock()
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

// reload re-reads the file. It reports whether the bundle changed.
func (t *trust) reload(force bool) (bool, error) {
	b, sum, err := t.load()
	if err != nil {
		t.m.trustReloads.WithLabelValues("error").Inc()
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sum == t.sum {
		return false, nil
	}
	newKids := b.KeyIDs()
	now := t.clk.Now()
	var dropped []string
	for kid, until := range t.inUse {
		if !now.Before(until) {
			delete(t.inUse, kid)
			continue
		}
		if !slices.Contains(newKids, kid) {
			dropped = append(dropped, kid)
		}
	}
	sort.Strings(dropped)
	if len(dropped) > 0 && !force {
		t.m.trustReloads.WithLabelValues("refused").Inc()
		t.log.Error("trust bundle reload refused: it drops keys behind grants still held; keep old and new keys during the overlap, or force the reload",
			zap.Strings("kids", dropped))
		return false, fmt.Errorf("%w: %s", ErrKeyInUse, strings.Join(dropped, ", "))
	}
	if len(dropped) > 0 {
		t.log.Warn("trust bundle reload FORCED: keys behind grants still held are dropped", zap.Strings("kids", dropped))
	}
	t.bundle, t.sum = b, sum
	t.gen++
	t.cache.reset()
	t.m.trustReloads.WithLabelValues("ok").Inc()
	t.log.Info("trust bundle reloaded", zap.Strings("kids", newKids))
	return true, nil
}

// watch polls the file every interval until ctx ends.
func (t *trust) watch(ctx context.Context, interval time.Duration) {
	tk := t.clk.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
			if _, err := t.reload(false); err != nil && !errors.Is(err, ErrKeyInUse) {
				t.log.Error("trust bundle reload failed; keeping the current bundle", zap.Error(err))
			}
		}
	}
}
