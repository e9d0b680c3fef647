package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/proxy/overlap"
	"github.com/fencegate/fencegate/store"
)

// ErrDowngrade: a configuration would let a mutation on an enforced route
// shape through unchecked. Resource-side verification, once on, is never
// switched off again by a configuration change; an operator may still
// force it, explicitly and logged.
var ErrDowngrade = errors.New("proxy: refusing to leave enforce mode")

// The enforcement ledger records every route shape that has been enforced.
// It lives in the fenced store (store.Store.Enforcements), so every replica
// sharing the store and a new pod on an empty disk see it, and it is keyed
// by the route's shape: the method and the path with parameter names
// erased ("PUT /v1/items/{}"), so renaming {id} to {itemId} is the same
// route. At start, a configuration that would let a mutation on an
// enforced shape through unchecked refuses to start:
//
//   - the shape's route is configured in shadow or off;
//   - the shape's route was removed and a route below enforce can match one
//     of its paths (proxy/overlap: a literal, a regexp parameter or a
//     catch-all added later), or, while unmatchedMutations is pass, one of
//     its paths can match no route.
//
// A removed route whose paths are now rejected (unmatched mutations
// rejected, or another enforced route) is fine: nothing passes unchecked.
// (A route below enforce that overlaps an enforced route of the same
// configuration is refused earlier, by Config.Validate, with
// ErrRouteShadowed, and no flag overrides that.) --force-downgrade
// 'METHOD /path' names a shape an operator lets go; it is recorded in the
// ledger's history, logged, and shown in fencegate_proxy_forced_downgrade
// for as long as the shape's paths run below enforce.

// routeShape is the ledger key of a route: method, a space, and the chi
// pattern with parameter names erased ({id} → {}, {id:[0-9]+} → {:[0-9]+}).
func routeShape(method, pattern string) string {
	var b strings.Builder
	b.WriteString(strings.ToUpper(method))
	b.WriteByte(' ')
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		end := matchingBrace(pattern, i)
		if end < 0 { // not a chi parameter: keep the rest as is
			b.WriteString(pattern[i:])
			break
		}
		param := pattern[i+1 : end]
		b.WriteByte('{')
		if _, re, ok := strings.Cut(param, ":"); ok {
			b.WriteByte(':')
			b.WriteString(re)
		}
		b.WriteByte('}')
		i = end
	}
	return b.String()
}

// matchingBrace returns the index of the '}' closing the '{' at i, counting
// nested braces of a regexp, or -1.
func matchingBrace(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// shapeOf parses "METHOD /pattern" (a route key or a shape).
func shapeOf(key string) string {
	method, path, ok := strings.Cut(strings.TrimSpace(key), " ")
	if !ok {
		return strings.TrimSpace(key)
	}
	return routeShape(method, strings.TrimSpace(path))
}

// shapePattern turns a shape back into its method and a chi pattern, the
// erased parameter names replaced by p0, p1, ... ("PUT /v1/items/{}" →
// PUT, "/v1/items/{p0}"; "{:[0-9]+}" → "{p0:[0-9]+}").
func shapePattern(shape string) (method, pattern string) {
	method, path, _ := strings.Cut(shape, " ")
	var b strings.Builder
	n := 0
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		end := matchingBrace(path, i)
		if end < 0 {
			b.WriteString(path[i:])
			break
		}
		fmt.Fprintf(&b, "{p%d%s}", n, path[i+1:end])
		n++
		i = end
	}
	return method, b.String()
}

