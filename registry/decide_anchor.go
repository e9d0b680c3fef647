package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// The decisions of the store anchor (anchor.go), pure functions over the
// snapshots of anchor.go like every decision of this package. Every store
// operation but the admin acknowledgement checks, in this order: the
// input's shape (ErrInvalidInput), the caller against the policy matching
// fencegate.StoreResource(store) (its AllowedOwners; no policy allows every
// identified caller: ErrPolicyDenied), then the store's state.

// validateStoreCaller checks the store name and the caller's identity.
func validateStoreCaller(store, caller string) error {
	if err := fencegate.ValidateStoreName(store); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := ValidateOwner(caller); err != nil {
		return fmt.Errorf("%w: caller: %w", ErrInvalidInput, err)
	}
	return nil
}

// authorize checks the caller against the policy of the store's resource.
func (s StoreSnapshot) authorize(store, caller string) error {
	if err := PolicyAllowsOwner(s.Policy, caller); err != nil {
		return fmt.Errorf("%w (store %s)", err, store)
	}
	if s.Store != nil && s.Store.Store != store {
		return fmt.Errorf("%w: record of store %q read for %q", ErrBackend, s.Store.Store, store)
	}
	return nil
}

// lineage is the data set's lineage for a writing decision: the meta's,
// or, when the meta has none yet, candidate, with the meta to write
// (Revision counted, as for DecideInit). A read never writes it.
func (s StoreSnapshot) lineage(candidate string) (string, *Meta, error) {
	if s.Meta.Lineage != "" {
		return s.Meta.Lineage, nil, nil
	}
	if err := fencegate.ValidateLineage(candidate); err != nil {
		return "", nil, fmt.Errorf("%w: the registry has no lineage yet and the request brought none: %v", ErrInvalidInput, err)
	}
	m := s.Meta.current()
	m.Lineage = candidate
	m.Revision++
	return candidate, &m, nil
}

// view is the StoreView of the snapshot with lineage and rec.
func (s StoreSnapshot) view(rec *StoreRecord, lineage string, ledger []fencegate.LedgerEntry) StoreView {
	v := StoreView{Lineage: lineage, Resources: s.Resources, Ledger: ledger}
	if rec != nil {
		v.Record = *rec
	}
	return v
}

// registered is the snapshot's store record, or ErrNotFound when the
// store was never registered (the sidecar registers at open: a new or
// replaced registry answers NOT_FOUND to anything else until it does).
func (s StoreSnapshot) registered(store string) (StoreRecord, error) {
	if s.Store == nil || s.Store.Generation == "" {
		return StoreRecord{}, fmt.Errorf("%w: fenced store %s is not registered (PUT /v1/stores/%s first)", ErrNotFound, store, store)
	}
	return *s.Store, nil
}

func validNow(now time.Time) error {
	if now.IsZero() {
		return fmt.Errorf("%w: no time given", ErrInvalidInput)
	}
	return nil
}

