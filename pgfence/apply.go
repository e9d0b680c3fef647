package pgfence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/postgres"
)

// window is the nominal life of the marker an Accept decides with: it
// never outlives the step (the decision and the commit are one change),
// but Begin's rules validate its times.
const window = time.Minute

// Outcome labels of the metrics besides the refusals' codes.
const (
	outcomeAccepted = "ACCEPTED"
	outcomeReplayed = "REPLAYED"
)

// Apply is the acceptance point in tx, a transaction the caller began on
// the store's database and commits with its own write: it authenticates
// req's grant, then decides its fence and segment and, when they are
// accepted, writes the resource's record and the receipt in tx, returning
// the receipt. A refusal (a *fencegate.Problem), a replay (ErrReplayed)
// or a failure leaves tx as it was, able to go on or roll back; the
// caller returns the error and rolls back. See the package documentation.
func (f *Fence) Apply(ctx context.Context, tx pgx.Tx, req Request) (store.Receipt, error) {
	start := f.now()
	rc, code, err := f.apply(ctx, tx, req)
	f.m.decisions.WithLabelValues(code).Inc()
	f.m.applyDur.WithLabelValues(code).Observe(f.since(start).Seconds())
	return rc, err
}

func (f *Fence) apply(ctx context.Context, tx pgx.Tx, req Request) (store.Receipt, string, error) {
	_, res, err := f.run(ctx, tx, req, false)
	if err != nil {
		return store.Receipt{}, outcomeOf(err), err
	}
	return *res.Receipt, outcomeAccepted, nil
}

// previewIn is Apply deciding without writing: on PROCEED the record
// stays locked in tx and nothing is written yet (Handler writes the
// receipt with the handler's answer).
func (f *Fence) previewIn(ctx context.Context, tx pgx.Tx, req Request) (store.AcceptInput, store.BeginResult, error) {
	return f.run(ctx, tx, req, true)
}

// run authenticates req and decides it in tx: a PROCEED is the result,
// anything else an error (a problem, a replay, a failure).
func (f *Fence) run(ctx context.Context, tx pgx.Tx, req Request, preview bool) (store.AcceptInput, store.BeginResult, error) {
	in, err := f.admit(ctx, req)
	if err != nil {
		return in, store.BeginResult{}, err
	}
	res, ch, err := f.decide(ctx, tx, in, preview)
	if err != nil {
		f.o.log.Error("pgfence: the fenced store failed; refusing (fail closed)", zap.String("resource", req.Resource), zap.Error(err))
		return in, store.BeginResult{}, failure(err)
	}
	switch res.Decision {
	case store.DecisionProceed:
		return in, res, nil
	case store.DecisionReplay:
		return in, res, &Replayed{Receipt: *res.Receipt}
	}
	if ch.Writes() {
		res = f.keep(ctx, in, res)
	}
	p := decisionProblem(res)
	f.logRefusal(req.Resource, p.Code, p.Detail)
	return in, res, p
}

// admit authenticates req and forms the store's input; nothing here
// touches the caller's transaction.
func (f *Fence) admit(ctx context.Context, req Request) (store.AcceptInput, error) {
	r, ref := f.auth.CheckCaller(ctx, req.Caller, req.Resource, []byte(req.Grant), []byte(req.Status), f.o.rule)
	if ref != nil {
		return store.AcceptInput{}, f.refusal(ctx, req, r, ref)
	}
	in := f.acceptInput(req, r)
	if err := in.Validate(); err != nil {
		var ie *store.InputError
		if !errors.As(err, &ie) {
			return in, fmt.Errorf("pgfence: %w", err)
		}
		code, _ := ie.RequestCode()
		return in, fencegate.NewProblem(code, "the write cannot be fenced: "+ie.Field+": "+ie.Reason).With("field", ie.Field)
	}
	return in, nil
}

// outcomeOf is the metrics' label of an error of run.
func outcomeOf(err error) string {
	var p *fencegate.Problem
	switch {
	case errors.Is(err, ErrReplayed):
		return outcomeReplayed
	case errors.As(err, &p):
		return string(p.Code)
	}
	return string(fencegate.CodeStoreUnavailable)
}

// acceptInput is the store's input of an authenticated request.
func (f *Fence) acceptInput(req Request, r authn.Result) store.AcceptInput {
	g, now := r.Grant, f.now()
	return store.AcceptInput{
		BeginInput: store.BeginInput{
			Resource: req.Resource, Fence: g.FenceToken, Root: g.OperationRoot, Seq: req.seq(),
			PayloadDigest: req.payload(), GrantDigest: r.Digest, Lease: g.Lease, Owner: r.Caller,
			Evidence: store.Evidence{IssuerEpoch: g.IssuerEpoch, BackendRevision: g.BackendRevision, Lineage: g.Lineage},
			Now:      now, Deadline: now.Add(window), QuietAt: now.Add(window),
		},
		Response:     req.Response,
		KeepReceipts: f.o.keepReceipts,
	}
}

