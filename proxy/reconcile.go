package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// reconcileLoop keeps the unknown and paused gauges current and settles
// unknown mutations through the routes' effect-query endpoints, until ctx
// ends.
func (p *Proxy) reconcileLoop(ctx context.Context) {
	tk := p.clk.NewTicker(p.cfg.Reconcile.Interval)
	defer tk.Stop()
	for {
		p.reconcileOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
		}
	}
}

// reconcileOnce runs one pass; it returns how many mutations it resolved.
func (p *Proxy) reconcileOnce(ctx context.Context) int {
	parent := ctx // a failure once parent ended is the stop, not worth a log
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Reconcile.Interval+10*time.Second)
	defer cancel()
	if paused, err := p.store.ListPaused(ctx); err != nil {
		if parent.Err() != nil {
			return 0
		}
		p.log.Error("listing paused resources failed; the paused gauge keeps its last value", zap.Error(err))
	} else {
		p.m.paused.Set(float64(len(paused)))
	}
	list, err := p.store.ListUnknown(ctx, p.now())
	if err != nil {
		if parent.Err() != nil {
			return 0
		}
		p.log.Error("listing unknown mutations failed", zap.Error(err))
		return 0
	}
	now := p.now()
	oldest := 0.0
	resolved, notQuiet := 0, 0
	for _, m := range list {
		since := m.UnknownSince
		if since.IsZero() {
			since = m.Deadline
		}
		oldest = max(oldest, now.Sub(since).Seconds())
		q, err := p.effectQueryFor(m.Resource)
		if err != nil {
			p.log.Warn("unknown mutation not reconciled automatically: the routes that may have produced its resource name different effect queries, and the sidecar does not guess; reconcile it through the admin API (POST /v1/reconcile)",
				zap.String("resource", m.Resource), zap.String("operationId", m.OperationID), zap.Error(err))
			continue
		}
		if q == nil {
			continue
		}
		// The evidence is as old as the question: a 404 proves "not
		// applied" only if no attempt could take effect after it was asked.
		asked := p.now()
		applied, body, ok := p.queryEffect(ctx, q, m)
		if !ok {
			continue
		}
		_, err = p.settle(ctx, m, evidence{applied: applied, status: http.StatusOK, body: body, at: asked, closes: q.closes}, "effect_query")
		if nq := (*store.NotQuietError)(nil); errors.As(err, &nq) {
			notQuiet++
			p.log.Info("effect query answered 404 before the mutation is quiet: the backend may still apply it (backend.maxApplyDelay after the forward's deadline), so it stays unknown until quietAt; a 200 settles it at once",
				zap.String("resource", m.Resource), zap.String("operationId", m.OperationID), zap.Time("quietAt", nq.QuietAt), zap.Duration("remaining", nq.Remaining))
			continue
		}
		if err != nil {
			p.log.Error("resolving through the effect query failed", zap.String("resource", m.Resource), zap.String("operationId", m.OperationID), zap.Error(err))
			continue
		}
		p.log.Info("unknown mutation reconciled through the effect query", zap.String("resource", m.Resource),
			zap.String("operationId", m.OperationID), zap.Bool("applied", applied))
		resolved++
	}
	p.m.unknown.Set(float64(len(list) - resolved))
	p.m.notQuiet.Set(float64(notQuiet))
	if len(list) == resolved {
		oldest = 0
	}
	p.m.oldest.Set(oldest)
	return resolved
}

// effectQuery is how the mutations of one resource are reconciled: an
// effect-query URL template and the body limit of its answer.
type effectQuery struct {
	template string
	// limit is the largest responseStoreLimit of the routes that share the
	// template (the store is sized for it): an answer above it cannot be
	// kept whole, so it cannot settle the mutation.
	limit int
	// routes are the keys of those routes, for logs.
	routes []string
	// closes: every one of those routes declares effectQueryCloses, so a
	// 404 closes the operation (settles "not applied" at once).
	closes bool
}

// errEffectQueryAmbiguous: the routes that may have produced a resource
// name different effect queries.
var errEffectQueryAmbiguous = errors.New("proxy: routes with different effect queries produce this resource")

