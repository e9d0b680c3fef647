package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
)

// TestServerLogs: the sidecar and the registry write JSON only, on
// stderr, nothing on stdout: a start line naming the version and the
// listeners, one log object per line with each key once (the worker's
// identity is "identity", zap's "caller" is the source line), and a
// shutdown line after SIGTERM. --log-format console writes zap's console
// lines instead.
func TestServerLogs(t *testing.T) {
	reg := startRegistry(t, "")
	bsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	defer bsrv.Close()
	sc := startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+bsrv.URL+`"}
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "item/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: {backend: bolt, service: e2e-logs, identity: sidecar}
dataDir: "`+t.TempDir()+`"
log: {level: info}
`)
	c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", "worker-a"))
	l, err := c.Acquire(context.Background(), client.AcquireRequest{Resource: "item/1", RequestID: "logs-1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, sc.url+"/v1/items/1", strings.NewReader("x"))
	req.Header.Set("X-Fencegate-Identity", "worker-a")
	req.Header.Set("Fence-Grant", l.Grant)
	req.Header.Set("Fence-Segment", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("write: %d", resp.StatusCode)
	}
	if err := sc.stop(); err != nil {
		t.Fatalf("sidecar stop: %v", err)
	}
	if err := reg.stop(); err != nil {
		t.Fatalf("registry stop: %v", err)
	}
	for _, p := range []*proc{sc.proc, reg.proc} {
		if p.Stdout() != "" {
			t.Errorf("%s printed on stdout: %q", p.name, p.Stdout())
		}
		lines := logLines(t, p.name, p.Stderr())
		msgs := map[string]map[string]any{}
		for _, m := range lines {
			msgs[strings.SplitN(m["msg"].(string), " on ", 2)[0]] = m
		}
		start, stop := msgs["fencegate "+p.name+" listening"], msgs["fencegate "+p.name+" stopped"]
		if start == nil || start["version"] == nil || start["addr"] == nil || stop == nil || (p == sc.proc && start["modes"] == nil) {
			t.Errorf("%s: no start line with version and addr, or no shutdown line:\n%s", p.name, p.Stderr())
		}
	}
	var mutation map[string]any
	for _, m := range logLines(t, "proxy", sc.Stderr()) {
		if m["msg"] == "mutation" {
			mutation = m
		}
	}
	if mutation == nil || mutation["identity"] != "worker-a" || !strings.Contains(fmt.Sprint(mutation["caller"]), ".go:") {
		t.Errorf("the mutation line names identity %v and caller %v, want worker-a and a source line: %v", mutation["identity"], mutation["caller"], mutation)
	}

	// The console format: no JSON, the level in capitals.
	con := start(t, "registry", "registry", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--insecure-dev", "--log-format", "console")
	con.waitFor(listeningRE, 15*time.Second)
	if err := con.stop(); err != nil {
		t.Fatal(err)
	}
	if s := con.Stderr(); !strings.Contains(s, "\tINFO\t") || strings.Contains(s, `{"level"`) {
		t.Errorf("--log-format console:\n%s", s)
	}
}

// logLines parses every stderr line as one JSON object whose keys are
// all distinct.
func logLines(t *testing.T, name, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		dec := json.NewDecoder(bytes.NewReader([]byte(line)))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Errorf("%s: a stderr line that is not a JSON object: %q", name, line)
			continue
		}
		seen := map[string]bool{}
		for dec.More() {
			k, _ := dec.Token()
			key, _ := k.(string)
			if seen[key] {
				t.Errorf("%s: key %q twice in %s", name, key, line)
			}
			seen[key] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Errorf("%s: %v in %s", name, err, line)
				break
			}
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err == nil {
			out = append(out, m)
		}
	}
	return out
}
