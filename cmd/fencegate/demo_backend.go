package main

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// legacyBackend is the demo's legacy service: it stores invoice batch
// totals, last writer wins, and knows nothing about fencing.
type legacyBackend struct {
	mu     sync.Mutex
	values map[string]string
}

func newLegacyBackend() *legacyBackend { return &legacyBackend{values: map[string]string{}} }

func (b *legacyBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/invoice-batches/")
	if !ok || id == "" {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPut:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		b.mu.Lock()
		b.values[id] = string(body)
		b.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "stored "+string(body)+"\n")
	case http.MethodGet:
		b.mu.Lock()
		v, ok := b.values[id]
		b.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, v)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (b *legacyBackend) get(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.values[id]
}

func (b *legacyBackend) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.values = map[string]string{}
}