// effectQueryFor finds the effect query that settles the mutations of
// resource. A stored mutation does not say which route it came through, so
// every route whose resource template matches resource and that has an
// effect query is considered, in route-key order (never map order). When
// they agree, their template is used (its 404 closes the operation only if
// every one of them declares effectQueryCloses); when none has one, the
// result is nil. When they disagree, asking either endpoint is a guess that could
// settle the mutation on the wrong evidence: the result is an error
// (errEffectQueryAmbiguous) naming the routes, and the caller skips the
// mutation.
func (p *Proxy) effectQueryFor(resource string) (*effectQuery, error) {
	routes := p.router.all()
	slices.SortFunc(routes, func(a, b *route) int { return strings.Compare(a.key, b.key) })
	var q *effectQuery
	var templates []string
	for _, rt := range routes {
		if rt.EffectQuery == "" || !rt.resourceRE.MatchString(resource) {
			continue
		}
		if q == nil {
			q = &effectQuery{template: rt.EffectQuery, limit: rt.ResponseStoreLimit, closes: true}
		}
		q.limit = max(q.limit, rt.ResponseStoreLimit)
		q.closes = q.closes && rt.EffectQueryCloses
		q.routes = append(q.routes, rt.key)
		if !slices.Contains(templates, rt.EffectQuery) {
			templates = append(templates, rt.EffectQuery)
		}
	}
	if len(templates) > 1 {
		return nil, fmt.Errorf("%w: routes %q name effect queries %q", errEffectQueryAmbiguous, q.routes, templates)
	}
	return q, nil
}

// effectQueryURL fills the template for m: placeholders in the path are
// escaped as one path segment (url.PathEscape: a space is %20, a slash
// %2F, a plus stays a plus), those in the query as query values
// (url.QueryEscape: a space is +, a plus %2B).
func effectQueryURL(template string, m store.Mutation) string {
	fill := func(s string, esc func(string) string) string {
		return strings.NewReplacer(
			"{operationId}", esc(m.OperationID),
			"{resource}", esc(m.Resource),
			"{fence}", strconv.FormatUint(m.Fence, 10),
			"{seq}", strconv.FormatUint(m.Seq, 10),
		).Replace(s)
	}
	path, query, hasQuery := strings.Cut(template, "?")
	u := fill(path, url.PathEscape)
	if hasQuery {
		u += "?" + fill(query, url.QueryEscape)
	}
	return u
}

// queryEffect asks the effect-query endpoint whether the mutation took
// effect: 200 applied (its body, complete and within q.limit, is kept as
// the response), 404 not applied as of the question (final only once the
// mutation is quiet, or when q closes the operation: the store decides).
// Anything else, including a body that is
// cut off or larger than the limit, cannot tell: ok is false and the
// mutation stays unknown (a partial body is never stored as the answer).
func (p *Proxy) queryEffect(ctx context.Context, q *effectQuery, m store.Mutation) (applied bool, body []byte, ok bool) {
	u := effectQueryURL(q.template, m)
	log := p.log.With(zap.String("url", u), zap.String("resource", m.Resource), zap.String("operationId", m.OperationID))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		log.Warn("effect query URL is unusable; the mutation stays unknown", zap.Error(err))
		return false, nil, false
	}
	req.Header.Set(fencegate.HeaderOperationID, m.OperationID)
	req.Header.Set(fencegate.HeaderResource, m.Resource)
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		log.Warn("effect query failed", zap.Error(err))
		return false, nil, false
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		body, err := readEffectBody(resp, q.limit)
		if err != nil {
			log.Warn("effect query answered 200 with an unusable body: cannot tell; the mutation stays unknown", zap.Error(err))
			return false, nil, false
		}
		return true, body, true
	case http.StatusNotFound:
		// The body is not kept, but an answer that breaks off is no answer.
		if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, int64(q.limit))); err != nil {
			log.Warn("effect query answered 404 but its body broke off: cannot tell; the mutation stays unknown", zap.Error(err))
			return false, nil, false
		}
		return false, nil, true
	}
	log.Info("effect query cannot tell; the mutation stays unknown", zap.Int("status", resp.StatusCode))
	return false, nil, false
}

// readEffectBody reads a whole effect-query body of at most limit bytes.
// A body that fails mid-way (a connection cut before Content-Length or the
// last chunk) or exceeds the limit is an error, never a shorter body.
func readEffectBody(resp *http.Response, limit int) ([]byte, error) {
	if resp.ContentLength > int64(limit) {
		return nil, fmt.Errorf("proxy: effect query body of %d bytes exceeds the limit of %d (responseStoreLimit)", resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("proxy: effect query body cut after %d bytes: %w", len(body), err)
	}
	if len(body) > limit {
		return nil, fmt.Errorf("proxy: effect query body exceeds the limit of %d bytes (responseStoreLimit)", limit)
	}
	return body, nil
}
