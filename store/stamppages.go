package store

import "iter"

// PagedStamps is a backend's Tx.Stamps over reads of up to size receipts
// each, so that the caller may write between pages (compaction and
// TrimOldest delete as they walk). page returns the stamps that follow
// the n already yielded, the last of which is last (nil before the first
// page), in ascending (fence, seq) order. A page shorter than size (or
// empty) is the last; a page's error is yielded once and ends the
// sequence, and so does the caller's break, before another page is read.
func PagedStamps(size int, page func(n int, last *ReceiptKey) ([]ReceiptStamp, error)) iter.Seq2[ReceiptStamp, error] {
	return func(yield func(ReceiptStamp, error) bool) {
		var last *ReceiptKey
		for n := 0; ; {
			p, err := page(n, last)
			if err != nil {
				yield(ReceiptStamp{}, err)
				return
			}
			for _, st := range p {
				if !yield(st, nil) {
					return
				}
			}
			if len(p) == 0 || len(p) < size {
				return
			}
			n += len(p)
			last = &p[len(p)-1].Key
		}
	}
}
