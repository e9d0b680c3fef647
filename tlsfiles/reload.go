package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// DefaultInterval is how often, at most, a configuration checks its files
// when Reload.Interval is zero.
const DefaultInterval = time.Second

// Reload says how a configuration re-reads its files. The zero value is
// the default: checks at most every DefaultInterval on the real clock,
// failures logged by slog's default logger.
type Reload struct {
	// Interval is the least time between two checks of the files
	// (DefaultInterval when zero; negative checks at every handshake).
	Interval time.Duration
	// Clock reads the time of a check (clock.Real() when nil).
	Clock clock.Clock
	// OnError receives, wrapped in ErrReload, why changed files did not
	// load; the last good material stays in use. It is called during a
	// handshake (outside any lock), once per file state; it should not
	// block. Nil logs a
	// warning with slog's default logger.
	OnError func(error)
}

// material is one loaded file set.
type material struct {
	cert *tls.Certificate // nil without a certificate file
	pool *x509.CertPool   // nil without a CA file
}

// fileSet names the files of one configuration ("" for none).
type fileSet struct{ cert, key, ca string }

func (f fileSet) paths() []string {
	var p []string
	for _, s := range []string{f.cert, f.key, f.ca} {
		if s != "" {
			p = append(p, s)
		}
	}
	return p
}

// load reads the file set.
func (f fileSet) load() (*material, error) {
	m := &material{}
	if f.cert != "" || f.key != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("tlsfiles: %w", err)
		}
		m.cert = &cert
	}
	if f.ca != "" {
		pool, err := Pool(f.ca)
		if err != nil {
			return nil, err
		}
		m.pool = pool
	}
	return m, nil
}

// reloader keeps the current material of a file set and replaces it when
// the files change and load.
type reloader struct {
	files   fileSet
	paths   []string
	every   time.Duration
	clk     clock.Clock
	onError func(error)

	cur atomic.Pointer[material]

	mu   sync.Mutex
	next time.Time // no check before; under mu
	good []fileID  // the identities cur was loaded from
	bad  []fileID  // the identities whose load failed last (reported)
}

// newReloader loads the file set: a failure is an error, not a report.
func newReloader(f fileSet, r Reload) (*reloader, error) {
	rl := &reloader{files: f, paths: f.paths(), every: r.Interval, clk: r.Clock, onError: r.OnError}
	if rl.every == 0 {
		rl.every = DefaultInterval
	}
	if rl.clk == nil {
		rl.clk = clock.Real()
	}
	if rl.onError == nil {
		rl.onError = func(err error) { slog.Warn("tls files", "err", err) }
	}
	ids := identities(rl.paths) // before the load: a change in between is seen next time
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	rl.cur.Store(m)
	rl.good = ids
	rl.next = rl.clk.Now().Add(rl.every)
	return rl, nil
}

// get returns the current material, first reloading it when the interval
// has passed and the files changed. A failure is reported outside the lock.
func (rl *reloader) get() *material {
	m, failed := rl.check()
	if failed != nil {
		rl.onError(failed)
	}
	return m
}

// check is get under the lock; failed is the error to report, if any.
func (rl *reloader) check() (m *material, failed error) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	now := rl.clk.Now()
	if now.Before(rl.next) {
		return rl.cur.Load(), nil
	}
	rl.next = now.Add(rl.every)
	ids := identities(rl.paths)
	if slices.Equal(ids, rl.good) {
		return rl.cur.Load(), nil
	}
	m, err := rl.files.load()
	if err != nil {
		if !slices.Equal(ids, rl.bad) {
			rl.bad = ids
			failed = fmt.Errorf("%w: %w", ErrReload, err)
		}
		return rl.cur.Load(), failed
	}
	rl.cur.Store(m)
	rl.good, rl.bad = ids, nil
	return m, nil
}

// fileID is what os.Stat says of a file; a file that cannot be stat'ed has
// the zero fileID with missing set.
type fileID struct {
	missing    bool
	size       int64
	mtime      int64 // Unix nanoseconds
	dev, inode uint64
}

// identities stats each path, following symlinks.
func identities(paths []string) []fileID {
	ids := make([]fileID, len(paths))
	for i, p := range paths {
		ids[i] = statFile(p)
	}
	return ids
}
