package authn

import (
	"sync"
	"time"
)

// endedGrants remembers grants the registry has said are no longer held
// (RELEASED, EXPIRED, REVOKED), learned where the sidecar asks the registry
// anyway: the per-request status reads of routes in registry mode.
//
// It closes part of proof mode's window. A lockStatus.v1 proof says HELD at
// its iat; a worker that released its lease early still holds that proof,
// and a route in proof mode accepts it until it is status.maxAge old (or
// expires). Fences still order the writes (a newer owner's accepted fence
// makes the old one STALE_OWNER), but between the release and the next
// owner's first write, the released grant's proof would be accepted. Once
// this sidecar has learned of the end from the registry, such a proof is
// refused (GRANT_NOT_HELD) for as long as a proof of it could still be
// fresh enough to pass: the longest route maxAge plus the clock skew.
//
// The set is bounded: when full, the entry that would be forgotten first
// is dropped, which can only re-open the window documented above, never
// accept anything proof mode would otherwise refuse.
type endedGrants struct {
	mu    sync.Mutex
	keep  time.Duration
	limit int
	until map[string]time.Time // grant digest -> forget after
}

// defaultEndedLimit bounds the memory of ended grants (about 100 bytes each).
const defaultEndedLimit = 65536

func newEndedGrants(keep time.Duration, limit int) *endedGrants {
	return &endedGrants{keep: keep, limit: limit, until: map[string]time.Time{}}
}

// note records that the registry said digest is no longer held at now.
func (e *endedGrants) note(digest string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.until[digest]; !ok && len(e.until) >= e.limit {
		e.evict(now)
	}
	e.until[digest] = now.Add(e.keep)
}

// evict drops expired entries, and when none is expired, the one that
// would be forgotten first.
func (e *endedGrants) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for d, t := range e.until {
		if !now.Before(t) {
			delete(e.until, d)
			continue
		}
		if oldest == "" || t.Before(oldestAt) {
			oldest, oldestAt = d, t
		}
	}
	if len(e.until) >= e.limit && oldest != "" {
		delete(e.until, oldest)
	}
}

// ended reports whether the registry said digest is no longer held, within
// the window a proof of it could still be accepted.
func (e *endedGrants) ended(digest string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.until[digest]
	if ok && !now.Before(t) {
		delete(e.until, digest)
		return false
	}
	return ok
}
