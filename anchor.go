package fencegate

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The outside anchor of a fenced store (docs/design.md, "Store loss").
//
// A fenced store that loses data (a Redis restarted empty or restored from
// an older RDB, a bbolt file on a replaced volume, a new pod on an empty
// disk) would otherwise forget a highest fence, a committed segment or a
// mutation that may still reach the backend. So the registry keeps, for
// every fenced store (named by the sidecars' store.service), what no copy
// of the store can lose with it:
//
//   - the store's generation (a random ID the store holds; another or a
//     missing one means another data set);
//   - per resource, a Progress that every copy the sidecars write to must
//     cover: it is written (AnchorBegin) after the store's Begin proceeded
//     and BEFORE the mutation is forwarded, so anything that may have
//     reached the backend is anchored;
//   - the enforcement ledger.
//
// The registry decides each anchor step with Progress.Covers, in its own
// transaction; the sidecar repairs a store found behind its anchor by
// raising it to the anchor (never lowering anything) and pausing the
// resource. These are the wire types of that exchange.

// Anchor limits.
const (
	// MaxStoreNameLen bounds a fenced store's name (store.service).
	MaxStoreNameLen = 128
	// MaxGenerationLen bounds a store generation ID.
	MaxGenerationLen = 128
	// MaxAnchorBatch bounds the items of one AnchorRequest.
	MaxAnchorBatch = 512
	// MaxAnchorBodyBytes bounds the body of POST /v1/stores/{store}/progress:
	// MaxAnchorBatch items of the largest valid shape fit (the registry's
	// other bodies are bounded at 64 KiB).
	MaxAnchorBodyBytes = 4 << 20
	// DefaultAnchorPage and MaxAnchorPage are the default and the largest
	// limit of GET /v1/stores/{store}/anchors.
	DefaultAnchorPage = 100
	MaxAnchorPage     = 1000
)

// Progress is what a fenced store has accepted on one resource, as far as
// loss detection and repair need it: the highest fence with its grant's
// identity, the last committed segment under it, the one mutation that may
// be in flight, and a pause. The zero Progress is "nothing accepted".
type Progress struct {
	// Fence is the highest fence accepted (0: none).
	Fence uint64 `json:"fence"`
	// Root is the operation root of Fence's grant.
	Root string `json:"root,omitempty"`
	// Lineage is the issuer lineage of Fence's grant ("" when its grant
	// carried none).
	Lineage string `json:"lineage,omitempty"`
	// Lease and GrantDigest name Fence's grant.
	Lease       string `json:"lease,omitempty"`
	GrantDigest string `json:"grantDigest,omitempty"`
	// IssuerEpoch and BackendRevision are Fence's grant's issue evidence.
	IssuerEpoch     uint64 `json:"issuerEpoch,omitempty"`
	BackendRevision uint64 `json:"backendRevision,omitempty"`
	// LastSeq is the last segment committed under Fence (0: none).
	LastSeq uint64 `json:"lastSeq"`
	// Pending is the mutation begun under Fence and not known to be settled
	// (in flight, or unknown): it may have reached the backend.
	Pending *PendingOp `json:"pending,omitempty"`
	// Paused is the reason the resource is paused ("" when it is not).
	Paused string `json:"paused,omitempty"`
}

// PendingOp is a mutation that may have reached the backend: segment Seq
// of Progress.Fence's operation, with its payload digest and the caller's
// identity.
type PendingOp struct {
	Seq           uint64 `json:"seq"`
	PayloadDigest string `json:"payloadDigest"`
	Owner         string `json:"owner,omitempty"`
	// Attempts counts the Begins that sent this mutation (1, plus one per
	// idempotent retry of it while its outcome was unknown). A store that
	// still holds the mutation but lost a later attempt's Begin would keep
	// the earlier attempt's quiet time, and could settle "not applied"
	// while the lost attempt may still land: Covers requires at least the
	// anchored count. 0 (an anchor of an earlier version) is not compared.
	Attempts uint32 `json:"attempts,omitempty"`
}