// DecideRegisterStore is a sidecar's registration of its store's
// generation. The first registration (no generation anchored) anchors it:
// Created. The anchored one: a match, nothing written. Another: Lost
// (STORE_LOST to the caller); the change records it as the store's
// Presented generation and counts a loss, once per generation presented,
// so a sidecar retrying does not count again. Nothing else changes: the
// store's anchors and ledger stay for the repair after an acknowledgement.
func DecideRegisterStore(snap StoreSnapshot, in RegisterStoreInput) (RegisterStoreResult, Change, error) {
	if err := validateStoreCaller(in.Store, in.Caller); err != nil {
		return RegisterStoreResult{}, Change{}, err
	}
	if err := fencegate.ValidateGeneration(in.Generation); err != nil {
		return RegisterStoreResult{}, Change{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := validNow(in.Now); err != nil {
		return RegisterStoreResult{}, Change{}, err
	}
	if err := snap.authorize(in.Store, in.Caller); err != nil {
		return RegisterStoreResult{}, Change{}, err
	}
	lineage, meta, err := snap.lineage(in.Lineage)
	if err != nil {
		return RegisterStoreResult{}, Change{}, err
	}
	ch := Change{Meta: meta}
	var rec StoreRecord
	var res RegisterStoreResult
	switch {
	case snap.Store == nil || snap.Store.Generation == "":
		rec = StoreRecord{Store: in.Store, Generation: in.Generation, RegisteredAt: ms(in.Now)}
		if snap.Store != nil {
			rec = *snap.Store
			rec.Generation, rec.RegisteredAt = in.Generation, ms(in.Now)
		}
		out := rec
		ch.Store = &out
		res.Created = true
	case snap.Store.Generation == in.Generation:
		rec = *snap.Store
	default:
		rec = *snap.Store
		res.Lost = true
		if rec.Presented != in.Generation {
			rec.Presented = in.Generation
			rec.Losses++
			rec.LastLoss = fmt.Sprintf("a registration presented generation %q; the anchored one is %q", in.Generation, rec.Generation)
			rec.LastLossAt = ms(in.Now)
			out := rec
			ch.Store = &out
		}
	}
	res.View = snap.view(&rec, lineage, snap.Ledger)
	return res, ch, nil
}

// DecideAnchor decides a batch of anchor steps of one store, item by item
// in the request's order, each on the anchor the items before it left
// (AnchorStep), all in the one transaction of the snapshot. The request
// is refused as a whole, writing nothing, when it is malformed, the caller
// is not allowed, the store is not registered (ErrNotFound) or its
// generation is not the anchored one (*StoreLostError). The change
// writes the anchors that changed, and the store's loss counters when an
// item was answered LOSS; never the meta (but a data set's first
// lineage).
func DecideAnchor(snap AnchorSnapshot, in AnchorInput) (fencegate.AnchorResponse, Change, error) {
	if err := validateStoreCaller(in.Store, in.Caller); err != nil {
		return fencegate.AnchorResponse{}, Change{}, err
	}
	if err := in.Request.Validate(); err != nil {
		return fencegate.AnchorResponse{}, Change{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := validNow(in.Now); err != nil {
		return fencegate.AnchorResponse{}, Change{}, err
	}
	if err := snap.authorize(in.Store, in.Caller); err != nil {
		return fencegate.AnchorResponse{}, Change{}, err
	}
	rec, err := snap.registered(in.Store)
	if err != nil {
		return fencegate.AnchorResponse{}, Change{}, err
	}
	if rec.Generation != in.Request.Generation {
		return fencegate.AnchorResponse{}, Change{}, &StoreLostError{Store: in.Store, Anchored: rec.Generation, Presented: in.Request.Generation}
	}
	lineage, meta, err := snap.StoreSnapshot.lineage(in.Lineage)
	if err != nil {
		return fencegate.AnchorResponse{}, Change{}, err
	}
	cur := make(map[string]fencegate.Progress, len(in.Request.Items))
	var order []string
	resp := fencegate.AnchorResponse{Lineage: lineage, Results: make([]fencegate.AnchorResult, 0, len(in.Request.Items))}
	losses := 0
	for _, it := range in.Request.Items {
		a, seen := cur[it.Resource]
		if !seen {
			a = snap.Anchors[it.Resource]
			order = append(order, it.Resource)
		}
		outcome, next := AnchorStep(a, it)
		cur[it.Resource] = next
		resp.Results = append(resp.Results, fencegate.AnchorResult{Resource: it.Resource, Outcome: outcome, Anchored: next})
		if outcome == fencegate.AnchorLoss {
			losses++
			rec.LastLoss = lossDetail(it, a)
		}
	}
	ch := Change{Meta: meta}
	for _, r := range order {
		stored := snap.Anchors[r] // the zero Progress when none is stored
		if SameProgress(stored, cur[r]) {
			continue
		}
		ch.Anchors = append(ch.Anchors, AnchorRecord{Store: in.Store, Resource: r, Progress: cur[r]})
	}
	if losses > 0 {
		rec.Losses += uint64(losses)
		rec.LastLossAt = ms(in.Now)
		ch.Store = &rec
	}
	return resp, ch, nil
}

// AnchorStep decides one anchor step on the anchor a of its resource
// (zero: nothing anchored), with fencegate.Progress.Covers, and returns
// the outcome and the anchor after it:
//   - BEGIN: LOSS (a unchanged) unless Prior covers a; CONFLICT unless
//     Next covers a too (the anchor never goes back); else ANCHORED, the
//     anchor becomes Next.
//   - SEED: LOSS unless Next covers a; else ANCHORED, Next.
//   - SETTLE: ANCHORED with Next when Next covers a (a retried or moot
//     settle), but never through a higher fence while a holds a pending
//     mutation (a fence raised by a Begin that was never anchored does not
//     show that the store kept that mutation); else the anchored pending mutation must be Prior's (same
//     fence, root, segment and payload) and Next Prior without it (same
//     fence, root and last segment, the anchored pause kept): ANCHORED, a
//     without its pending mutation; otherwise CONFLICT, a unchanged.
//   - PAUSE: always ANCHORED: Next when it covers a (not through a higher
//     fence while a holds a pending mutation, as for SETTLE), else a with
//     Next's pause (a store behind its anchor still gets its pause
//     anchored).
//   - RESUME: always ANCHORED: a without its pause.
func AnchorStep(a fencegate.Progress, it fencegate.AnchorItem) (fencegate.AnchorOutcome, fencegate.Progress) {
	switch it.Op {
	case fencegate.AnchorBegin:
		if !it.Prior.Covers(a) {
			return fencegate.AnchorLoss, a
		}
		if !it.Next.Covers(a) {
			return fencegate.AnchorConflict, a
		}
		return fencegate.AnchorAnchored, clonedProgress(it.Next)
	case fencegate.AnchorSeed:
		if !it.Next.Covers(a) {
			return fencegate.AnchorLoss, a
		}
		return fencegate.AnchorAnchored, clonedProgress(it.Next)
	case fencegate.AnchorSettle:
		// A higher fence in Next does not settle an anchored pending
		// mutation: the store raised the fence in a Begin that was never
		// anchored (its sidecar died or the registry failed before the
		// answer), and the record that Begin read may have lost that very
		// mutation; only its own SETTLE, or a record showing it committed
		// (a SEED), drops it.
		if it.Next.Covers(a) && (a.Pending == nil || it.Next.Fence == a.Fence) {
			return fencegate.AnchorAnchored, clonedProgress(it.Next)
		}
		p, n := it.Prior, it.Next
		if a.Pending == nil || p.Pending == nil || p.Fence != a.Fence || p.Root != a.Root ||
			p.Pending.Seq != a.Pending.Seq || p.Pending.PayloadDigest != a.Pending.PayloadDigest {
			return fencegate.AnchorConflict, a
		}
		if n.Pending != nil || n.Fence != a.Fence || n.Root != a.Root || n.LastSeq != a.LastSeq || a.Paused != "" && n.Paused == "" {
			return fencegate.AnchorConflict, a
		}
		out := clonedProgress(a)
		out.Pending = nil
		if n.Paused != "" {
			out.Paused = n.Paused
		}
		return fencegate.AnchorAnchored, out
	case fencegate.AnchorPause:
		// As for SETTLE: a higher fence in Next never replaces an
		// anchored pending mutation; the pause is added to a.
		if it.Next.Covers(a) && (a.Pending == nil || it.Next.Fence == a.Fence) {
			return fencegate.AnchorAnchored, clonedProgress(it.Next)
		}
		out := clonedProgress(a)
		out.Paused = it.Next.Paused
		return fencegate.AnchorAnchored, out
	case fencegate.AnchorResume:
		out := clonedProgress(a)
		out.Paused = ""
		return fencegate.AnchorAnchored, out
	}
	// Unreachable for a validated item: refuse, change nothing.
	return fencegate.AnchorConflict, a
}

// SameProgress reports whether two progress values are equal (their
// pending mutations compared by value).
func SameProgress(a, b fencegate.Progress) bool {
	pa, pb := a.Pending, b.Pending
	a.Pending, b.Pending = nil, nil
	if a != b || (pa == nil) != (pb == nil) {
		return false
	}
	return pa == nil || *pa == *pb
}

// clonedProgress is p with its own copy of the pending mutation.
func clonedProgress(p fencegate.Progress) fencegate.Progress {
	if p.Pending != nil {
		op := *p.Pending
		p.Pending = &op
	}
	return p
}

// lossDetail describes a LOSS for the store's LastLoss.
func lossDetail(it fencegate.AnchorItem, a fencegate.Progress) string {
	side, p := "prior", it.Prior
	if it.Op == fencegate.AnchorSeed {
		side, p = "next", it.Next
	}
	return fmt.Sprintf("%s of %s: the store's %s record (%s) does not cover the anchor (%s)", it.Op, it.Resource, side, progressSummary(p), progressSummary(a))
}

func progressSummary(p fencegate.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fence %d, lastSeq %d", p.Fence, p.LastSeq)
	if p.Pending != nil {
		fmt.Fprintf(&b, ", pending segment %d", p.Pending.Seq)
	}
	if p.Paused != "" {
		fmt.Fprintf(&b, ", paused %s", p.Paused)
	}
	return b.String()
}

// DecideLedger records one event of a store's enforcement ledger, as the
// store's own ledger does (store.DecideEnforcement): ENFORCE of a shape not
// enforced now sets EnforcedSince and appends an event; FORCED_DOWNGRADE of
// an enforced shape clears it and appends an event; anything else changes
// nothing (so replicas recording the same event record it once). An entry
// keeps its newest fencegate.MaxLedgerHistory events; a ledger holds at
// most fencegate.MaxLedgerShapes shapes. The store must be registered.
func DecideLedger(snap StoreSnapshot, in LedgerInput) (StoreView, Change, error) {
	if err := validateStoreCaller(in.Store, in.Caller); err != nil {
		return StoreView{}, Change{}, err
	}
	if err := in.Event.Validate(); err != nil {
		return StoreView{}, Change{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := validNow(in.Now); err != nil {
		return StoreView{}, Change{}, err
	}
	if err := snap.authorize(in.Store, in.Caller); err != nil {
		return StoreView{}, Change{}, err
	}
	rec, err := snap.registered(in.Store)
	if err != nil {
		return StoreView{}, Change{}, err
	}
	lineage, meta, err := snap.lineage(in.Lineage)
	if err != nil {
		return StoreView{}, Change{}, err
	}
	ledger, changed, err := ApplyLedger(snap.Ledger, in.Event, in.Now)
	if err != nil {
		return StoreView{}, Change{}, err
	}
	ch := Change{Meta: meta}
	if changed {
		ch.Ledger = &LedgerRecord{Store: in.Store, Entries: ledger}
	}
	return snap.view(&rec, lineage, ledger), ch, nil
}

// ApplyLedger is the ledger rule of DecideLedger over a ledger (in shape
// order): the ledger after ev at now (a fresh copy, in shape order) and
// whether it changed.
func ApplyLedger(ledger []fencegate.LedgerEntry, ev fencegate.LedgerBody, now time.Time) ([]fencegate.LedgerEntry, bool, error) {
	out := make([]fencegate.LedgerEntry, len(ledger))
	for i, e := range ledger {
		out[i] = e
		out[i].History = slices.Clone(e.History)
	}
	i, found := slices.BinarySearchFunc(out, ev.Shape, func(e fencegate.LedgerEntry, s string) int { return strings.Compare(e.Shape, s) })
	at := max(ms(now), 1) // 0 reads as "not enforced"
	var e fencegate.LedgerEntry
	if found {
		e = out[i]
	} else {
		e = fencegate.LedgerEntry{Shape: ev.Shape}
	}
	switch {
	case ev.Kind == fencegate.LedgerEnforce && e.EnforcedSince == 0:
		e.EnforcedSince = at
	case ev.Kind == fencegate.LedgerForcedDowngrade && e.EnforcedSince != 0:
		e.EnforcedSince = 0
	default:
		return out, false, nil
	}
	if len(e.History) >= fencegate.MaxLedgerHistory {
		e.History = slices.Clone(e.History[len(e.History)-fencegate.MaxLedgerHistory+1:])
	}
	e.History = append(e.History, fencegate.LedgerEvent{At: at, Kind: ev.Kind, Detail: ev.Detail})
	if found {
		out[i] = e
		return out, true, nil
	}
	if len(out) >= fencegate.MaxLedgerShapes {
		return nil, false, fmt.Errorf("%w: the ledger already holds %d shapes (at most %d)", ErrInvalidInput, len(out), fencegate.MaxLedgerShapes)
	}
	return slices.Insert(out, i, e), true, nil
}

// DecideAcknowledge adopts in.Generation as the store's generation after a
// loss (admin; no policy check): the loss is counted as acknowledged and
// the store's anchors and ledger stay, for every sidecar to repair its
// store from. The generation already anchored changes nothing; a store
// never registered is ErrNotFound; a generation the store's registrations
// did not present (its Presented) is a *NotPresentedError, nothing
// changed: a store that reported no loss (a typo, the wrong store, a
// generation read before another loss) must not be switched to a
// generation no sidecar of it holds, which would refuse all its writes.
func DecideAcknowledge(snap StoreSnapshot, in AcknowledgeInput) (AcknowledgeResult, Change, error) {
	if err := fencegate.ValidateStoreName(in.Store); err != nil {
		return AcknowledgeResult{}, Change{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := fencegate.ValidateGeneration(in.Generation); err != nil {
		return AcknowledgeResult{}, Change{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := validNow(in.Now); err != nil {
		return AcknowledgeResult{}, Change{}, err
	}
	if snap.Store != nil && snap.Store.Store != in.Store {
		return AcknowledgeResult{}, Change{}, fmt.Errorf("%w: record of store %q read for %q", ErrBackend, snap.Store.Store, in.Store)
	}
	rec, err := snap.registered(in.Store)
	if err != nil {
		return AcknowledgeResult{}, Change{}, err
	}
	lineage, meta, err := snap.lineage(in.Lineage)
	if err != nil {
		return AcknowledgeResult{}, Change{}, err
	}
	if rec.Generation != in.Generation && rec.Presented != in.Generation {
		return AcknowledgeResult{}, Change{}, &NotPresentedError{Store: in.Store, Generation: in.Generation, Anchored: rec.Generation, Presented: rec.Presented}
	}
	ch := Change{Meta: meta}
	res := AcknowledgeResult{Previous: rec.Generation}
	if rec.Generation != in.Generation {
		res.Adopted = true
		rec.Generation = in.Generation
		rec.Acknowledged++
		rec.AcknowledgedAt = ms(in.Now)
		rec.Presented = ""
		out := rec
		ch.Store = &out
	}
	res.View = snap.view(&rec, lineage, snap.Ledger)
	return res, ch, nil
}

// DecideStore reads a store: its record (zero Generation when never
// registered), ledger and count of anchored resources.
func DecideStore(snap StoreSnapshot, q StoreQuery) (StoreView, error) {
	if err := validateStoreCaller(q.Store, q.Caller); err != nil {
		return StoreView{}, err
	}
	if err := snap.authorize(q.Store, q.Caller); err != nil {
		return StoreView{}, err
	}
	v := snap.view(snap.Store, snap.Meta.Lineage, snap.Ledger)
	v.Record.Store = q.Store
	return v, nil
}

// Validate checks an anchors query: a valid store and caller, After empty
// or a valid resource, Limit in 0..fencegate.MaxAnchorPage.
func (q AnchorsQuery) Validate() error {
	if err := validateStoreCaller(q.Store, q.Caller); err != nil {
		return err
	}
	if q.After != "" {
		if err := ValidateResource(q.After); err != nil {
			return fmt.Errorf("after: %w", err)
		}
	}
	if q.Limit < 0 || q.Limit > fencegate.MaxAnchorPage {
		return fmt.Errorf("%w: limit %d (want 1 to %d, 0 for %d)", ErrInvalidInput, q.Limit, fencegate.MaxAnchorPage, fencegate.DefaultAnchorPage)
	}
	return nil
}

// PageLimit is the limit a query asks for (its default applied).
func (q AnchorsQuery) PageLimit() int {
	if q.Limit == 0 {
		return fencegate.DefaultAnchorPage
	}
	return q.Limit
}

// DecideAnchors is a page of a store's anchors: the rows after q.After (in
// resource order, as read), at most the query's limit, with Next set to
// the page's last resource when more follow.
func DecideAnchors(snap AnchorsSnapshot, q AnchorsQuery) (fencegate.AnchorPage, error) {
	if err := q.Validate(); err != nil {
		return fencegate.AnchorPage{}, err
	}
	if err := snap.authorize(q.Store, q.Caller); err != nil {
		return fencegate.AnchorPage{}, err
	}
	limit := q.PageLimit()
	rows := snap.Rows
	for i, r := range rows {
		if r.Resource <= q.After && q.After != "" || i > 0 && r.Resource <= rows[i-1].Resource {
			return fencegate.AnchorPage{}, fmt.Errorf("%w: anchors of %s read out of order after %q", ErrBackend, q.Store, q.After)
		}
	}
	page := fencegate.AnchorPage{Lineage: snap.Meta.Lineage, Anchors: []fencegate.ResourceAnchor{}}
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[len(rows)-1].Resource
	}
	for _, r := range rows {
		page.Anchors = append(page.Anchors, fencegate.ResourceAnchor{Resource: r.Resource, Anchored: clonedProgress(r.Anchored)})
	}
	return page, nil
}
