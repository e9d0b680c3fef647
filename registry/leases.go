package registry

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// Limits of a lease listing (LeasesQuery.Limit).
const (
	DefaultLeasesLimit = 100
	MaxLeasesLimit     = 1000
)

// MaxLeaseCursorLen bounds a lease cursor: a resource ID in base64url, a
// dot and a fence.
const MaxLeaseCursorLen = 1024

// LeaseCursor is the position of a lease in a listing's order: by
// resource (bytes, as Go compares strings), then by fence. Fences of one
// resource are unique, so the pair names one lease.
type LeaseCursor struct {
	Resource string
	Fence    uint64
}

// IsZero reports whether c is the start of a listing.
func (c LeaseCursor) IsZero() bool { return c == LeaseCursor{} }

// String is c's wire form (ParseLeaseCursor reads it back): the resource
// in unpadded base64url, ".", the fence in decimal; "" for the zero
// cursor. It is opaque to clients.
func (c LeaseCursor) String() string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(c.Resource)) + "." + strconv.FormatUint(c.Fence, 10)
}

// compare orders cursors as the listing does.
func (c LeaseCursor) compare(o LeaseCursor) int {
	return cmp.Or(strings.Compare(c.Resource, o.Resource), cmp.Compare(c.Fence, o.Fence))
}

// cursorOf is l's position.
func cursorOf(l LeaseRecord) LeaseCursor { return LeaseCursor{Resource: l.Resource, Fence: l.Fence} }

// ParseLeaseCursor reads a cursor a listing returned ("" is the start).
// Only the canonical form String writes is accepted; anything else is
// ErrInvalidInput.
func ParseLeaseCursor(s string) (LeaseCursor, error) {
	if s == "" {
		return LeaseCursor{}, nil
	}
	bad := func(why string) (LeaseCursor, error) {
		return LeaseCursor{}, fmt.Errorf("%w: lease cursor: %s", ErrInvalidInput, why)
	}
	if len(s) > MaxLeaseCursorLen {
		return bad("too long")
	}
	enc, num, ok := strings.Cut(s, ".")
	if !ok {
		return bad("want <resource>.<fence>")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil {
		return bad("resource is not unpadded base64url")
	}
	fence, err := strconv.ParseUint(num, 10, 64)
	if err != nil || fence == 0 || strconv.FormatUint(fence, 10) != num {
		return bad("fence is not a decimal number of at least 1")
	}
	if err := fencegate.ValidateResource(string(raw)); err != nil {
		return bad(err.Error())
	}
	return LeaseCursor{Resource: string(raw), Fence: fence}, nil
}

// LeasesQuery asks for one page of the stored leases, in cursor order
// (resource, then fence). A lease is stored from its grant until
// compaction deletes it once it has ended (Registry.Compact): a listing
// holds the HELD leases and those that ended within the retention.
type LeasesQuery struct {
	// Resource lists the leases of one resource; Prefix those of every
	// resource starting with it. At most one of them is set; neither lists
	// every lease.
	Resource string
	Prefix   string
	// State keeps only the leases in that effective state (HELD, EXPIRED,
	// RELEASED, REVOKED); "" keeps every one.
	State string
	// After is the previous page's Next (the zero cursor for the first).
	After LeaseCursor
	// Limit bounds the page: 1..MaxLeasesLimit.
	Limit int
	// Now and MaxSkew compute the effective states, at
	// DecisionTime(Now, the meta read, MaxSkew).
	Now     time.Time
	MaxSkew time.Duration
}

// Validate checks a lease listing's query.
func (q LeasesQuery) Validate() error {
	switch {
	case q.Resource != "" && q.Prefix != "":
		return fmt.Errorf("%w: give a resource or a prefix, not both", ErrInvalidInput)
	case q.Limit < 1 || q.Limit > MaxLeasesLimit:
		return fmt.Errorf("%w: limit %d: want 1..%d", ErrInvalidInput, q.Limit, MaxLeasesLimit)
	case len(q.Prefix) > fencegate.MaxResourceLen:
		return fmt.Errorf("%w: prefix is longer than a resource ID", ErrInvalidInput)
	}
	if q.Resource != "" {
		if err := ValidateResource(q.Resource); err != nil {
			return err
		}
	}
	switch q.State {
	case "", fencegate.StateHeld, fencegate.StateExpired, fencegate.StateReleased, fencegate.StateRevoked:
	default:
		return fmt.Errorf("%w: state %q: want HELD, EXPIRED, RELEASED or REVOKED", ErrInvalidInput, q.State)
	}
	return nil
}

// Selects reports whether the listing q may hold l by its resource and
// position (a backend collects candidates with it; DecideLeases checks
// again).
func (q LeasesQuery) Selects(l LeaseRecord) bool {
	switch {
	case q.Resource != "" && l.Resource != q.Resource:
		return false
	case !strings.HasPrefix(l.Resource, q.Prefix):
		return false
	}
	return q.After.IsZero() || cursorOf(l).compare(q.After) > 0
}

// LeasesSnapshot is what DecideLeases reads: the meta, every policy (for
// each lease's current policy generation) and the candidate leases, in
// any order (a superset of the page is fine).
type LeasesSnapshot struct {
	Meta     Meta
	Policies []fencegate.Policy
	Leases   []LeaseRecord
}

// LeasePage is one page of a lease listing.
type LeasePage struct {
	// Leases are the page's leases with their effective state, in cursor
	// order.
	Leases []LeaseView
	// Next is the cursor of the next page; zero when this page is the
	// last.
	Next LeaseCursor
}

// DecideLeases is a listing's decision over snap: the leases q selects
// whose effective state at the decision time (DecisionTime) is q.State (any when ""), sorted by
// cursor, at most q.Limit of them. It writes nothing.
func DecideLeases(snap LeasesSnapshot, q LeasesQuery) (LeasePage, error) {
	if err := q.Validate(); err != nil {
		return LeasePage{}, err
	}
	m := snap.Meta.current()
	now := DecisionTime(q.Now, m, q.MaxSkew)
	var views []LeaseView
	for _, l := range snap.Leases {
		if !q.Selects(l) {
			continue
		}
		v := view(l, m, MatchPolicy(snap.Policies, l.Resource).Generation, now)
		if q.State == "" || v.State == q.State {
			views = append(views, v)
		}
	}
	slices.SortFunc(views, func(a, b LeaseView) int { return cursorOf(a.Lease).compare(cursorOf(b.Lease)) })
	var page LeasePage
	if len(views) > q.Limit {
		views = views[:q.Limit]
		page.Next = cursorOf(views[q.Limit-1].Lease)
	}
	page.Leases = views
	return page, nil
}
