package store

import "sync"

// GenerationCheck is what a shared backend (store/redis, store/postgres)
// keeps between calls of the generation marker its server holds: the
// marker every call must see ("" while none is expected) and the loss
// detected, which fails every later call closed until Expect. The zero
// value expects no marker; it is safe for concurrent use.
type GenerationCheck struct {
	mu       sync.Mutex
	expected string
	lost     error
}

// Expected returns the marker expected and the loss already detected.
func (g *GenerationCheck) Expected() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.expected, g.lost
}

// Expect makes gen the marker expected and lifts a loss detected.
func (g *GenerationCheck) Expect(gen string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expected, g.lost = gen, nil
}

// Loss returns the loss detected, nil while the store trusts its data.
func (g *GenerationCheck) Loss() error {
	_, err := g.Expected()
	return err
}

// Check judges the marker a call read from the server (ok false: none)
// against expected, what Expected returned before the read: a match, or
// nothing expected, passes. Otherwise the store is failed closed with
// loss(got, ok, want) and that error is returned; the first loss stays
// until Expect. When Expect moved on meanwhile, the marker is judged
// against the marker expected now instead, so a call that raced an
// acknowledgement neither fails a store that is fine nor passes a
// marker that matches neither.
func (g *GenerationCheck) Check(got string, ok bool, expected string, loss func(got string, ok bool, want string) error) error {
	if expected == "" || ok && got == expected {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.expected != expected && (g.expected == "" || ok && got == g.expected) {
		return nil
	}
	if g.lost == nil {
		g.lost = loss(got, ok, g.expected)
	}
	return g.lost
}
