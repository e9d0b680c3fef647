package storetest

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
)

const shape = "PUT /v1/items/{}"

// runEnforcement checks the enforcement ledger: RecordEnforcement and
// Enforcements.
func runEnforcement(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"EmptyLedger", func(f *fixture) {
			f.check(len(f.ledger()) == 0, "ledger of a new store: %+v", f.ledger())
		}},
		{"EnforceIsIdempotent", func(f *fixture) {
			e := f.enforce(shape, store.EnforcementEnforce, "config v1", T0)
			want := store.Enforcement{Shape: shape, EnforcedSince: T0,
				History: []store.EnforcementEvent{{At: T0, Kind: store.EnforcementEnforce, Detail: "config v1"}}}
			f.check(reflect.DeepEqual(e, want), "first ENFORCE returned %+v, want %+v", e, want)
			again := f.enforce(shape, store.EnforcementEnforce, "config v2", T0.Add(time.Hour))
			f.check(reflect.DeepEqual(again, want), "repeated ENFORCE returned %+v, want %+v", again, want)
			got := f.ledger()
			f.check(len(got) == 1 && reflect.DeepEqual(got[0], want), "ledger %+v, want [%+v]", got, want)
		}},
		{"DowngradeThenReenforce", func(f *fixture) {
			t1, t2, t3 := T0, T0.Add(time.Hour), T0.Add(2*time.Hour)
			f.enforce(shape, store.EnforcementEnforce, "", t1)
			down := f.enforce(shape, store.EnforcementForcedDowngrade, "to shadow", t2)
			f.check(!down.Enforced() && len(down.History) == 2, "after downgrade: %+v", down)
			again := f.enforce(shape, store.EnforcementForcedDowngrade, "to off", t2.Add(time.Minute))
			f.check(reflect.DeepEqual(again, down), "downgrade of a shape not enforced changed it: %+v", again)
			up := f.enforce(shape, store.EnforcementEnforce, "", t3)
			want := store.Enforcement{Shape: shape, EnforcedSince: t3, History: []store.EnforcementEvent{
				{At: t1, Kind: store.EnforcementEnforce},
				{At: t2, Kind: store.EnforcementForcedDowngrade, Detail: "to shadow"},
				{At: t3, Kind: store.EnforcementEnforce},
			}}
			f.check(reflect.DeepEqual(up, want), "re-enforced: %+v, want %+v", up, want)
			got := f.ledger()
			f.check(len(got) == 1 && reflect.DeepEqual(got[0], want), "ledger %+v", got)
		}},
		{"DowngradeOfUnknownShapeWritesNothing", func(f *fixture) {
			e := f.enforce(shape, store.EnforcementForcedDowngrade, "to off", T0)
			f.check(reflect.DeepEqual(e, store.Enforcement{Shape: shape}), "returned %+v", e)
			f.check(len(f.ledger()) == 0, "ledger %+v", f.ledger())
		}},
		{"HistoryKeepsNewest", func(f *fixture) {
			const n = store.MaxEnforcementHistory + 37
			for i := range n {
				kind := store.EnforcementEnforce
				if i%2 == 1 {
					kind = store.EnforcementForcedDowngrade
				}
				f.enforce(shape, kind, "event "+strconv.Itoa(i), T0.Add(time.Duration(i)*time.Minute))
			}
			e := f.ledger()[0]
			f.check(len(e.History) == store.MaxEnforcementHistory, "%d events kept, want %d", len(e.History), store.MaxEnforcementHistory)
			for j, ev := range e.History {
				i := n - store.MaxEnforcementHistory + j
				f.check(ev.Detail == "event "+strconv.Itoa(i) && ev.At.Equal(T0.Add(time.Duration(i)*time.Minute)),
					"event %d is %+v, want event %d", j, ev, i)
			}
			// n is odd: the last event (index n-1, even) is an ENFORCE.
			f.check(e.EnforcedSince.Equal(T0.Add(time.Duration(n-1)*time.Minute)), "enforced since %v", e.EnforcedSince)
		}},
		{"ByShape", func(f *fixture) {
			shapes := []string{"PUT /v1/items/{}", "DELETE /v1/items/{}", "POST /v1/items", "PATCH /v1/items/{}/tags/{}"}
			for i, s := range shapes {
				f.enforce(s, store.EnforcementEnforce, "", T0.Add(time.Duration(i)*time.Second))
			}
			got := f.ledger()
			var names []string
			for _, e := range got {
				names = append(names, e.Shape)
			}
			want := []string{"DELETE /v1/items/{}", "PATCH /v1/items/{}/tags/{}", "POST /v1/items", "PUT /v1/items/{}"}
			f.check(reflect.DeepEqual(names, want), "shapes %q, want %q", names, want)
		}},
		{"BadInputWritesNothing", func(f *fixture) {
			ok := store.EnforcementInput{Shape: shape, Kind: store.EnforcementEnforce, Now: T0}
			bad := map[string]func(*store.EnforcementInput){
				"empty shape":        func(in *store.EnforcementInput) { in.Shape = "" },
				"oversized shape":    func(in *store.EnforcementInput) { in.Shape = "PUT /" + strings.Repeat("a", store.MaxShapeLen) },
				"newline in shape":   func(in *store.EnforcementInput) { in.Shape = "PUT /a\nPUT /b" },
				"NUL in shape":       func(in *store.EnforcementInput) { in.Shape = "PUT /a\x00" },
				"invalid UTF-8":      func(in *store.EnforcementInput) { in.Shape = "PUT /\xff" },
				"unknown kind":       func(in *store.EnforcementInput) { in.Kind = "SHADOW" },
				"lowercase kind":     func(in *store.EnforcementInput) { in.Kind = "enforce" },
				"empty kind":         func(in *store.EnforcementInput) { in.Kind = "" },
				"oversized detail":   func(in *store.EnforcementInput) { in.Detail = strings.Repeat("d", store.MaxEnforcementDetailLen+1) },
				"control in detail":  func(in *store.EnforcementInput) { in.Detail = "a\x1bb" },
				"zero now":           func(in *store.EnforcementInput) { in.Now = time.Time{} },
				"downgrade zero now": func(in *store.EnforcementInput) { in.Kind = store.EnforcementForcedDowngrade; in.Now = time.Time{} },
			}
			for name, mutate := range bad {
				in := ok
				mutate(&in)
				_, err := f.s.RecordEnforcement(f.ctx, in)
				if !isInputError(err) {
					f.Errorf("%s: error %v, want an *store.InputError", name, err)
				}
			}
			f.check(len(f.ledger()) == 0, "ledger after bad input: %+v", f.ledger())
			in := ok
			in.Shape = strings.Repeat("s", store.MaxShapeLen)
			in.Detail = strings.Repeat("d", store.MaxEnforcementDetailLen)
			f.enforce(in.Shape, in.Kind, in.Detail, in.Now) // limits are inclusive
		}},
		{"ConcurrentEnforceRecordsOnce", func(f *fixture) {
			const goroutines = 32
			var wg sync.WaitGroup
			errs := make([]error, goroutines)
			for i := range goroutines {
				wg.Go(func() {
					_, errs[i] = f.s.RecordEnforcement(f.ctx, store.EnforcementInput{
						Shape: shape, Kind: store.EnforcementEnforce, Detail: "replica " + strconv.Itoa(i), Now: T0.Add(time.Duration(i) * time.Second)})
				})
			}
			wg.Wait()
			for _, err := range errs {
				f.check(err == nil, "RecordEnforcement: %v", err)
			}
			got := f.ledger()
			f.check(len(got) == 1 && len(got[0].History) == 1 && got[0].History[0].Kind == store.EnforcementEnforce &&
				got[0].EnforcedSince.Equal(got[0].History[0].At), "ledger %+v, want one ENFORCE", got)
		}},
		{"ConcurrentEnforceAndDowngradeStayConsistent", func(f *fixture) {
			// Every call has its own detail: a call changed the entry iff
			// the entry it got back ends with its event.
			const goroutines, calls = 16, 4 // at most 64 events: none dropped
			var wg sync.WaitGroup
			changed := make([][]string, goroutines)
			errs := make([]error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					for c := range calls {
						kind := store.EnforcementEnforce
						if (g+c)%2 == 1 {
							kind = store.EnforcementForcedDowngrade
						}
						detail := "g" + strconv.Itoa(g) + "c" + strconv.Itoa(c)
						e, err := f.s.RecordEnforcement(f.ctx, store.EnforcementInput{Shape: shape, Kind: kind, Detail: detail, Now: T0.Add(time.Duration(g*calls+c) * time.Second)})
						if err != nil {
							errs[g] = err
							return
						}
						if n := len(e.History); n > 0 && e.History[n-1].Detail == detail {
							changed[g] = append(changed[g], detail)
						}
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				f.check(err == nil, "RecordEnforcement: %v", err)
			}
			got := f.ledger()
			f.check(len(got) == 1, "ledger %+v", got)
			e := got[0]
			want := map[string]bool{}
			for _, ds := range changed {
				for _, d := range ds {
					want[d] = true
				}
			}
			f.check(len(e.History) == len(want), "%d events stored, %d calls saw their change", len(e.History), len(want))
			for i, ev := range e.History {
				f.check(want[ev.Detail], "event %+v from a call that did not see its change", ev)
				wantKind := store.EnforcementEnforce
				if i%2 == 1 {
					wantKind = store.EnforcementForcedDowngrade
				}
				f.check(ev.Kind == wantKind, "event %d is %s, want %s: ENFORCE and FORCED_DOWNGRADE must alternate", i, ev.Kind, wantKind)
			}
			last := e.History[len(e.History)-1]
			if last.Kind == store.EnforcementEnforce {
				f.check(e.EnforcedSince.Equal(last.At), "enforced since %v, last event %+v", e.EnforcedSince, last)
			} else {
				f.check(!e.Enforced(), "enforced since %v after %+v", e.EnforcedSince, last)
			}
		}},
	})
}