// Covers reports whether a store holding p has kept everything the anchor
// a says it accepted: p is a or a later state of the same history. A store
// whose record does not cover its anchor lost data.
//
// The rules, in order:
//   - an anchored pause must still be there (a pause is anchored after the
//     store wrote it, and a resume clears the anchor before the store);
//   - nothing anchored: covered;
//   - a higher fence in p: covered (fences only grow);
//   - a lower fence, or the same fence under another root: not covered;
//   - same fence and root, with a pending mutation anchored: p committed
//     it (LastSeq >= its Seq), or still holds that very mutation (same
//     Seq and payload digest, at least as many attempts) in flight or
//     unknown;
//   - same fence and root, nothing pending: p's LastSeq is at least a's.
func (p Progress) Covers(a Progress) bool {
	if a.Paused != "" && p.Paused == "" {
		return false
	}
	switch {
	case a.Fence == 0:
		return true
	case p.Fence > a.Fence:
		return true
	case p.Fence < a.Fence, p.Root != a.Root:
		return false
	case a.Pending != nil:
		if p.LastSeq >= a.Pending.Seq {
			return true
		}
		return p.Pending != nil && p.Pending.Seq == a.Pending.Seq && p.Pending.PayloadDigest == a.Pending.PayloadDigest &&
			p.Pending.Attempts >= a.Pending.Attempts
	}
	return p.LastSeq >= a.LastSeq
}

// Validate checks a Progress's shape: a fence with a root and grant digest,
// segments in range, a pending segment right after LastSeq, bounded text.
func (p Progress) Validate() error {
	if p.Fence == 0 {
		if p != (Progress{Paused: p.Paused}) {
			return fmt.Errorf("%w: progress without a fence holds other fields", ErrInvalidAnchor)
		}
		return checkAnchorText("paused", p.Paused, 64, false)
	}
	for _, f := range []struct {
		name, v string
		max     int
		need    bool
	}{
		{"root", p.Root, MaxRootLen, true},
		{"lease", p.Lease, 256, false},
		{"grantDigest", p.GrantDigest, 80, false},
		{"paused", p.Paused, 64, false},
	} {
		if err := checkAnchorText(f.name, f.v, f.max, f.need); err != nil {
			return err
		}
	}
	if p.Lineage != "" {
		if err := ValidateLineage(p.Lineage); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidAnchor, err)
		}
	}
	if p.LastSeq > MaxSeq {
		return fmt.Errorf("%w: lastSeq %d above %d", ErrInvalidAnchor, p.LastSeq, uint64(MaxSeq))
	}
	if op := p.Pending; op != nil {
		if op.Seq != p.LastSeq+1 {
			return fmt.Errorf("%w: pending segment %d does not follow lastSeq %d", ErrInvalidAnchor, op.Seq, p.LastSeq)
		}
		if err := ValidateDigest(op.PayloadDigest); err != nil {
			return fmt.Errorf("%w: pending payloadDigest: %v", ErrInvalidAnchor, err)
		}
		if err := checkAnchorText("pending.owner", op.Owner, 1024, false); err != nil {
			return err
		}
	}
	return nil
}

// ErrInvalidAnchor is wrapped by the validation errors of the anchor wire
// types.
var ErrInvalidAnchor = errors.New("fencegate: invalid anchor")

func checkAnchorText(field, v string, maxLen int, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%w: %s is required", ErrInvalidAnchor, field)
	case len(v) > maxLen:
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidAnchor, field, maxLen)
	case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: %s is not printable UTF-8", ErrInvalidAnchor, field)
	}
	return nil
}

// StoreResource is the registry resource that stands for a fenced store:
// "fencegate-store/<name>". A sidecar with a local store claims it by
// holding a lease on it, and the policy matching it says who may call the
// store's anchor API.
func StoreResource(name string) string { return "fencegate-store/" + name }

// ValidateStoreName checks a fenced store's name: 1..MaxStoreNameLen bytes
// of [A-Za-z0-9._-] (it is a path segment of the registry API and part of
// the claim resource "fencegate-store/<name>").
func ValidateStoreName(s string) error {
	if s == "" || len(s) > MaxStoreNameLen {
		return fmt.Errorf("%w: store name must be 1 to %d bytes", ErrInvalidAnchor, MaxStoreNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: store name %q holds %q (want [A-Za-z0-9._-])", ErrInvalidAnchor, s, c)
		}
	}
	if s == "." || s == ".." {
		return fmt.Errorf("%w: store name %q", ErrInvalidAnchor, s)
	}
	return nil
}

// AnchorOp is the kind of one anchor step.
type AnchorOp string

