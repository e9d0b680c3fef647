package registry

import (
	"time"

	"github.com/fencegate/fencegate"
)

// The outside anchor of fenced stores (anchor.go of the root package,
// docs/design.md "The store's anchor"): per fenced store a StoreRecord
// (its generation, loss and acknowledgement counters) and its enforcement
// ledger, and per (store, resource) the anchored fencegate.Progress that
// every copy of the store must cover. These are the registry's records and
// the inputs, snapshots and results of their decisions
// (decide_anchor.go).
//
// Anchor writes are not registry writes a grant or a proof can state: they
// never count in Meta.Revision and never write the meta (except, once, the
// lineage of a data set that has none), so they do not conflict with
// lease writes, nor lease writes with them.

// StoreRecord is the registry's record of one fenced store (JSON in every
// backend).
type StoreRecord struct {
	Store string `json:"store"`
	// Generation is the anchored generation; the first registration sets
	// it, an acknowledgement replaces it.
	Generation string `json:"generation"`
	// RegisteredAt is when the first registration anchored a generation
	// (Unix ms).
	RegisteredAt int64 `json:"registeredAt"`
	// Losses counts anchor steps answered LOSS and registrations that
	// presented another generation (once per generation presented);
	// LastLoss describes the latest, at LastLossAt (Unix ms).
	Losses     uint64 `json:"losses,omitempty"`
	LastLoss   string `json:"lastLoss,omitempty"`
	LastLossAt int64  `json:"lastLossAt,omitempty"`
	// Presented is the latest other generation a registration presented,
	// cleared when an acknowledgement adopts it.
	Presented string `json:"presented,omitempty"`
	// Acknowledged counts acknowledgements; the latest at AcknowledgedAt.
	Acknowledged   uint64 `json:"acknowledged,omitempty"`
	AcknowledgedAt int64  `json:"acknowledgedAt,omitempty"`
}

// AnchorRecord is the anchored progress of one resource of a store.
type AnchorRecord struct {
	Store    string
	Resource string
	Progress fencegate.Progress
}

// LedgerRecord is a store's enforcement ledger, in shape order.
type LedgerRecord struct {
	Store   string
	Entries []fencegate.LedgerEntry
}

// StoreView is a store as one read found it.
type StoreView struct {
	// Record is the store's record; a zero Generation means the store was
	// never registered.
	Record StoreRecord
	// Lineage is the registry's issuer lineage at the read.
	Lineage string
	// Resources counts the resources anchored.
	Resources uint64
	// Ledger is the store's enforcement ledger (nil where the operation
	// did not read it).
	Ledger []fencegate.LedgerEntry
	// Now is the registry's clock when the Registry answered (zero from a
	// Backend, which reads no clock).
	Now time.Time
}

// Wire is the view's wire form, fencegate.StoreAnchor, as the registry's
// HTTP API answers it (registry/httpapi) and as store/anchor hands it on
// when it calls a Registry in process: Now in Unix milliseconds, 0 for the
// zero time.
func (v StoreView) Wire() fencegate.StoreAnchor {
	r := v.Record
	var now int64
	if !v.Now.IsZero() {
		now = v.Now.UnixMilli()
	}
	return fencegate.StoreAnchor{
		Store: r.Store, Generation: r.Generation, Lineage: v.Lineage, RegisteredAt: r.RegisteredAt,
		Resources: v.Resources, Losses: r.Losses, LastLoss: r.LastLoss, LastLossAt: r.LastLossAt,
		Presented: r.Presented, Acknowledged: r.Acknowledged, AcknowledgedAt: r.AcknowledgedAt,
		Ledger: v.Ledger, Now: now,
	}
}

// RegisterStoreInput registers a store's generation: a sidecar opening its
// store. Caller is the caller's identity (the policy of
// fencegate.StoreResource(Store) must allow it). Lineage is a fresh random
// lineage, the meta's when it has none yet.
type RegisterStoreInput struct {
	Store      string
	Caller     string
	Generation string
	Lineage    string
	Now        time.Time
}

// RegisterStoreResult is the answer of a registration. At most one of
// Created and Lost is true; neither means the generation matched.
type RegisterStoreResult struct {
	View StoreView
	// Created: the registry held no generation; this one is now anchored.
	Created bool
	// Lost: another generation is anchored: the store lost its data or is
	// another data set (STORE_LOST). The registration is recorded
	// (Presented, Losses) and nothing else changed.
	Lost bool
}

// AnchorInput is one batch of anchor steps of a store.
type AnchorInput struct {
	Store   string
	Caller  string
	Request fencegate.AnchorRequest
	Lineage string
	Now     time.Time
}

// LedgerInput records one ledger event of a store.
type LedgerInput struct {
	Store   string
	Caller  string
	Event   fencegate.LedgerBody
	Lineage string
	Now     time.Time
}

// AcknowledgeInput adopts Generation as a store's generation after a loss
// (admin).
type AcknowledgeInput struct {
	Store      string
	Generation string
	Lineage    string
	Now        time.Time
}

// AcknowledgeResult is the answer of an acknowledgement.
type AcknowledgeResult struct {
	View StoreView
	// Adopted: the generation was not the anchored one and is now;
	// Previous is the one it replaced. An acknowledgement of the anchored
	// generation adopts nothing (a retry).
	Adopted  bool
	Previous string
}

// StoreQuery reads a store's record and ledger.
type StoreQuery struct {
	Store  string
	Caller string
}

// AnchorsQuery lists a store's anchors in resource (byte) order after
// After, at most Limit (0: fencegate.DefaultAnchorPage).
type AnchorsQuery struct {
	Store  string
	Caller string
	After  string
	Limit  int
}

// StoreSnapshot is what the store decisions read: the meta (only its
// lineage is used; a backend may load just that when the lineage is set,
// since it never changes, and must load the whole meta when it is empty,
// for the decision writes it once), the policy matching the store's
// resource (fencegate.StoreResource), the store's record (nil when none
// is stored) and, for the operations that answer it, its ledger and the
// number of resources anchored.
type StoreSnapshot struct {
	Meta      Meta
	Policy    fencegate.Policy
	Store     *StoreRecord
	Ledger    []fencegate.LedgerEntry
	Resources uint64
}

// AnchorSnapshot is what DecideAnchor reads: the store (no ledger, no
// count) and the stored anchor of every resource the batch names (absent:
// nothing anchored).
type AnchorSnapshot struct {
	StoreSnapshot
	Anchors map[string]fencegate.Progress
}

// AnchorsSnapshot is what DecideAnchors reads: the store and the anchors
// after the query's After, in resource order, at most Limit+1 of them (one
// more than a page, to tell whether more follow).
type AnchorsSnapshot struct {
	StoreSnapshot
	Rows []fencegate.ResourceAnchor
}
