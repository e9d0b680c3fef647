package fencegate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

var (
	payA = "sha256:" + strings.Repeat("a", 64)
	payB = "sha256:" + strings.Repeat("b", 64)
)

// prog is a Progress at fence f, root r, last segment last, with segment
// last+1 pending (payload pay) when pay is not "".
func prog(f uint64, r string, last uint64, pay string) fencegate.Progress {
	p := fencegate.Progress{Fence: f, Root: r, LastSeq: last}
	if f == 0 {
		return fencegate.Progress{}
	}
	if pay != "" {
		p.Pending = &fencegate.PendingOp{Seq: last + 1, PayloadDigest: pay}
	}
	return p
}

// attempts sets the attempt count of p's pending mutation.
func attempts(p fencegate.Progress, n uint32) fencegate.Progress {
	op := *p.Pending
	op.Attempts = n
	p.Pending = &op
	return p
}

func TestProgressCovers(t *testing.T) {
	paused := func(p fencegate.Progress) fencegate.Progress { p.Paused = "FENCE_REGRESSION"; return p }
	cases := []struct {
		name   string
		store  fencegate.Progress
		anchor fencegate.Progress
		want   bool
	}{
		{"nothing anchored, empty store", prog(0, "", 0, ""), prog(0, "", 0, ""), true},
		{"nothing anchored, any store", prog(3, "r3", 2, ""), prog(0, "", 0, ""), true},
		{"empty store, fence anchored", prog(0, "", 0, ""), prog(1, "r1", 0, payA), false},
		{"same state", prog(2, "r2", 4, payA), prog(2, "r2", 4, payA), true},
		{"pending committed", prog(2, "r2", 5, ""), prog(2, "r2", 4, payA), true},
		{"pending committed and more", prog(2, "r2", 9, payB), prog(2, "r2", 4, payA), true},
		{"pending lost (restored before Begin)", prog(2, "r2", 4, ""), prog(2, "r2", 4, payA), false},
		{"pending replaced by another payload", prog(2, "r2", 4, payB), prog(2, "r2", 4, payA), false},
		{"committed segment lost", prog(2, "r2", 3, ""), prog(2, "r2", 4, ""), false},
		{"settled anchor, store there", prog(2, "r2", 4, ""), prog(2, "r2", 4, ""), true},
		{"settled anchor, store pending next", prog(2, "r2", 4, payA), prog(2, "r2", 4, ""), true},
		{"higher fence in store", prog(5, "r5", 0, payA), prog(2, "r2", 4, payA), true},
		{"lower fence in store", prog(1, "r1", 7, ""), prog(2, "r2", 0, payA), false},
		{"same fence, other root", prog(2, "rX", 9, ""), prog(2, "r2", 0, payA), false},
		{"a later attempt's Begin lost", attempts(prog(2, "r2", 4, payA), 1), attempts(prog(2, "r2", 4, payA), 2), false},
		{"as many attempts as anchored", attempts(prog(2, "r2", 4, payA), 2), attempts(prog(2, "r2", 4, payA), 2), true},
		{"more attempts than anchored", attempts(prog(2, "r2", 4, payA), 3), attempts(prog(2, "r2", 4, payA), 2), true},
		{"anchor of an earlier version (no count)", attempts(prog(2, "r2", 4, payA), 1), prog(2, "r2", 4, payA), true},
		{"anchored pause lost", prog(2, "r2", 4, ""), paused(prog(2, "r2", 4, "")), false},
		{"anchored pause kept", paused(prog(2, "r2", 4, "")), paused(prog(2, "r2", 4, "")), true},
		{"pause in store only", paused(prog(2, "r2", 4, "")), prog(2, "r2", 4, ""), true},
		{"anchored pause lost with a higher fence", prog(9, "r9", 0, ""), paused(prog(2, "r2", 4, "")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.store.Covers(tc.anchor); got != tc.want {
				t.Fatalf("store %+v covers anchor %+v = %v, want %v", tc.store, tc.anchor, got, tc.want)
			}
		})
	}
}

// Covers is a partial order's "at least": every state covers itself, and
// a state that covers a state covering a third covers the third.
func TestProgressCoversIsReflexiveAndTransitive(t *testing.T) {
	var states []fencegate.Progress
	for _, f := range []uint64{0, 1, 2} {
		for _, r := range []string{"ra", "rb"} {
			for _, last := range []uint64{0, 1, 2} {
				for _, pay := range []string{"", payA, payB} {
					for _, pause := range []string{"", "OPERATOR"} {
						p := prog(f, r, last, pay)
						p.Paused = pause
						states = append(states, p)
					}
				}
			}
		}
	}
	for _, a := range states {
		if !a.Covers(a) {
			t.Fatalf("%+v does not cover itself", a)
		}
		for _, b := range states {
			if !a.Covers(b) {
				continue
			}
			for _, c := range states {
				if b.Covers(c) && !a.Covers(c) {
					t.Fatalf("not transitive: %+v covers %+v covers %+v, but not the first the last", a, b, c)
				}
			}
		}
	}
}

func TestProgressValidate(t *testing.T) {
	ok := []fencegate.Progress{
		{},
		{Paused: "OPERATOR"},
		prog(1, "r1", 0, payA),
		prog(7, "r7", 3, ""),
	}
	for _, p := range ok {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := map[string]fencegate.Progress{
		"fields without a fence": {Root: "r"},
		"no root":                {Fence: 1},
		"pending not next":       {Fence: 1, Root: "r", LastSeq: 2, Pending: &fencegate.PendingOp{Seq: 2, PayloadDigest: payA}},
		"pending bad digest":     {Fence: 1, Root: "r", Pending: &fencegate.PendingOp{Seq: 1, PayloadDigest: "x"}},
		"control char":           {Fence: 1, Root: "r\n"},
		"seq out of range":       {Fence: 1, Root: "r", LastSeq: fencegate.MaxSeq + 1},
	}
	for name, p := range bad {
		if err := p.Validate(); !errors.Is(err, fencegate.ErrInvalidAnchor) {
			t.Errorf("%s: %+v: got %v, want ErrInvalidAnchor", name, p, err)
		}
	}
}

func TestValidateStoreName(t *testing.T) {
	for _, s := range []string{"billing-api", "a", "svc_1.prod", strings.Repeat("x", fencegate.MaxStoreNameLen)} {
		if err := fencegate.ValidateStoreName(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", ".", "..", "a/b", "a b", "é", strings.Repeat("x", fencegate.MaxStoreNameLen+1)} {
		if err := fencegate.ValidateStoreName(s); !errors.Is(err, fencegate.ErrInvalidAnchor) {
			t.Errorf("%q: got %v, want ErrInvalidAnchor", s, err)
		}
	}
}

// FuzzProgress: any JSON decodes into a Progress that validates or not,
// and Covers never panics on it.
func FuzzProgress(f *testing.F) {
	f.Add([]byte(`{"fence":2,"root":"r","lastSeq":1,"pending":{"seq":2,"payloadDigest":"` + payA + `"}}`))
	f.Add([]byte(`{"fence":0,"paused":"OPERATOR"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p fencegate.Progress
		if json.Unmarshal(b, &p) != nil {
			return
		}
		_ = p.Validate()
		if !p.Covers(p) {
			t.Fatalf("%+v does not cover itself", p)
		}
		_ = p.Covers(fencegate.Progress{Fence: 1, Root: "r"})
	})
}