// checkLedger records newly enforced shapes and refuses a configuration
// that would let a mutation on an enforced shape through unchecked.
func (p *Proxy) checkLedger(ctx context.Context, force []string) error {
	if err := importLegacyLedger(ctx, p.store, p.legacyLedgerDir, p.now(), p.log); err != nil {
		return err
	}
	entries, err := p.store.Enforcements(ctx)
	if err != nil {
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	ledger := map[string]store.Enforcement{}
	for _, e := range entries {
		ledger[e.Shape] = e
	}
	forced := map[string]bool{}
	for _, f := range force {
		forced[shapeOf(f)] = true
	}
	refused, configured, err := p.ledgerRoutes(ctx, ledger, forced)
	if err != nil {
		return err
	}
	more, err := p.ledgerRemoved(ctx, entries, configured, forced)
	if err != nil {
		return err
	}
	if refused = append(refused, more...); len(refused) > 0 {
		return fmt.Errorf("%w: %s; to force it, start with --force-downgrade 'METHOD /path' for each (logged, recorded, and shown in fencegate_proxy_forced_downgrade)", ErrDowngrade, strings.Join(refused, "; "))
	}
	// The ledger as this start left it.
	if entries, err = p.store.Enforcements(ctx); err != nil {
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	p.setForcedDowngrades(entries)
	var enforced []string
	for _, e := range entries {
		if e.Enforced() {
			enforced = append(enforced, e.Shape)
		}
	}
	slices.Sort(enforced)
	p.looks, err = newLookalikes(p.router.all(), enforced)
	return err
}

// ledgerRoutes checks each configured route against the ledger, in key
// order: an enforce route is recorded as enforced; a route below enforce
// on a shape the ledger has enforced is a downgrade, refused unless
// forced (then recorded as forced). It returns the refusals and the
// configured shapes.
func (p *Proxy) ledgerRoutes(ctx context.Context, ledger map[string]store.Enforcement, forced map[string]bool) (refused []string, configured map[string]bool, err error) {
	routes := p.router.all()
	slices.SortFunc(routes, func(a, b *route) int { return strings.Compare(a.key, b.key) })
	configured = map[string]bool{}
	for _, r := range routes {
		shape := routeShape(r.Method, r.Path)
		configured[shape] = true
		e, known := ledger[shape]
		switch {
		case r.Mode == ModeEnforce && !(known && e.Enforced()):
			if err := p.recordEnforcement(ctx, shape, store.EnforcementEnforce, "route "+r.key); err != nil {
				return nil, nil, err
			}
		case r.Mode != ModeEnforce && known && e.Enforced():
			if !forced[shape] {
				refused = append(refused, fmt.Sprintf("%s (shape %s, enforced since %s, now %s)", r.key, shape, e.EnforcedSince.Format(time.RFC3339), r.Mode))
				continue
			}
			if err := p.forceDowngrade(ctx, shape, r.key+" to "+string(r.Mode)); err != nil {
				return nil, nil, err
			}
		}
	}
	return refused, configured, nil
}

// ledgerRemoved checks each enforced shape no route is configured for: a
// removal that would let its mutations pass unchecked is a downgrade,
// refused unless forced (then recorded as forced).
func (p *Proxy) ledgerRemoved(ctx context.Context, entries []store.Enforcement, configured, forced map[string]bool) (refused []string, err error) {
	for _, e := range entries {
		if !e.Enforced() || configured[e.Shape] {
			continue
		}
		why := p.uncheckedAfterRemoval(e.Shape)
		if why == "" {
			continue
		}
		if !forced[e.Shape] {
			refused = append(refused, fmt.Sprintf("%s (enforced since %s, no longer configured: %s)", e.Shape, e.EnforcedSince.Format(time.RFC3339), why))
			continue
		}
		if err := p.forceDowngrade(ctx, e.Shape, "removed; "+why); err != nil {
			return nil, err
		}
	}
	return refused, nil
}

// uncheckedAfterRemoval says how a mutation on an enforced shape with no
// configured route of its own would now pass unchecked, or "" if it would
// not: a route of the same method below enforce can match one of its paths
// (proxy/overlap), or, with unmatched mutations passed, one of its paths can
// match no route at all. When the overlap check cannot rule a path out, it
// counts (fail closed).
func (p *Proxy) uncheckedAfterRemoval(shape string) string {
	method, pattern := shapePattern(shape)
	routes := p.router.all()
	slices.SortFunc(routes, func(a, b *route) int { return strings.Compare(a.key, b.key) })
	var same []string
	for _, r := range routes {
		if r.Method != method {
			continue
		}
		same = append(same, r.Path)
		if r.Mode == ModeEnforce {
			continue
		}
		if o := overlap.Search([]string{pattern, r.Path}, nil); o.Found {
			return fmt.Sprintf("its paths can match %s in %s mode (%s)", r.key, r.Mode, o)
		}
	}
	if p.cfg.UnmatchedMutations == "pass" {
		if o := overlap.Search([]string{pattern}, same); o.Found {
			return fmt.Sprintf("its paths can match no route (%s) and unmatched mutations are passed", o)
		}
	}
	return ""
}

// setForcedDowngrades sets fencegate_proxy_forced_downgrade from the
// ledger's entries as the start left them: 1 for each configured route below
// enforce whose shape the ledger holds as downgraded (only
// --force-downgrade takes a shape out of enforcement), and for each such
// shape no longer configured whose paths now pass unchecked; 0 for every
// other configured route.
func (p *Proxy) setForcedDowngrades(entries []store.Enforcement) {
	ledger := map[string]store.Enforcement{}
	for _, e := range entries {
		ledger[e.Shape] = e
	}
	configured := map[string]bool{}
	for _, r := range p.router.all() {
		shape := routeShape(r.Method, r.Path)
		configured[shape] = true
		e, known := ledger[shape]
		v := 0.0
		if known && !e.Enforced() && r.Mode != ModeEnforce {
			v = 1
		}
		p.m.forcedDowngrade.WithLabelValues(r.key).Set(v)
	}
	for _, e := range entries {
		if !e.Enforced() && !configured[e.Shape] && p.uncheckedAfterRemoval(e.Shape) != "" {
			p.m.forcedDowngrade.WithLabelValues(e.Shape).Set(1)
		}
	}
}

func (p *Proxy) recordEnforcement(ctx context.Context, shape, kind, detail string) error {
	if len(detail) > store.MaxEnforcementDetailLen { // free text: cut, at a rune
		cut := store.MaxEnforcementDetailLen - len("…")
		for cut > 0 && !utf8.RuneStart(detail[cut]) {
			cut--
		}
		detail = detail[:cut] + "…"
	}
	if _, err := p.store.RecordEnforcement(ctx, store.EnforcementInput{Shape: shape, Kind: kind, Detail: detail, Now: p.now()}); err != nil {
		return fmt.Errorf("proxy: enforcement ledger: recording %s of %s: %w", kind, shape, err)
	}
	return nil
}

func (p *Proxy) forceDowngrade(ctx context.Context, shape, detail string) error {
	p.log.Warn("FORCED downgrade of an enforced route shape: resource-side verification is weakened by operator order",
		zap.String("shape", shape), zap.String("detail", detail))
	return p.recordEnforcement(ctx, shape, store.EnforcementForcedDowngrade, detail)
}

// legacyLedger is the enforcement.json file kept in dataDir by earlier
// versions, keyed by the route's literal text.
type legacyLedger struct {
	Routes map[string]struct {
		EnforcedSince time.Time `json:"enforcedSince"`
	} `json:"routes"`
}

// importLegacyLedger moves an enforcement.json of an earlier version into
// the store (each enforced route as its shape) and renames the file, so a
// later forced downgrade is not undone by importing it again.
func importLegacyLedger(ctx context.Context, st store.Store, dataDir string, now time.Time, log *zap.Logger) error {
	if dataDir == "" {
		return nil
	}
	path := filepath.Join(dataDir, "enforcement.json")
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	var old legacyLedger
	if err := json.Unmarshal(raw, &old); err != nil {
		return fmt.Errorf("proxy: enforcement ledger %s is corrupt (refusing to guess which routes were enforced): %w", path, err)
	}
	keys := make([]string, 0, len(old.Routes))
	for k := range old.Routes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if old.Routes[k].EnforcedSince.IsZero() {
			continue
		}
		in := store.EnforcementInput{Shape: shapeOf(k), Kind: store.EnforcementEnforce, Detail: "imported from " + path + " (route " + k + ")", Now: now}
		if _, err := st.RecordEnforcement(ctx, in); err != nil {
			return fmt.Errorf("proxy: enforcement ledger: importing %s: %w", k, err)
		}
	}
	if err := os.Rename(path, path+".imported"); err != nil {
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	log.Info("enforcement ledger imported into the fenced store", zap.String("from", path), zap.Int("routes", len(keys)))
	return nil
}
