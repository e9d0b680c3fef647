package proxy

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate/proxy/inbound"
)

// The upgrades entries: the GETs that may open a protocol upgrade's tunnel
// (what is refused before any route is looked at is inbound's read path;
// which upgrades the configuration allows is decided here).

// upgradeRule is a compiled upgrades entry.
type upgradeRule struct {
	mux       *chi.Mux
	protocols []string
}

// compileUpgrades builds the upgrades entries' matchers.
func compileUpgrades(cfgs []UpgradeConfig) (upgradeRules, error) {
	out := make([]upgradeRule, 0, len(cfgs))
	for _, c := range cfgs {
		r := upgradeRule{mux: chi.NewRouter(), protocols: c.Protocols}
		if err := addPattern(r.mux, http.MethodGet, c.Path, "upgrades "+c.Path); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// matches reports whether a GET of path asking for protocols is allowed by
// the rule: the path matches and every protocol's name (before any
// "/version") is one the rule lists, never h2c.
func (r upgradeRule) matches(path string, protocols []string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if len(protocols) == 0 || r.mux.Find(chi.NewRouteContext(), http.MethodGet, path) == "" {
		return false
	}
	for _, p := range protocols {
		name, _, _ := strings.Cut(p, "/")
		if inbound.ASCIIEqualFold(name, "h2c") || !containsFold(r.protocols, name) {
			return false
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if inbound.ASCIIEqualFold(e, s) {
			return true
		}
	}
	return false
}

// upgradeRules are the compiled upgrades entries.
type upgradeRules []upgradeRule

// allow reports whether an entry allows a GET of path asking for
// protocols (inbound.Classify's question).
func (rs upgradeRules) allow(path string, protocols []string) bool {
	for _, r := range rs {
		if r.matches(path, protocols) {
			return true
		}
	}
	return false
}

// classifyRequest classifies req against the configured upgrades entries
// (compiled once, in New).
func (p *Proxy) classifyRequest(req *http.Request) inbound.Verdict {
	return inbound.Classify(req.Method, inbound.RoutePath(req), req.Header, p.upgrades.allow)
}
