package fencegate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

func TestValidateLineage(t *testing.T) {
	for _, s := range []string{"0", "0123456789abcdef0123456789abcdef", strings.Repeat("z", fencegate.MaxLineageLen)} {
		if err := fencegate.ValidateLineage(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "ABC", "a-b", "a b", "é", "a\x00", strings.Repeat("a", fencegate.MaxLineageLen+1)} {
		if err := fencegate.ValidateLineage(s); !errors.Is(err, fencegate.ErrInvalidLineage) {
			t.Errorf("%q: got %v, want ErrInvalidLineage", s, err)
		}
	}
	if err := (fencegate.Progress{Fence: 1, Root: "r", Lineage: "Bad"}).Validate(); !errors.Is(err, fencegate.ErrInvalidAnchor) {
		t.Errorf("progress with a bad lineage: %v", err)
	}
}

func TestAnchorItemValidate(t *testing.T) {
	begin := fencegate.AnchorItem{Resource: "r/1", Op: fencegate.AnchorBegin, Prior: prog(2, "r2", 4, ""), Next: prog(2, "r2", 4, payA)}
	settle := fencegate.AnchorItem{Resource: "r/1", Op: fencegate.AnchorSettle, Prior: prog(2, "r2", 4, payA), Next: prog(2, "r2", 4, "")}
	pause := fencegate.AnchorItem{Resource: "r/1", Op: fencegate.AnchorPause, Next: fencegate.Progress{Paused: "OPERATOR"}}
	for _, it := range []fencegate.AnchorItem{begin, settle, pause,
		{Resource: "r/1", Op: fencegate.AnchorResume},
		{Resource: "r/1", Op: fencegate.AnchorSeed, Next: prog(9, "r9", 1, payB)},
	} {
		if err := it.Validate(); err != nil {
			t.Errorf("%+v: %v", it, err)
		}
	}
	with := func(it fencegate.AnchorItem, f func(*fencegate.AnchorItem)) fencegate.AnchorItem { f(&it); return it }
	bad := map[string]fencegate.AnchorItem{
		"bad resource":         with(begin, func(it *fencegate.AnchorItem) { it.Resource = "../x" }),
		"unknown op":           with(begin, func(it *fencegate.AnchorItem) { it.Op = "begin" }),
		"empty op":             with(begin, func(it *fencegate.AnchorItem) { it.Op = "" }),
		"begin without op":     with(begin, func(it *fencegate.AnchorItem) { it.Next.Pending = nil }),
		"settle nothing":       with(settle, func(it *fencegate.AnchorItem) { it.Prior.Pending = nil }),
		"settle keeps pending": with(settle, func(it *fencegate.AnchorItem) { it.Next = it.Prior }),
		"pause not paused":     with(pause, func(it *fencegate.AnchorItem) { it.Next.Paused = "" }),
		"invalid prior":        with(begin, func(it *fencegate.AnchorItem) { it.Prior.Root = "" }),
		"invalid next":         with(begin, func(it *fencegate.AnchorItem) { it.Next.LastSeq = 9 }),
	}
	for name, it := range bad {
		if err := it.Validate(); !errors.Is(err, fencegate.ErrInvalidAnchor) {
			t.Errorf("%s: got %v, want ErrInvalidAnchor", name, err)
		}
	}
}

func TestAnchorRequestValidate(t *testing.T) {
	item := fencegate.AnchorItem{Resource: "r/1", Op: fencegate.AnchorSeed, Next: prog(1, "r1", 0, "")}
	ok := fencegate.AnchorRequest{Generation: "gen-1", Items: []fencegate.AnchorItem{item, item}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	many := make([]fencegate.AnchorItem, fencegate.MaxAnchorBatch+1)
	for i := range many {
		many[i] = item
	}
	for name, r := range map[string]fencegate.AnchorRequest{
		"no generation":    {Items: ok.Items},
		"generation ctl":   {Generation: "g\n", Items: ok.Items},
		"long generation":  {Generation: strings.Repeat("g", fencegate.MaxGenerationLen+1), Items: ok.Items},
		"no items":         {Generation: "g"},
		"too many items":   {Generation: "g", Items: many},
		"one invalid item": {Generation: "g", Items: []fencegate.AnchorItem{item, {Resource: "r/1", Op: "NOPE"}}},
	} {
		if err := r.Validate(); !errors.Is(err, fencegate.ErrInvalidAnchor) {
			t.Errorf("%s: got %v, want ErrInvalidAnchor", name, err)
		}
	}
	if err := (fencegate.AnchorRequest{Generation: "g", Items: many[:fencegate.MaxAnchorBatch]}).Validate(); err != nil {
		t.Errorf("a full batch: %v", err)
	}
}

func TestLedgerBodyValidate(t *testing.T) {
	for _, b := range []fencegate.LedgerBody{
		{Shape: "PUT /v1/items/{}", Kind: fencegate.LedgerEnforce},
		{Shape: "PUT /v1/items/{}", Kind: fencegate.LedgerForcedDowngrade, Detail: "to shadow"},
	} {
		if err := b.Validate(); err != nil {
			t.Errorf("%+v: %v", b, err)
		}
	}
	for name, b := range map[string]fencegate.LedgerBody{
		"no shape":     {Kind: fencegate.LedgerEnforce},
		"long shape":   {Shape: strings.Repeat("x", fencegate.MaxShapeLen+1), Kind: fencegate.LedgerEnforce},
		"shape ctl":    {Shape: "PUT /\x00", Kind: fencegate.LedgerEnforce},
		"unknown kind": {Shape: "PUT /x", Kind: "SHADOW"},
		"long detail":  {Shape: "PUT /x", Kind: fencegate.LedgerEnforce, Detail: strings.Repeat("d", fencegate.MaxLedgerDetailLen+1)},
	} {
		if err := b.Validate(); !errors.Is(err, fencegate.ErrInvalidAnchor) {
			t.Errorf("%s: got %v, want ErrInvalidAnchor", name, err)
		}
	}
}

// TestMaxAnchorBatchFitsBody: a batch of MaxAnchorBatch items of the
// largest valid shape (every text field at its limit) encodes within
// MaxAnchorBodyBytes, so the registry's body limit never refuses a valid
// batch.
func TestMaxAnchorBatchFitsBody(t *testing.T) {
	big := fencegate.Progress{
		Fence: ^uint64(0), Root: strings.Repeat("r", fencegate.MaxRootLen), Lineage: strings.Repeat("l", fencegate.MaxLineageLen),
		Lease: strings.Repeat("e", 256), GrantDigest: strings.Repeat("g", 80), IssuerEpoch: ^uint64(0), BackendRevision: ^uint64(0),
		LastSeq: fencegate.MaxSeq - 1, Paused: strings.Repeat("p", 64),
		Pending: &fencegate.PendingOp{Seq: fencegate.MaxSeq, PayloadDigest: payA, Owner: strings.Repeat("\u2028", 1024/3)},
	}
	if err := big.Validate(); err != nil {
		t.Fatalf("the largest progress does not validate: %v", err)
	}
	it := fencegate.AnchorItem{Resource: strings.Repeat("a", fencegate.MaxResourceLen), Op: fencegate.AnchorBegin, Prior: big, Next: big}
	req := fencegate.AnchorRequest{Generation: strings.Repeat("\u2028", fencegate.MaxGenerationLen/3), Items: make([]fencegate.AnchorItem, fencegate.MaxAnchorBatch)}
	for i := range req.Items {
		req.Items[i] = it
	}
	if err := req.Validate(); err != nil {
		t.Fatalf("the largest request does not validate: %v", err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > fencegate.MaxAnchorBodyBytes {
		t.Fatalf("the largest valid batch is %d bytes, above MaxAnchorBodyBytes %d", len(b), fencegate.MaxAnchorBodyBytes)
	}
	t.Logf("largest valid batch: %d bytes of %d", len(b), fencegate.MaxAnchorBodyBytes)
}
