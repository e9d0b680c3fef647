package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/store"
)

// pager serves stamps of one resource in pages, recording each call.
type pager struct {
	stamps []store.ReceiptStamp
	failAt int // the call (1-based) that fails; 0: none
	calls  []string
}

var errPage = errors.New("page read failed")

func (p *pager) page(size int) func(int, *store.ReceiptKey) ([]store.ReceiptStamp, error) {
	return func(n int, last *store.ReceiptKey) ([]store.ReceiptStamp, error) {
		after := "first"
		if last != nil {
			after = fmt.Sprintf("%d/%d", last.Fence, last.Seq)
		}
		p.calls = append(p.calls, fmt.Sprintf("%d after %s", n, after))
		if len(p.calls) == p.failAt {
			return nil, errPage
		}
		return p.stamps[n:min(n+size, len(p.stamps))], nil
	}
}

func stampsUpTo(n int) []store.ReceiptStamp {
	out := make([]store.ReceiptStamp, n)
	for i := range out {
		out[i].Key = store.ReceiptKey{Resource: "r", Fence: 1, Seq: uint64(i + 1)}
	}
	return out
}

// TestPagedStamps: every stamp in order across pages, each page asked
// for after the last stamp yielded; a short or empty page ends it; a
// break reads no further page; a page's error is yielded once, last.
func TestPagedStamps(t *testing.T) {
	cases := map[string]struct {
		total, size, failAt, stopAfter int
		wantSeqs                       int
		wantCalls                      []string
		wantErr                        bool
	}{
		"short last page":   {total: 5, size: 2, wantSeqs: 5, wantCalls: []string{"0 after first", "2 after 1/2", "4 after 1/4"}},
		"exact pages":       {total: 4, size: 2, wantSeqs: 4, wantCalls: []string{"0 after first", "2 after 1/2", "4 after 1/4"}},
		"none":              {total: 0, size: 2, wantSeqs: 0, wantCalls: []string{"0 after first"}},
		"break in page one": {total: 5, size: 2, stopAfter: 1, wantSeqs: 1, wantCalls: []string{"0 after first"}},
		"second page fails": {total: 5, size: 2, failAt: 2, wantSeqs: 2, wantCalls: []string{"0 after first", "2 after 1/2"}, wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := &pager{stamps: stampsUpTo(c.total), failAt: c.failAt}
			seqs, errs := 0, 0
			for st, err := range store.PagedStamps(c.size, p.page(c.size)) {
				if err != nil {
					if !errors.Is(err, errPage) {
						t.Fatalf("error %v", err)
					}
					errs++
					continue
				}
				if errs > 0 {
					t.Fatal("a stamp after the error")
				}
				seqs++
				if st.Key.Seq != uint64(seqs) {
					t.Fatalf("stamp %d is seq %d", seqs, st.Key.Seq)
				}
				if seqs == c.stopAfter {
					break
				}
			}
			if seqs != c.wantSeqs || (errs == 1) != c.wantErr || errs > 1 {
				t.Errorf("%d stamps, %d errors; want %d stamps, error %v", seqs, errs, c.wantSeqs, c.wantErr)
			}
			if fmt.Sprint(p.calls) != fmt.Sprint(c.wantCalls) {
				t.Errorf("pages read %v, want %v", p.calls, c.wantCalls)
			}
		})
	}
}
