package store

import "time"

// A backend with a clock of its own (store/redis decides at the server's
// TIME, estimated and checked by its step script within bounds, so that
// sidecars sharing it judge deadlines and retention by one clock)
// returns it from Tx.Now, and NewTxBackend decides at that time instead of
// the caller's Now. A Begin's Deadline and QuietAt move with it, keeping
// the lengths of the windows the caller asked for; a Resolve's evidence is
// an age (ResolveInput.EvidenceAge), so it is placed before that time too.

// at is the time a step decides at: the backend's (now), or the caller's
// own when now is zero.
func at(caller, now time.Time) time.Time {
	if now.IsZero() {
		return caller
	}
	return now
}

// beginAt moves a Begin to the backend's time, keeping the lengths of the
// in-flight and quiet windows the caller asked for (a zero QuietAt stays
// zero: the marker's quiet time is then derived from its Deadline), each
// made longer by lag, the most the backend's time may lag its true clock
// (TxOptions.ClockLag): a window placed from a time that lags is placed
// early, and a quiet time placed early would let "not applied" be
// concluded while the backend may still apply the write.
func beginAt(in BeginInput, now time.Time, lag time.Duration) BeginInput {
	if now.IsZero() {
		return in
	}
	window := in.Deadline.Sub(in.Now)
	if !in.QuietAt.IsZero() {
		in.QuietAt = now.Add(in.QuietAt.Sub(in.Now) + lag)
	}
	in.Now, in.Deadline = now, now.Add(window+lag)
	return in
}
