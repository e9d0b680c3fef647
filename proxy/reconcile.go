package proxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/store"
)

// reconcileLoop keeps the unknown and paused gauges current and settles
// unknown mutations through the routes' effect-query endpoints.
func (p *Proxy) reconcileLoop() {
	tk := time.NewTicker(p.cfg.Reconcile.Interval)
	defer tk.Stop()
	for {
		p.reconcileOnce(context.Background())
		select {
		case <-p.stop:
			return
		case <-tk.C:
		}
	}
}

// reconcileOnce runs one pass; it returns how many mutations it resolved.
func (p *Proxy) reconcileOnce(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Reconcile.Interval+10*time.Second)
	defer cancel()
	if paused, err := p.store.ListPaused(ctx); err == nil {
		p.m.paused.Set(float64(len(paused)))
	}
	list, err := p.store.ListUnknown(ctx, p.now())
	if err != nil {
		p.log.Error("listing unknown mutations failed", zap.Error(err))
		return 0
	}
	now := p.now()
	oldest := 0.0
	resolved := 0
	for _, m := range list {
		since := m.UnknownSince
		if since.IsZero() {
			since = m.Deadline
		}
		oldest = max(oldest, now.Sub(since).Seconds())
		rt := p.routeForResource(m.Resource)
		if rt == nil || rt.EffectQuery == "" {
			continue
		}
		applied, status, body, ok := p.queryEffect(ctx, rt, m)
		if !ok {
			continue
		}
		if _, err := p.resolve(ctx, m.Resource, m.OperationID, applied, status, body, "effect_query"); err != nil {
			p.log.Error("resolving through the effect query failed", zap.String("resource", m.Resource), zap.String("operationId", m.OperationID), zap.Error(err))
			continue
		}
		p.log.Info("unknown mutation reconciled through the effect query", zap.String("resource", m.Resource),
			zap.String("operationId", m.OperationID), zap.Bool("applied", applied))
		resolved++
	}
	p.m.unknown.Set(float64(len(list) - resolved))
	if len(list) == resolved {
		oldest = 0
	}
	p.m.oldest.Set(oldest)
	return resolved
}

// routeForResource finds the route whose resource template produced resource.
func (p *Proxy) routeForResource(resource string) *route {
	for _, rt := range p.router.all() {
		if rt.resourceRE.MatchString(resource) {
			return rt
		}
	}
	return nil
}

// queryEffect asks the route's effect-query endpoint whether the mutation
// took effect: 200 applied (its body is kept as the response), 404 not
// applied, anything else leaves it unknown.
func (p *Proxy) queryEffect(ctx context.Context, rt *route, m store.Mutation) (applied bool, status int, body []byte, ok bool) {
	u := strings.NewReplacer(
		"{operationId}", url.QueryEscape(m.OperationID),
		"{resource}", url.QueryEscape(m.Resource),
		"{fence}", strconv.FormatUint(m.Fence, 10),
		"{seq}", strconv.FormatUint(m.Seq, 10),
	).Replace(rt.EffectQuery)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, 0, nil, false
	}
	req.Header.Set(HeaderOperationID, m.OperationID)
	req.Header.Set(HeaderResource, m.Resource)
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		p.log.Warn("effect query failed", zap.String("url", u), zap.Error(err))
		return false, 0, nil, false
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(io.LimitReader(resp.Body, int64(rt.ResponseStoreLimit)))
	switch resp.StatusCode {
	case http.StatusOK:
		return true, http.StatusOK, body, true
	case http.StatusNotFound:
		return false, 0, nil, true
	}
	return false, 0, nil, false
}
