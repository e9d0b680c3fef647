package storetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
)

// runOwner checks that a receipt remembers the owner of the Begin that
// produced it, through Commit and through reconciliation, and that the owner
// is validated like every other input.
func runOwner(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"CommitReceiptHasBeginOwner", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			in.Owner = "spiffe://fencegate.test/ns/batch/sa/invoicer"
			r := f.expect(in, store.DecisionProceed)
			f.check(r.Mutation.Owner == in.Owner && f.record(res).InFlight.Owner == in.Owner, "marker %+v", r.Mutation)
			rc := f.commit(in.Ref())
			f.check(rc.Owner == in.Owner, "committed receipt owned by %q, want %q", rc.Owner, in.Owner)
			got, err := f.s.Receipt(f.ctx, rc.Key())
			f.check(err == nil && got.Owner == in.Owner && reflect.DeepEqual(got, rc), "stored receipt %+v, %v", got, err)
			byOp, err := f.s.ReceiptsByOperation(f.ctx, res, in.Ref().OperationID())
			f.check(err == nil && len(byOp) == 1 && byOp[0].Owner == in.Owner, "by operation %+v, %v", byOp, err)
			// A replay, even with another owner's identity, answers with
			// the receipt as stored: the owner is the one that began it.
			again := in
			again.Owner = "someone-else"
			rep := f.expect(again, store.DecisionReplay)
			f.check(rep.Receipt.Owner == in.Owner, "replayed receipt owned by %q", rep.Receipt.Owner)
		}},
		{"ResolveReceiptHasBeginOwner", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			in.Owner = "worker-a"
			f.expect(in, store.DecisionProceed)
			m, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0})
			f.check(err == nil && m.Owner == in.Owner, "unknown marker %+v, %v", m, err)
			us, err := f.s.ListUnknown(f.ctx, T0)
			f.check(err == nil && len(us) == 1 && us[0].Owner == in.Owner, "unknown %+v, %v", us, err)
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Applied: true, Response: store.StoredResponse{Status: 200}, Now: T0.Add(time.Hour)})
			f.check(err == nil && rr.Receipt != nil && rr.Receipt.Source == store.SourceReconciled && rr.Receipt.Owner == in.Owner,
				"reconciled receipt %+v, %v", rr.Receipt, err)
			got, err := f.s.Receipt(f.ctx, rr.Receipt.Key())
			f.check(err == nil && got.Owner == in.Owner, "stored receipt %+v, %v", got, err)
		}},
		{"RetryKeepsFirstOwner", func(f *fixture) {
			// An exact retry of an unknown mutation is the same grant's: the
			// marker, and so the receipt, keep the owner that began it.
			in := Attempt(res, 5, 1, "a")
			in.Owner = "worker-a"
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			retry := in
			retry.RetryUnknown = true
			retry.Owner = "worker-b"
			r := f.expect(retry, store.DecisionProceed)
			f.check(r.Mutation.Owner == in.Owner && r.Mutation.Attempts == 2, "retry marker %+v", r.Mutation)
			rc := f.commit(in.Ref())
			f.check(rc.Owner == in.Owner, "receipt owned by %q", rc.Owner)
		}},
		{"OwnerValidated", func(f *fixture) {
			for name, owner := range map[string]string{
				"empty":        "",
				"oversized":    strings.Repeat("o", store.MaxOwnerLen+1),
				"control":      "worker\na",
				"NUL":          "worker\x00a",
				"invalid UTF8": "worker\xff",
			} {
				in := Attempt(res, 5, 1, "a")
				in.Owner = owner
				_, err := f.s.Begin(f.ctx, in)
				var ie *store.InputError
				if !isInputError(err) || !errors.As(err, &ie) || ie.Field != "owner" {
					f.Fatalf("owner %s: error %v, want an *store.InputError on owner", name, err)
				}
				f.noRecord(res)
			}
			in := Attempt(res, 5, 1, "a")
			in.Owner = strings.Repeat("o", store.MaxOwnerLen)
			rc := f.accept(in)
			f.check(rc.Owner == in.Owner, "receipt owned by %d bytes", len(rc.Owner))
		}},
	})
}
