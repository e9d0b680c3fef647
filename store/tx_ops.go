package store

import (
	"context"
	"time"
)

// The state changes of NewTxBackend's Store: each one transaction over a
// resource's record (and the receipt of its segment), decided by the pure
// functions.

func (b *txBackend) Begin(ctx context.Context, in BeginInput) (BeginResult, error) {
	if err := in.Validate(); err != nil {
		return BeginResult{}, err
	}
	key := ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	var res BeginResult
	_, q, _, err := b.decide(ctx, "begin", in.Resource, &key, func(rec Record, rc *Receipt, now time.Time) (Change, error) {
		r, ch, err := Decide(rec, rc, beginAt(in, now, b.clockLag))
		res = r
		return ch, err
	})
	if err != nil {
		return BeginResult{}, err
	}
	if q != nil {
		res.Quarantine = q
	}
	return res, nil
}

func (b *txBackend) Commit(ctx context.Context, in CommitInput) (Receipt, error) {
	if err := in.Validate(); err != nil {
		return Receipt{}, err
	}
	key := ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	ch, _, _, err := b.decide(ctx, "commit", in.Resource, &key, func(rec Record, rc *Receipt, now time.Time) (Change, error) {
		in := in
		in.Now = at(in.Now, now)
		return DecideCommit(rec, rc, in, b.bodyLimit)
	})
	if err != nil {
		return Receipt{}, err
	}
	return *ch.Receipt, nil
}

func (b *txBackend) MarkUnknown(ctx context.Context, in MarkUnknownInput) (Mutation, error) {
	if err := in.Validate(); err != nil {
		return Mutation{}, err
	}
	ch, _, _, err := b.decide(ctx, "mark unknown", in.Resource, nil, func(rec Record, _ *Receipt, now time.Time) (Change, error) {
		in := in
		in.Now = at(in.Now, now)
		return DecideMarkUnknown(rec, in)
	})
	if err != nil {
		return Mutation{}, err
	}
	return *ch.Record.InFlight, nil
}

func (b *txBackend) Resolve(ctx context.Context, in ResolveInput) (ResolveResult, error) {
	if err := in.Validate(); err != nil {
		return ResolveResult{}, err
	}
	key := ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	ch, _, rec, err := b.decide(ctx, "resolve", in.Resource, &key, func(rec Record, rc *Receipt, now time.Time) (Change, error) {
		in := in
		in.Now = at(in.Now, now)
		return DecideResolve(rec, rc, in, b.bodyLimit)
	})
	if err != nil {
		return ResolveResult{}, err
	}
	if ch.WriteRecord {
		rec = ch.Record
	} else {
		rec = rec.Clone() // as read: it may be the backend's own
	}
	return ResolveResult{Applied: in.Applied, Receipt: ch.Receipt, Record: rec}, nil
}

func (b *txBackend) Abort(ctx context.Context, in AbortInput) (Record, error) {
	if err := in.Validate(); err != nil {
		return Record{}, err
	}
	return b.decideRecord(ctx, "abort", in.Resource, func(rec Record, now time.Time) (Change, error) {
		in := in
		in.Now = at(in.Now, now)
		return DecideAbort(rec, in)
	})
}

func (b *txBackend) Pause(ctx context.Context, in PauseInput) (Record, error) {
	if err := in.Validate(); err != nil {
		return Record{}, err
	}
	return b.decideRecord(ctx, "pause", in.Resource, func(rec Record, now time.Time) (Change, error) {
		in := in
		in.Now = at(in.Now, now)
		return DecidePause(rec, in)
	})
}

func (b *txBackend) Resume(ctx context.Context, resource string) (Record, error) {
	if err := ValidateResource(resource); err != nil {
		return Record{}, err
	}
	return b.decideRecord(ctx, "resume", resource, func(rec Record, _ time.Time) (Change, error) { return DecideResume(rec, resource) })
}

// Repair decides at the backend's time: the repaired marker's UnknownSince
// and Deadline, and the pause's time.
func (b *txBackend) Repair(ctx context.Context, in RepairInput) (Record, error) {
	if err := in.Validate(); err != nil {
		return Record{}, err
	}
	return b.decideRecord(ctx, "repair", in.Resource, func(rec Record, now time.Time) (Change, error) {
		in := in
		in.Now = at(in.Now, now)
		return DecideRepair(rec, in)
	})
}

// decideRecord is decide over the record alone, answering the record
// after the change.
func (b *txBackend) decideRecord(ctx context.Context, op, resource string, f func(Record, time.Time) (Change, error)) (Record, error) {
	ch, _, _, err := b.decide(ctx, op, resource, nil, func(rec Record, _ *Receipt, now time.Time) (Change, error) { return f(rec, now) })
	if err != nil {
		return Record{}, err
	}
	return ch.Record, nil
}
