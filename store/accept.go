package store

// Accept is library mode's acceptance point (package pgfence): a Begin and
// its Commit decided as one step, inside the transaction that also holds
// the service's own write. Nothing is in flight between them, so nothing
// can be MUTATION_UNKNOWN: the transaction commits the business change, the
// record and the receipt together, or none of them.

// AcceptInput is an Accept: the Begin (its Deadline and QuietAt bound a
// marker that never outlives the step, but are validated as Begin's are)
// and what the receipt stores for replays.
type AcceptInput struct {
	BeginInput
	// Response is what a replay of this (fence, segment) answers; a zero
	// Status is 200.
	Response StoredResponse
	// KeepReceipts is CommitInput.KeepReceipts.
	KeepReceipts int
}

// DecideAccept is Accept as a pure function: Decide, and on PROCEED
// DecideCommit of the marker that decision put in flight, at the same
// time. The change of a PROCEED writes the record (the segment advanced,
// no marker) and the receipt; any other decision's change is Decide's
// (a pause, a quarantine entry, an expired marker made unknown), which the
// caller keeps even when the service's transaction rolls back
// (KeepRejection). The result's Receipt is the receipt written on
// PROCEED, the stored one on REPLAY.
func DecideAccept(rec Record, rc *Receipt, in AcceptInput, bodyLimit int) (BeginResult, Change, error) {
	res, ch, err := Decide(rec, rc, in.BeginInput)
	if err != nil || res.Decision != DecisionProceed {
		return res, ch, err
	}
	resp := in.Response
	if resp.Status == 0 {
		resp.Status = 200
	}
	cin := CommitInput{OpRef: in.Ref(), BackendStatus: resp.Status, Response: resp, Now: in.Now, KeepReceipts: in.KeepReceipts}
	cch, err := DecideCommit(ch.Record, rc, cin, bodyLimit)
	if err != nil {
		return BeginResult{}, Change{}, err
	}
	res.Record, res.Receipt, res.Mutation = cch.Record, cch.Receipt, nil
	return res, cch, nil
}

// Accept runs DecideAccept in tx at the transaction's time (Tx.Now, as
// NewTxBackend's Begin does) and writes its change only on PROCEED: a
// refusal writes nothing in tx, whose owner rolls it back; its change, if
// any, is for KeepRejection to write in a transaction of its own. It
// returns the decision and the change it made or would have made.
func Accept(tx Tx, in AcceptInput, opts TxOptions) (BeginResult, Change, error) {
	return acceptStep(tx, in, opts, func(d Decision) bool { return d == DecisionProceed })
}

// KeepRejection decides in again in tx, a transaction of the store's own,
// and writes the change of anything but a PROCEED (the pause of a
// FENCE_REGRESSION, the quarantine entry of a SEGMENT_CONFLICT, a marker
// made unknown): what the refusal of an Accept must leave behind even
// though the service's transaction rolled back. A PROCEED now (the record
// moved on since) writes nothing.
func KeepRejection(tx Tx, in AcceptInput, opts TxOptions) (BeginResult, Change, error) {
	return acceptStep(tx, in, opts, func(d Decision) bool { return d != DecisionProceed })
}

func acceptStep(tx Tx, in AcceptInput, opts TxOptions, write func(Decision) bool) (BeginResult, Change, error) {
	if err := in.Validate(); err != nil {
		return BeginResult{}, Change{}, err
	}
	key := ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	rec, rc, err := tx.Load(in.Resource, &key)
	if err != nil {
		return BeginResult{}, Change{}, err
	}
	now, err := tx.Now()
	if err != nil {
		return BeginResult{}, Change{}, err
	}
	in.BeginInput = beginAt(in.BeginInput, now, max(opts.ClockLag, 0))
	res, ch, err := DecideAccept(rec, rc, in, BodyLimit(opts.MaxResponseBody))
	if err != nil || !write(res.Decision) {
		return res, ch, err
	}
	q, err := writeChange(tx, ch)
	if err != nil {
		return BeginResult{}, Change{}, err
	}
	if q != nil {
		res.Quarantine = q
	}
	return res, ch, nil
}

// PreviewAccept is Accept writing nothing, whatever the decision: library
// mode's HTTP handler decides first and writes the receipt (Accept again,
// on the record it keeps locked) once the service's handler has answered.
func PreviewAccept(tx Tx, in AcceptInput, opts TxOptions) (BeginResult, Change, error) {
	return acceptStep(tx, in, opts, func(Decision) bool { return false })
}
