package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/proxy/inbound"
)

// fuzzUpgrades are the upgrades entries FuzzClassifyRequest runs against.
var fuzzUpgrades = []UpgradeConfig{
	{Path: "/ws/{room}", Protocols: []string{"websocket"}},
	{Path: "/chat", Protocols: []string{"websocket", "Chat"}},
}

// refModel is the read-path rule written out plainly, independently of
// inbound/readpath.go: override header → "override"; any sign of an upgrade →
// "read" only for a GET on /ws/<one segment> (websocket) or /chat
// (websocket, chat) asking for nothing but those, else "upgrade"; the four
// reads spelled exactly → "read"; anything else → "mutation".
func refModel(method, path string, h http.Header) string {
	lower := func(s string) string {
		out := ""
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c == '_' {
				c = '-'
			}
			out += string(c)
		}
		return out
	}
	elements := func(values []string) []string {
		var out []string
		for _, v := range values {
			for _, e := range strings.Split(v, ",") {
				e = strings.Trim(e, " \t")
				if e != "" {
					out = append(out, e)
				}
			}
		}
		return out
	}
	upgrade, h2 := false, false
	var protocols []string
	for k := range h {
		switch lower(k) {
		case "x-http-method-override", "x-http-method", "x-method-override":
			return "override"
		}
	}
	for k, vs := range h {
		switch lower(k) {
		case "upgrade":
			upgrade = true
			protocols = append(protocols, elements(vs)...)
		case "http2-settings":
			upgrade, h2 = true, true
		case ":protocol":
			upgrade = true
		case "connection":
			for _, t := range elements(vs) {
				if lower(t) == "upgrade" {
					upgrade = true
				}
				if lower(t) == "http2-settings" {
					upgrade, h2 = true, true
				}
			}
		}
	}
	if lower(method) == "pri" {
		upgrade, h2 = true, true
	}
	if upgrade {
		if h2 || method != "GET" || len(protocols) == 0 {
			return "upgrade"
		}
		allowed := map[string]bool{}
		if room, ok := strings.CutPrefix(path, "/ws/"); ok && room != "" && !strings.Contains(room, "/") {
			allowed["websocket"] = true
		}
		if path == "/chat" {
			allowed["websocket"], allowed["chat"] = true, true
		}
		for _, p := range protocols {
			name := p
			if i := strings.Index(p, "/"); i >= 0 {
				name = p[:i]
			}
			if !allowed[lower(name)] {
				return "upgrade"
			}
		}
		return "read"
	}
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return "read"
	}
	return "mutation"
}

var verdictNames = map[inbound.Verdict]string{inbound.VerdictMutation: "mutation", inbound.VerdictRead: "read", inbound.VerdictOverride: "override", inbound.VerdictUpgrade: "upgrade"}

// FuzzClassifyRequest: the read-path classification never panics and
// agrees with refModel on any method, header set and path; routing any
// method and path never panics either.
func FuzzClassifyRequest(f *testing.F) {
	rules, err := compileUpgrades(fuzzUpgrades)
	if err != nil {
		f.Fatal(err)
	}
	if err := registerRouteMethod("PROPPATCH"); err != nil {
		f.Fatal(err)
	}
	rt, err := newRouter([]RouteConfig{
		{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}"},
		{Method: "PROPPATCH", Path: "/v1/props/{id}", Resource: "prop/{id}"},
	})
	if err != nil {
		f.Fatal(err)
	}
	seeds := []struct{ method, headers, path string }{
		{"GET", "", "/v1/items/1"},
		{"get", "", "/v1/items/1"},
		{"Put", "", "/v1/items/1"},
		{"PROPPATCH", "", "/v1/props/1"},
		{"CONNECT", "", ""},
		{"PRI", "", "*"},
		{"GET", "X-HTTP-Method-Override: DELETE", "/v1/items/1"},
		{"POST", "x_http_method: PUT", "/v1/items/1"},
		{"HEAD", "X-Method-Override: PUT", "/"},
		{"GET", "Connection: Upgrade\nUpgrade: websocket", "/ws/1"},
		{"GET", "Connection: Upgrade\nUpgrade: websocket/13", "/ws/1"},
		{"GET", "Connection: Upgrade\nUpgrade: websocket", "/ws/1/2"},
		{"GET", "Connection: Upgrade\nUpgrade: websocket, h2c", "/ws/1"},
		{"GET", "Connection: Upgrade, HTTP2-Settings\nUpgrade: h2c\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA", "/ws/1"},
		{"GET", "Upgrade: chat", "/chat"},
		{"GET", "Upgrade: CHAT,  websocket", "/chat"},
		{"GET", "Upgrade: chat", "/chat/"},
		{"GET", "Connection: keep-alive, upgrade", "/ws/x"},
		{"GET", "upgrade:", "/ws/x"},
		{"POST", "Connection: Upgrade\nUpgrade: websocket", "/ws/1"},
		{"OPTIONS", "", "*"},
		{"CONNECT", ":protocol: websocket", "/ws/1"},
		{"GET", ":Protocol: websocket\nUpgrade: websocket", "/ws/1"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.headers, s.path)
	}
	f.Fuzz(func(t *testing.T, method, headers, path string) {
		h := http.Header{}
		if headers != "" {
			for _, line := range strings.Split(headers, "\n") {
				k, v, _ := strings.Cut(line, ":")
				h[k] = append(h[k], strings.TrimLeft(v, " "))
			}
		}
		got := verdictNames[inbound.Classify(method, path, h, rules.allow)]
		if want := refModel(method, path, h); got != want {
			t.Fatalf("classify(%q, %q, %q) = %s, the model says %s", method, path, h, got, want)
		}
		req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		req.Method = method
		req.URL.Path, req.URL.RawPath = path, ""
		rt.match(req)
	})
}