// Anchor steps. Each is decided by the registry in its transaction, item
// by item, on the anchor stored for (store, resource).
const (
	// AnchorBegin: the store's Begin proceeded from Prior to Next (Next
	// holds the new pending mutation). Anchored when Prior covers the
	// anchor (then the anchor becomes Next); otherwise the store lost data:
	// AnchorLoss, and the anchor is unchanged. The mutation is forwarded
	// only after AnchorAnchored.
	AnchorBegin AnchorOp = "BEGIN"
	// AnchorSettle: before the store withdraws or settles as not applied
	// the pending mutation of Prior, the anchor drops it (becomes Next).
	// Anchored when the anchor's pending mutation is Prior's (or Next
	// already covers the anchor); otherwise AnchorConflict and the caller
	// must not settle in the store.
	AnchorSettle AnchorOp = "SETTLE"
	// AnchorPause: the store paused the resource (Next.Paused); the anchor
	// records the pause. Always anchored.
	AnchorPause AnchorOp = "PAUSE"
	// AnchorResume: before the store resumes the resource, the anchor drops
	// its pause. Always anchored.
	AnchorResume AnchorOp = "RESUME"
	// AnchorSeed: the store's record as it is (Next), sent when the
	// registry holds no anchor of the store yet (a new registry, an
	// upgrade) or after an acknowledged loss. Anchored when Next covers
	// the anchor (the anchor becomes Next); otherwise AnchorLoss.
	AnchorSeed AnchorOp = "SEED"
)

// AnchorItem is one step on one resource.
type AnchorItem struct {
	Resource string   `json:"resource"`
	Op       AnchorOp `json:"op"`
	// Prior is the store's record of the resource before the step, as read
	// in the step's own transaction (BEGIN, SETTLE).
	Prior Progress `json:"prior"`
	// Next is the store's record after the step.
	Next Progress `json:"next"`
}

// AnchorOutcome is the registry's decision on one AnchorItem.
type AnchorOutcome string

// Anchor outcomes.
const (
	// AnchorAnchored: the step is anchored; the anchor is now Anchored.
	AnchorAnchored AnchorOutcome = "ANCHORED"
	// AnchorLoss: the store's Prior (BEGIN) or Next (SEED) does not cover
	// the anchor: the store lost what Anchored states. Nothing changed.
	AnchorLoss AnchorOutcome = "LOSS"
	// AnchorConflict: a SETTLE whose pending mutation is not the anchored
	// one, or a step whose Next would lower the anchor (a BEGIN whose Next
	// does not cover it, a SETTLE whose Next is not the anchor without its
	// pending mutation). Nothing changed; the caller must not go on with
	// the step in its store.
	AnchorConflict AnchorOutcome = "CONFLICT"
)

// AnchorResult is the answer for one AnchorItem, in the request's order.
type AnchorResult struct {
	Resource string        `json:"resource"`
	Outcome  AnchorOutcome `json:"outcome"`
	// Anchored is the anchor after the step (for LOSS: what the store lost).
	Anchored Progress `json:"anchored"`
}

// AnchorRequest is the body of POST /v1/stores/{store}/progress.
type AnchorRequest struct {
	// Generation is the store's generation; it must be the anchored one
	// (else the whole request is refused with STORE_LOST).
	Generation string       `json:"generation"`
	Items      []AnchorItem `json:"items"`
}

// AnchorResponse answers an AnchorRequest.
type AnchorResponse struct {
	// Lineage is the registry's issuer lineage: a sidecar that sees it
	// change knows the registry was replaced and seeds it again.
	Lineage string         `json:"lineage"`
	Results []AnchorResult `json:"results"`
	// Now is the registry's clock when it answered (Unix ms). A sidecar
	// takes it, less trust.clockSkew, as a lower bound on the time: a
	// sidecar whose clock lags the registry's by more than the skew still
	// judges proof windows on time (docs/design.md 6.4, "Whose clock").
	Now int64 `json:"now,omitempty"`
}

// StoreRegistration is the body of PUT /v1/stores/{store}: a sidecar
// opening its store states the store's generation.
type StoreRegistration struct {
	Generation string `json:"generation"`
}