// savepoint is the name of the savepoint a decision runs in.
const savepoint = "fencegate_apply"

// decide runs store.Accept (or PreviewAccept) in a savepoint of tx, on
// the resource's locked record (postgres.Store.TxFor: the savepoint, the
// lock and the load in one round trip): released on PROCEED with the
// record and the receipt written (one more round trip), the lock staying
// with tx; rolled back otherwise, which releases the lock and leaves tx as
// it was.
func (f *Fence) decide(ctx context.Context, tx pgx.Tx, in store.AcceptInput, preview bool) (store.BeginResult, store.Change, error) {
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	t, err := f.st.TxFor(ctx, tx, in.Resource, &key, savepoint)
	if err != nil {
		return store.BeginResult{}, store.Change{}, err
	}
	res, ch, err := f.decideIn(ctx, tx, t, in, preview)
	if err == nil && res.Decision == store.DecisionProceed {
		if err := t.Release(); err != nil {
			_ = t.RollbackTo()
			return store.BeginResult{}, store.Change{}, err
		}
		return res, ch, nil
	}
	if rbErr := t.RollbackTo(); rbErr != nil && err == nil {
		err = rbErr
	}
	return res, ch, err
}

func (f *Fence) decideIn(ctx context.Context, tx pgx.Tx, t *postgres.Tx, in store.AcceptInput, preview bool) (store.BeginResult, store.Change, error) {
	if err := f.st.CheckIn(ctx, tx); err != nil {
		return store.BeginResult{}, store.Change{}, err
	}
	if preview {
		return store.PreviewAccept(t, in, f.st.TxOptions())
	}
	return store.Accept(t, in, f.st.TxOptions())
}

// keep writes what a refusal leaves behind (store.KeepRejection) in a
// transaction of the store's own: the caller's rolls back. It answers the
// decision of that transaction; when it fails, the refusal stands as
// decided (the next attempt decides the same and keeps it again).
func (f *Fence) keep(ctx context.Context, in store.AcceptInput, res store.BeginResult) store.BeginResult {
	var kept store.BeginResult
	err := f.st.Update(ctx, "keep refusal", func(tx store.Tx) error {
		r, _, err := store.KeepRejection(tx, in, f.st.TxOptions())
		kept = r
		return err
	})
	if err != nil {
		f.o.log.Error("pgfence: could not keep what a refusal leaves (a pause, a quarantine entry); the refusal stands",
			zap.String("resource", in.Resource), zap.String("decision", string(res.Decision)), zap.Error(err))
		return res
	}
	if kept.Decision == store.DecisionProceed {
		return res // the record moved on: nothing was kept, the refusal stands
	}
	return kept
}

// refusal is the problem of an authentication refusal. An authentic grant
// that is no longer held, under a resource whose record already holds a
// higher fence, is a stale owner and told so (the sidecar's rule).
func (f *Fence) refusal(ctx context.Context, req Request, r authn.Result, ref *authn.Refusal) *fencegate.Problem {
	p := fencegate.NewProblem(ref.Code, ref.Detail)
	if ref.Retryable {
		p.With("retryable", true)
	}
	if r.Grant == nil || (ref.Code != fencegate.CodeGrantNotHeld && ref.Code != fencegate.CodeStatusStale) {
		return p
	}
	rec, err := f.st.Record(ctx, req.Resource)
	if err != nil || rec.HighestFence <= r.Grant.FenceToken {
		return p
	}
	return fencegate.NewProblem(fencegate.CodeStaleOwner,
		fmt.Sprintf("fence %d is below the highest accepted fence %d (and %s)", r.Grant.FenceToken, rec.HighestFence, ref.Detail)).
		With("highestFence", rec.HighestFence)
}

// decisionProblem is the problem of a store refusal, with the members
// the sidecar adds.
func decisionProblem(res store.BeginResult) *fencegate.Problem {
	p := fencegate.NewProblem(res.Code(), res.Detail)
	members, known := res.Members()
	if !known {
		p.Detail = fmt.Sprintf("unexpected store decision %q", res.Decision)
	}
	for k, v := range members {
		p.With(k, v)
	}
	if res.Decision == store.DecisionBusy {
		p.With("retryable", true)
	}
	return p
}
