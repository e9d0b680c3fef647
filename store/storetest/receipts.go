package storetest

import (
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/store"
)

// runReceipts checks ReceiptsOf and ReceiptByID: a resource's receipts in
// (fence, seq) order, paged without a gap or a repeat, each as Receipt
// reads it and none of another resource; every receipt found by its ID
// (past one Tx.Receipts batch too), an unknown ID or another resource's
// NOT_FOUND; bad input refused.
func runReceipts(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"Pages", func(f *fixture) {
			rs := f.acceptN(res, 1, 3)
			rs = append(rs, f.acceptN(res, 2, 2)...)
			f.acceptN(res+"x", 1, 2)
			var got []store.Receipt
			q := store.ReceiptsQuery{Resource: res, Limit: 2}
			for pages := 0; ; pages++ {
				f.check(pages < 10, "paging does not end")
				page, err := f.s.ReceiptsOf(f.ctx, q)
				if err != nil {
					f.Fatal(err)
				}
				got = append(got, page...)
				if len(page) < q.Limit {
					break
				}
				last := page[len(page)-1]
				q.AfterFence, q.AfterSeq = last.Fence, last.Seq
			}
			f.check(len(got) == len(rs), "paged %d receipts, want %d", len(got), len(rs))
			for i := range rs {
				want, err := f.s.Receipt(f.ctx, rs[i].Key())
				f.check(err == nil && reflect.DeepEqual(got[i], want), "receipt %d: paged %+v, stored %+v (%v)", i, got[i], want, err)
			}
			none, err := f.s.ReceiptsOf(f.ctx, store.ReceiptsQuery{Resource: "never/written", Limit: 5})
			f.check(err == nil && len(none) == 0, "receipts of a resource never written: %+v, %v", none, err)
			after, err := f.s.ReceiptsOf(f.ctx, store.ReceiptsQuery{Resource: res, AfterFence: 1, AfterSeq: 9, Limit: 5})
			f.check(err == nil && len(after) == 2 && after[0].Fence == 2, "receipts after fence 1 seq 9: %+v, %v", after, err)
		}},
		{"ByID", func(f *fixture) {
			rs := f.acceptN(res, 1, 2)
			other := f.accept(Attempt(res+"x", 1, 1, "p1"))
			for _, rc := range rs {
				got, err := f.s.ReceiptByID(f.ctx, res, rc.ID)
				f.check(err == nil && reflect.DeepEqual(got, rc), "receipt %s: %+v, %v; want %+v", rc.ID, got, err, rc)
			}
			_, err := f.s.ReceiptByID(f.ctx, res, other.ID)
			f.wantErr(err, store.ErrNotFound)
			_, err = f.s.ReceiptByID(f.ctx, res, "rcpt-00000000000000000000000000000000")
			f.wantErr(err, store.ErrNotFound)
		}},
		{"ByIDPastOneBatch", func(f *fixture) {
			rs := f.acceptN(res, 1, 300)
			for _, i := range []int{0, 255, 256, 299} {
				got, err := f.s.ReceiptByID(f.ctx, res, rs[i].ID)
				f.check(err == nil && reflect.DeepEqual(got, rs[i]), "receipt %d of 300 by ID: %+v, %v", i+1, got, err)
			}
		}},
		{"BadInput", func(f *fixture) {
			for _, q := range []store.ReceiptsQuery{{Resource: res}, {Resource: res, Limit: store.MaxReceiptsLimit + 1}, {Resource: "bad resource", Limit: 1}} {
				_, err := f.s.ReceiptsOf(f.ctx, q)
				f.wantErr(err, store.ErrInvalidInput)
			}
			for _, id := range []string{"", "rcpt-", "rcpt-0000000000000000000000000000000g", "RCPT-00000000000000000000000000000000", "rcpt-000000000000000000000000000000000"} {
				_, err := f.s.ReceiptByID(f.ctx, res, id)
				f.wantErr(err, store.ErrInvalidInput)
			}
			_, err := f.s.ReceiptByID(f.ctx, "", "rcpt-00000000000000000000000000000000")
			f.wantErr(err, store.ErrInvalidInput)
		}},
	})
}
