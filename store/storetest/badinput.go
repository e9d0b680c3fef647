package storetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// runBadInput checks that out-of-range input is refused with an
// *store.InputError and writes nothing.
func runBadInput(t *testing.T, newStore Factory) {
	f := newFixture(t, newStore(t))
	long := func(n int) string { return strings.Repeat("r", n) }
	begins := map[string]func(*store.BeginInput){
		"fence 0":            func(in *store.BeginInput) { in.Fence = 0 },
		"seq 0":              func(in *store.BeginInput) { in.Seq = 0 },
		"seq above MaxSeq":   func(in *store.BeginInput) { in.Seq = fencegate.MaxSeq + 1 },
		"empty resource":     func(in *store.BeginInput) { in.Resource = "" },
		"oversized resource": func(in *store.BeginInput) { in.Resource = long(fencegate.MaxResourceLen + 1) },
		"NUL in resource":    func(in *store.BeginInput) { in.Resource = "a\x00b" },
		// The contract's one resource rule (fencegate.ValidateResource), the
		// registry's: the store used to accept any UTF-8 without controls.
		"space in resource":      func(in *store.BeginInput) { in.Resource = "a b" },
		"non-ASCII resource":     func(in *store.BeginInput) { in.Resource = "caf\u00e9" },
		"empty resource segment": func(in *store.BeginInput) { in.Resource = "a//b" },
		"dot-dot resource":       func(in *store.BeginInput) { in.Resource = "a/../b" },
		"leading slash resource": func(in *store.BeginInput) { in.Resource = "/a" },
		"newline in root":        func(in *store.BeginInput) { in.Root = "a\nb" },
		"invalid UTF-8 root":     func(in *store.BeginInput) { in.Root = "a\xffb" },
		"empty root":             func(in *store.BeginInput) { in.Root = "" },
		"oversized root":         func(in *store.BeginInput) { in.Root = long(fencegate.MaxRootLen + 1) },
		"empty lease":            func(in *store.BeginInput) { in.Lease = "" },
		"oversized lease":        func(in *store.BeginInput) { in.Lease = long(store.MaxLeaseLen + 1) },
		"payload no prefix": func(in *store.BeginInput) {
			in.PayloadDigest = strings.TrimPrefix(in.PayloadDigest, fencegate.DigestPrefix)
		},
		"payload uppercase":  func(in *store.BeginInput) { in.PayloadDigest = strings.ToUpper(in.PayloadDigest) },
		"payload short":      func(in *store.BeginInput) { in.PayloadDigest = in.PayloadDigest[:len(in.PayloadDigest)-1] },
		"payload non-hex":    func(in *store.BeginInput) { in.PayloadDigest = in.PayloadDigest[:len(in.PayloadDigest)-1] + "g" },
		"grant digest empty": func(in *store.BeginInput) { in.GrantDigest = "" },
		"grant md5":          func(in *store.BeginInput) { in.GrantDigest = "md5:" + strings.Repeat("0", 32) },
		"zero now":           func(in *store.BeginInput) { in.Now = time.Time{} },
		"deadline at now":    func(in *store.BeginInput) { in.Deadline = in.Now },
		"deadline too far":   func(in *store.BeginInput) { in.Deadline = in.Now.Add(store.MaxInFlightWindow + time.Second) },
		"quiet at now":       func(in *store.BeginInput) { in.QuietAt = in.Now },
		"quiet before now":   func(in *store.BeginInput) { in.QuietAt = in.Now.Add(-time.Second) },
		"quiet too far":      func(in *store.BeginInput) { in.QuietAt = in.Now.Add(store.MaxInFlightWindow + time.Second) },
		"uppercase lineage":  func(in *store.BeginInput) { in.Evidence.Lineage = "ABC" },
		"oversized lineage":  func(in *store.BeginInput) { in.Evidence.Lineage = strings.Repeat("a", fencegate.MaxLineageLen+1) },
	}
	for name, mutate := range begins {
		t.Run("Begin/"+name, func(t *testing.T) {
			f := newFixture(t, f.s)
			in := Attempt(res, 5, 1, "a")
			mutate(&in)
			_, err := f.s.Begin(f.ctx, in)
			wantInputError(f, err)
			f.noRecord(res)
		})
	}
	t.Run("Begin/limits are inclusive", func(t *testing.T) {
		f := newFixture(t, f.s)
		in := Attempt(long(fencegate.MaxResourceLen), 5, 1, "a")
		in.Root = long(fencegate.MaxRootLen)
		in.Lease = long(store.MaxLeaseLen)
		in.Deadline = in.Now.Add(store.MaxInFlightWindow)
		in.QuietAt = in.Now.Add(store.MaxInFlightWindow)
		f.expect(in, store.DecisionProceed)
		in2 := Attempt("maxseq", 5, fencegate.MaxSeq, "a")
		f.expect(in2, store.DecisionSegmentGap)
	})

	// A mutation in flight that bad Commit/MarkUnknown/Abort/Resolve calls
	// must leave alone.
	const live = "live"
	in := Attempt(live, 5, 1, "a")
	f.expect(in, store.DecisionProceed)
	before := f.record(live)
	tooMany := map[string][]string{}
	for i := 0; i <= store.MaxResponseHeaders; i++ {
		tooMany["X-H"+strconv.Itoa(i)] = []string{"v"}
	}
	commits := map[string]func(*store.CommitInput){
		"status 0":           func(c *store.CommitInput) { c.BackendStatus = 0 },
		"status 600":         func(c *store.CommitInput) { c.BackendStatus = 600 },
		"response status 99": func(c *store.CommitInput) { c.Response.Status = 99 },
		"too many headers":   func(c *store.CommitInput) { c.Response.Header = tooMany },
		"oversized header": func(c *store.CommitInput) {
			c.Response.Header = map[string][]string{"X": {long(store.MaxHeaderValueLen + 1)}}
		},
		"oversized name": func(c *store.CommitInput) {
			c.Response.Header = map[string][]string{long(store.MaxHeaderNameLen + 1): {"v"}}
		},
		"empty header name":    func(c *store.CommitInput) { c.Response.Header = map[string][]string{"": {"v"}} },
		"control in header":    func(c *store.CommitInput) { c.Response.Header = map[string][]string{"X": {"a\r\nb"}} },
		"fence 0":              func(c *store.CommitInput) { c.Fence = 0 },
		"seq 0":                func(c *store.CommitInput) { c.Seq = 0 },
		"empty root":           func(c *store.CommitInput) { c.Root = "" },
		"zero now":             func(c *store.CommitInput) { c.Now = time.Time{} },
		"oversized resource":   func(c *store.CommitInput) { c.Resource = long(fencegate.MaxResourceLen + 1) },
		"control in resource":  func(c *store.CommitInput) { c.Resource = "live\x7f" },
		"empty resource":       func(c *store.CommitInput) { c.Resource = "" },
		"seq above MaxSeq":     func(c *store.CommitInput) { c.Seq = fencegate.MaxSeq + 1 },
		"oversized root":       func(c *store.CommitInput) { c.Root = long(fencegate.MaxRootLen + 1) },
		"invalid UTF-8 header": func(c *store.CommitInput) { c.Response.Header = map[string][]string{"X": {"\xff"}} },
	}
	for name, mutate := range commits {
		t.Run("Commit/"+name, func(t *testing.T) {
			f := newFixture(t, f.s)
			c := Answer(in.Ref())
			mutate(&c)
			_, err := f.s.Commit(f.ctx, c)
			wantInputError(f, err)
			f.unchanged(live, before)
		})
	}
	t.Run("Other", func(t *testing.T) {
		f := newFixture(t, f.s)
		ref := in.Ref()
		calls := map[string]func() error{
			"MarkUnknown zero now": func() error {
				_, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: ref})
				return err
			},
			"MarkUnknown fence 0": func() error {
				r := ref
				r.Fence = 0
				_, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: r, Now: T0})
				return err
			},
			"Abort seq 0": func() error {
				r := ref
				r.Seq = 0
				_, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: r, Now: T0})
				return err
			},
			"Resolve not applied with response": func() error {
				_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: ref, Response: store.StoredResponse{Status: 200}, Now: T0.Add(time.Hour)})
				return err
			},
			"Resolve applied without response": func() error {
				_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: ref, Applied: true, Now: T0.Add(time.Hour)})
				return err
			},
			"Resolve negative evidence age": func() error {
				_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: ref, EvidenceAge: -time.Nanosecond, Now: T0.Add(time.Hour)})
				return err
			},
			"Resolve evidence age too large": func() error {
				_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: ref, EvidenceAge: store.MaxInFlightWindow + time.Second, Now: T0.Add(time.Hour)})
				return err
			},
			"Resolve applied and closed": func() error {
				_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: ref, Applied: true, Closed: true, Response: store.StoredResponse{Status: 200}, Now: T0.Add(time.Hour)})
				return err
			},
			"Resolve applied bad status": func() error {
				_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: ref, Applied: true, BackendStatus: 42, Response: store.StoredResponse{Status: 200}, Now: T0.Add(time.Hour)})
				return err
			},
			"Pause unknown reason": func() error {
				_, err := f.s.Pause(f.ctx, store.PauseInput{Resource: live, Reason: "BECAUSE", Now: T0})
				return err
			},
			"Pause oversized detail": func() error {
				_, err := f.s.Pause(f.ctx, store.PauseInput{Resource: live, Reason: store.PauseOperator, Detail: long(store.MaxDetailLen + 1), Now: T0})
				return err
			},
			"Pause zero now": func() error {
				_, err := f.s.Pause(f.ctx, store.PauseInput{Resource: live, Reason: store.PauseOperator})
				return err
			},
			"Resume empty resource": func() error {
				_, err := f.s.Resume(f.ctx, "")
				return err
			},
			"Record empty resource": func() error {
				_, err := f.s.Record(f.ctx, "")
				return err
			},
			"Receipt fence 0": func() error {
				_, err := f.s.Receipt(f.ctx, store.ReceiptKey{Resource: live, Seq: 1})
				return err
			},
			"ReceiptsByOperation no seq": func() error {
				_, err := f.s.ReceiptsByOperation(f.ctx, live, "root-5")
				return err
			},
			"ReceiptsByOperation seq 0": func() error {
				_, err := f.s.ReceiptsByOperation(f.ctx, live, "root-5/0")
				return err
			},
			"ReceiptsByOperation seq 01": func() error {
				_, err := f.s.ReceiptsByOperation(f.ctx, live, "root-5/01")
				return err
			},
			"ListQuarantined bad resource": func() error {
				_, err := f.s.ListQuarantined(f.ctx, "a\tb")
				return err
			},
			"Repair bad anchor": func() error {
				_, err := f.s.Repair(f.ctx, store.RepairInput{Resource: live, Anchored: fencegate.Progress{Fence: 9}, Now: T0})
				return err
			},
			"Repair pending out of order": func() error {
				_, err := f.s.Repair(f.ctx, store.RepairInput{Resource: live, Now: T0, Anchored: fencegate.Progress{Fence: 9, Root: Root(9), LastSeq: 1,
					Pending: &fencegate.PendingOp{Seq: 3, PayloadDigest: Digest("x")}}})
				return err
			},
			"Repair negative window": func() error {
				_, err := f.s.Repair(f.ctx, store.RepairInput{Resource: live, Anchored: fencegate.Progress{Fence: 9, Root: Root(9)}, Now: T0, Window: -1})
				return err
			},
			"Repair zero now": func() error {
				_, err := f.s.Repair(f.ctx, store.RepairInput{Resource: live, Anchored: fencegate.Progress{Fence: 9, Root: Root(9)}})
				return err
			},
			"Records limit 0": func() error {
				_, err := f.s.Records(f.ctx, store.RecordsQuery{})
				return err
			},
			"Records limit too high": func() error {
				_, err := f.s.Records(f.ctx, store.RecordsQuery{Limit: store.MaxRecordsLimit + 1})
				return err
			},
			"Records bad after": func() error {
				_, err := f.s.Records(f.ctx, store.RecordsQuery{After: "a\x00", Limit: 1})
				return err
			},
			"RecordTrust unknown kind": func() error {
				_, err := f.s.RecordTrust(f.ctx, store.TrustInput{Kind: "TRUST", Keys: []store.KeyRef{{Kid: "k"}}, Now: T0})
				return err
			},
			"RecordTrust pin without thumbprint": func() error {
				_, err := f.s.RecordTrust(f.ctx, store.TrustInput{Kind: store.TrustPin, How: store.TrustOperator,
					Keys: []store.KeyRef{{Kid: "k", Alg: fencegate.AlgEdDSA}}, Now: T0})
				return err
			},
		}
		for name, call := range calls {
			if err := call(); !isInputError(err) {
				t.Errorf("%s: error %v, want an *store.InputError", name, err)
			}
		}
		f.unchanged(live, before)
		ps, err := f.s.ListPaused(f.ctx)
		f.check(err == nil && len(ps) == 0, "paused: %+v, %v", ps, err)
		pins, err := f.s.TrustedKeys(f.ctx)
		f.check(err == nil && len(pins) == 0, "pins: %+v, %v", pins, err)
	})
}

func isInputError(err error) bool {
	var ie *store.InputError
	return errors.Is(err, store.ErrInvalidInput) && errors.As(err, &ie) && ie.Field != "" &&
		strings.HasPrefix(err.Error(), "store: ")
}

func wantInputError(f *fixture, err error) {
	f.Helper()
	if !isInputError(err) {
		f.Fatalf("error %v, want an *store.InputError wrapping ErrInvalidInput", err)
	}
}
