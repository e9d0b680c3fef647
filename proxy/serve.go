package proxy

import (
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/inbound"
)

// ServeHTTP is applyFencedMutation, the only acceptance point. It decides
// (decide), then answers what it decided (render, outcome.go): one outcome
// per request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasPrefix(req.URL.Path, selfPrefix) {
		p.serveSelf(w, req)
		return
	}
	o := p.decide(req)
	defer o.release()
	p.render(w, o)
}

// decide runs the request path in order: read path (proxy/inbound's
// Classify, with the upgrades entries of upgrades.go: method-override
// headers and protocol upgrades are refused; only GET, HEAD, OPTIONS and
// TRACE, spelled exactly so, pass as reads) → route (route.go; a mutation
// about to pass unchecked is checked for a lenient look-alike of a
// stricter route, lenient.go) → admit (admit.go: the fence headers,
// authn's identity, grant and status, the body; any failure here
// touches nothing in the store) → fence (fence.go: the store's Begin) →
// forward (forward.go: proxy/outbound's send, then Commit, or
// MarkUnknown, or Abort when nothing was sent).
func (p *Proxy) decide(req *http.Request) outcome {
	switch p.classifyRequest(req) {
	case inbound.VerdictOverride:
		return p.readPathRefusal(req, reject(fencegate.CodeMethodOverrideRefused,
			"method-override headers (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override) are refused: send the real method"))
	case inbound.VerdictUpgrade:
		return p.readPathRefusal(req, reject(fencegate.CodeUpgradeRefused,
			"protocol upgrades (Upgrade, h2c, HTTP2-Settings, the HTTP/2 preface) are refused unless an upgrades entry allows this GET"))
	case inbound.VerdictRead:
		o := outcome{result: resultRead, req: req}
		if len(p.upgrades) > 0 {
			if upgrade, _, _ := inbound.UpgradeSignals(req.Method, req.Header); upgrade {
				// An allowed upgrade: its tunnel is not fenced; counted.
				o.mark = markUpgrade
			}
		}
		return o
	}
	rt, resource, rerr := p.router.match(req)
	if rt == nil {
		return p.unrouted(req)
	}
	if rt.Mode != ModeEnforce {
		if o, found := p.lookalike(req, rt); found { // lenient.go
			return o
		}
	}
	if rt.Mode == ModeOff {
		return passed(req, rt.key, string(rt.Mode), markOff)
	}
	a := &attempt{rt: rt, resource: resource, req: req}
	if rerr != nil {
		return a.refused(reject(fencegate.CodeInvalidResource, rerr.Error()), 0)
	}
	if rej := p.admit(a); rej != nil {
		return a.refused(rej, 0)
	}
	return p.fence(a)
}

// unrouted decides on a mutation no route matches.
func (p *Proxy) unrouted(req *http.Request) outcome {
	variant, vres := p.caseVariant(req)
	if variant != nil && variant.Mode != ModeOff {
		// Many backends read methods case-insensitively: never let
		// "put" through where PUT is protected.
		a := &attempt{rt: variant, resource: vres, req: req}
		return a.refused(reject(fencegate.CodeRouteNotProtected,
			req.Method+" differs from the protected route "+variant.key+" only in case; methods are case-sensitive: send "+variant.Method), 0)
	}
	// CONNECT opens a tunnel: it is never passed unchecked.
	if p.cfg.UnmatchedMutations == "pass" && req.Method != http.MethodConnect {
		if o, found := p.lookalike(req, nil); found { // a spelling of a protected path (lenient.go)
			return o
		}
		return passed(req, "unmatched", "pass", markUnmatched)
	}
	return rejected(req, "unmatched", "reject", reject(fencegate.CodeRouteNotProtected,
		req.Method+" "+req.URL.Path+" matches no protected route and unmatched mutations are rejected"))
}

// readPathRefusal is an override or upgrade refusal; nothing is forwarded.
func (p *Proxy) readPathRefusal(req *http.Request, rej *rejection) outcome {
	return rejected(req, "read-path", "reject", rej, zap.String("method", req.Method), zap.String("path", req.URL.Path))
}