// runEnforcementReopen checks that the ledger survives a reopen.
func runEnforcementReopen(t *testing.T, newStore Factory, reopen Reopener) {
	f := newFixture(t, newStore(t))
	f.enforce(shape, store.EnforcementEnforce, "", T0)
	f.enforce(shape, store.EnforcementForcedDowngrade, "to shadow", T0.Add(time.Hour))
	f.enforce(shape, store.EnforcementEnforce, "", T0.Add(2*time.Hour))
	f.enforce("POST /v1/items", store.EnforcementEnforce, "", T0)
	before := f.ledger()
	f.s = reopen(t, f.s)
	after := f.ledger()
	f.check(reflect.DeepEqual(after, before), "ledger after reopen\n got %+v\nwant %+v", after, before)
	again := f.enforce(shape, store.EnforcementEnforce, "", T0.Add(3*time.Hour))
	f.check(reflect.DeepEqual(again, before[1]), "ENFORCE after reopen changed %+v to %+v", before[1], again)
}

func (f *fixture) enforce(shape, kind, detail string, now time.Time) store.Enforcement {
	f.Helper()
	e, err := f.s.RecordEnforcement(f.ctx, store.EnforcementInput{Shape: shape, Kind: kind, Detail: detail, Now: now})
	if err != nil {
		f.Fatalf("RecordEnforcement(%q, %s): %v", shape, kind, err)
	}
	return e
}

func (f *fixture) ledger() []store.Enforcement {
	f.Helper()
	es, err := f.s.Enforcements(f.ctx)
	if err != nil {
		f.Fatalf("Enforcements: %v", err)
	}
	return es
}