// StoreAnchor is the registry's record of one fenced store: the answer of
// PUT and GET /v1/stores/{store}, of the ledger and of the acknowledgement.
// PUT answers it with 201 when this registration anchored the generation
// (the registry held none: a new store, or a new or replaced registry,
// which the sidecar then seeds), 200 when the generation matched.
type StoreAnchor struct {
	Store string `json:"store"`
	// Generation is the anchored generation ("" before the first
	// registration).
	Generation string `json:"generation"`
	// Lineage is the registry's issuer lineage.
	Lineage string `json:"lineage"`
	// RegisteredAt is when the generation was first anchored (Unix ms; 0
	// before the first registration).
	RegisteredAt int64 `json:"registeredAt,omitempty"`
	// Resources counts the resources anchored.
	Resources uint64 `json:"resources"`
	// Losses counts the anchor steps that found the store behind its
	// anchor (LOSS) and the registrations that presented another
	// generation than the anchored one (once per generation presented);
	// LastLoss describes the latest, at LastLossAt (Unix ms).
	Losses     uint64 `json:"losses,omitempty"`
	LastLoss   string `json:"lastLoss,omitempty"`
	LastLossAt int64  `json:"lastLossAt,omitempty"`
	// Presented is the latest generation a registration presented that is
	// not the anchored one ("" when none since the last acknowledgement):
	// what an operator acknowledges after checking the loss.
	Presented string `json:"presented,omitempty"`
	// Acknowledged counts the acknowledged losses (each adopted a new
	// generation); the latest at AcknowledgedAt (Unix ms).
	Acknowledged   uint64 `json:"acknowledged,omitempty"`
	AcknowledgedAt int64  `json:"acknowledgedAt,omitempty"`
	// Ledger is the enforcement ledger: every route shape ever enforced,
	// in shape order.
	Ledger []LedgerEntry `json:"ledger,omitempty"`
	// Now is the registry's clock when it answered (Unix ms). A sidecar
	// takes it, less trust.clockSkew, as a lower bound on the time: a
	// sidecar whose clock lags the registry's by more than the skew still
	// judges proof windows on time (docs/design.md 6.4, "Whose clock").
	Now int64 `json:"now,omitempty"`
}

// LedgerEntry is one route shape of a store's enforcement ledger at the
// registry: whether it is enforced now and since when (Unix ms; 0 when a
// forced downgrade cleared it), with its newest events.
type LedgerEntry struct {
	Shape         string        `json:"shape"`
	EnforcedSince int64         `json:"enforcedSince,omitempty"`
	History       []LedgerEvent `json:"history,omitempty"`
}

// LedgerEvent is one change of a LedgerEntry.
type LedgerEvent struct {
	// At is Unix ms.
	At     int64  `json:"at"`
	Kind   string `json:"kind"` // ENFORCE or FORCED_DOWNGRADE
	Detail string `json:"detail,omitempty"`
}

// Ledger event kinds and limits (those of the store's ledger, package
// store).
const (
	// LedgerEnforce: the shape is enforced (sets EnforcedSince if unset).
	LedgerEnforce = "ENFORCE"
	// LedgerForcedDowngrade: an operator forced an enforced shape to a
	// weaker mode (clears EnforcedSince).
	LedgerForcedDowngrade = "FORCED_DOWNGRADE"
	// MaxShapeLen bounds a route shape ("PUT /v1/items/{}").
	MaxShapeLen = 1024
	// MaxLedgerDetailLen bounds an event's detail.
	MaxLedgerDetailLen = 1024
	// MaxLedgerHistory is the number of events an entry keeps (the oldest
	// are dropped).
	MaxLedgerHistory = 64
	// MaxLedgerShapes bounds the shapes of one store's ledger.
	MaxLedgerShapes = 256
)

// LedgerBody is the body of POST /v1/stores/{store}/ledger.
type LedgerBody struct {
	Shape  string `json:"shape"`
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// ResourceAnchor is one item of GET /v1/stores/{store}/anchors.
type ResourceAnchor struct {
	Resource string   `json:"resource"`
	Anchored Progress `json:"anchored"`
}

// AnchorPage is the answer of GET /v1/stores/{store}/anchors?after=&limit=:
// the anchored resources after the resource "after" in byte order, at most
// limit of them. Next is the last resource of the page when more may follow
// (pass it as after), "" at the end.
type AnchorPage struct {
	Lineage string           `json:"lineage"`
	Anchors []ResourceAnchor `json:"anchors"`
	Next    string           `json:"next,omitempty"`
}

// AcknowledgeBody is the body of POST /v1/stores/{store}/acknowledge
// (admin): adopt Generation as the store's generation after a loss.
type AcknowledgeBody struct {
	Generation string `json:"generation"`
}
