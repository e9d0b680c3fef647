package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// applied is one write the legacy backend applied.
type applied struct {
	// Target is the request target the backend received (path and query).
	Target string
	// OperationID, Fence and Segment are the sidecar's Fence-* headers.
	OperationID, Fence, Segment string
	Body                        string
}

// gateFunc decides, before a write is applied, whether it is applied and
// answered (true) or dropped without effect, its connection cut (false).
// It may block: that is how a scenario holds a write inside the backend.
type gateFunc func(w applied) bool

// ledgerBackend is the recording legacy service of the fault matrix: it
// applies every PUT body to its resource (the path) in arrival order and
// keeps that order, so a scenario can compare what the backend holds with
// what the sidecar's receipts say was accepted. Like a real service that
// honours Idempotency-Key, it applies a key once and answers its repeats
// with the first answer. It knows nothing of fences: it is the legacy
// service the sidecar protects.
//
// Its effect query, GET /effects/{operationId}, answers what it has
// applied so far: 200 with the write's answer when a write with that
// Fence-Operation-Id was applied, 404 otherwise (a write still held by a
// gate is not found yet).
type ledgerBackend struct {
	mu       sync.Mutex
	log      map[string][]applied // path -> applied writes, in order
	keys     map[string]string    // Idempotency-Key -> first answer's body
	arrived  int                  // PUTs received, applied or not
	notFound map[string]int       // operation ID -> effect queries answered 404
	gate     gateFunc
	noKeys   bool // Idempotency-Key is not honoured: every PUT is applied
	srv      *httptest.Server
}

// startLedgerBackend serves a ledgerBackend on 127.0.0.1:0 until the test
// ends.
func startLedgerBackend(t *testing.T) *ledgerBackend {
	t.Helper()
	b := &ledgerBackend{log: map[string][]applied{}, keys: map[string]string{}, notFound: map[string]int{}}
	b.srv = httptest.NewServer(b)
	t.Cleanup(b.srv.Close)
	return b
}

// URL is the backend's base URL.
func (b *ledgerBackend) URL() string { return b.srv.URL }

// ignoreKeys makes the backend one that does not honour Idempotency-Key
// (a route without idempotencyKey): it applies every PUT it receives.
func (b *ledgerBackend) ignoreKeys() {
	b.mu.Lock()
	b.noKeys = true
	b.mu.Unlock()
}

// setGate installs (or, with nil, removes) the gate every PUT passes first.
func (b *ledgerBackend) setGate(g gateFunc) {
	b.mu.Lock()
	b.gate = g
	b.mu.Unlock()
}

func (b *ledgerBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler) // a body cut off is no write
	}
	if op, ok := strings.CutPrefix(r.URL.Path, "/effects/"); ok && r.Method == http.MethodGet {
		b.effect(w, op)
		return
	}
	if r.Method != http.MethodPut {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	a := applied{
		Target: r.URL.RequestURI(), OperationID: r.Header.Get("Fence-Operation-Id"),
		Fence: r.Header.Get("Fence-Token"), Segment: r.Header.Get("Fence-Segment"), Body: string(body),
	}
	b.mu.Lock()
	b.arrived++
	gate := b.gate
	b.mu.Unlock()
	if gate != nil && !gate(a) {
		panic(http.ErrAbortHandler) // not applied, and no answer
	}
	answer := "applied " + a.Body
	b.mu.Lock()
	if key := r.Header.Get("Idempotency-Key"); key != "" && !b.noKeys {
		if first, seen := b.keys[key]; seen {
			b.mu.Unlock()
			w.Header().Set("X-Idempotent-Replay", "true")
			io.WriteString(w, first)
			return
		}
		b.keys[key] = answer
	}
	b.log[r.URL.Path] = append(b.log[r.URL.Path], a)
	b.mu.Unlock()
	io.WriteString(w, answer)
}

// effect answers the effect query of op.
func (b *ledgerBackend) effect(w http.ResponseWriter, op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, writes := range b.log {
		for _, a := range writes {
			if a.OperationID == op {
				io.WriteString(w, "applied "+a.Body)
				return
			}
		}
	}
	b.notFound[op]++
	w.WriteHeader(http.StatusNotFound)
}

// notFoundAnswers is how many effect queries of op were answered 404.
func (b *ledgerBackend) notFoundAnswers(op string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.notFound[op]
}

// writes returns the writes applied to path, in order.
func (b *ledgerBackend) writes(path string) []applied {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]applied(nil), b.log[path]...)
}

// bodies returns the bodies applied to path, in order.
func (b *ledgerBackend) bodies(path string) []string {
	var out []string
	for _, a := range b.writes(path) {
		out = append(out, a.Body)
	}
	return out
}

// arrivals is the number of PUTs that reached the backend.
func (b *ledgerBackend) arrivals() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.arrived
}

// wantBodies fails unless path holds exactly want, in order.
func (b *ledgerBackend) wantBodies(t *testing.T, path string, want ...string) {
	t.Helper()
	if got := b.bodies(path); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("backend %s holds %q, want %q", path, got, want)
	}
}
