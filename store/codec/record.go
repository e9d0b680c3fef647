package codec

import (
	"github.com/fencegate/fencegate/store"
)

// EncodeRecord appends the binary encoding of r to dst.
func EncodeRecord(dst []byte, r store.Record) []byte {
	b := append(dst, Version, KindRecord)
	b = appendString(b, r.Resource)
	b = appendUvarint(b, r.HighestFence)
	b = appendString(b, r.Root)
	b = appendString(b, r.Lease)
	b = appendString(b, r.GrantDigest)
	b = appendEvidence(b, r.Evidence)
	b = appendUvarint(b, uint64(len(r.PriorLineages)))
	for _, p := range r.PriorLineages {
		b = appendString(b, p.Lineage)
		b = appendUvarint(b, p.Fence)
	}
	b = appendTime(b, r.AcceptedAt)
	b = appendUvarint(b, r.LastSeq)
	b = appendUvarint(b, r.Superseded.Fence)
	b = appendString(b, r.Superseded.Root)
	b = appendUvarint(b, r.Superseded.LastSeq)
	b = appendBool(b, r.InFlight != nil)
	if m := r.InFlight; m != nil {
		b = appendMutation(b, m)
	}
	b = appendBool(b, r.Pause != nil)
	if p := r.Pause; p != nil {
		b = appendString(b, string(p.Reason))
		b = appendString(b, p.Detail)
		b = appendTime(b, p.At)
		b = appendUvarint(b, p.Fence)
		b = appendEvidence(b, p.Evidence)
	}
	return b
}

func appendMutation(b []byte, m *store.Mutation) []byte {
	b = appendString(b, m.Resource)
	b = appendUvarint(b, m.Fence)
	b = appendString(b, m.Root)
	b = appendUvarint(b, m.Seq)
	b = appendString(b, m.OperationID)
	b = appendString(b, m.PayloadDigest)
	b = appendString(b, m.GrantDigest)
	b = appendString(b, m.Lease)
	b = appendString(b, m.Owner)
	b = appendEvidence(b, m.Evidence)
	b = appendTime(b, m.BegunAt)
	b = appendTime(b, m.Deadline)
	b = appendTime(b, m.QuietAt)
	b = appendUvarint(b, uint64(m.Attempts))
	b = appendString(b, string(m.State))
	b = appendString(b, string(m.Cause))
	return appendTime(b, m.UnknownSince)
}

// DecodeRecord decodes a record of either encoding: binary (EncodeRecord)
// or JSON (an earlier file's).
func DecodeRecord(b []byte) (store.Record, error) {
	if isJSON(b) {
		return recordJSON(b)
	}
	var r store.Record
	if err := header(b, KindRecord, "record"); err != nil {
		return store.Record{}, err
	}
	rd := newReader(b[fieldsAt:], false)
	rd.Arena = string(rd.B)
	r.Resource = rd.Str("resource")
	r.HighestFence = rd.Uvarint("highest fence")
	r.Root = rd.Str("root")
	r.Lease = rd.Str("lease")
	r.GrantDigest = rd.Str("grant digest")
	r.Evidence = rd.evidence("evidence")
	// A prior lineage takes at least 2 bytes (two lengths or values).
	if n := rd.Count("prior lineages", 2); n > 0 {
		r.PriorLineages = make([]store.PriorLineage, n)
		for i := range r.PriorLineages {
			r.PriorLineages[i] = store.PriorLineage{Lineage: rd.Str("prior lineage"), Fence: rd.Uvarint("prior lineage fence")}
		}
	}
	r.AcceptedAt = rd.time("accepted at")
	r.LastSeq = rd.Uvarint("last seq")
	r.Superseded = store.Superseded{Fence: rd.Uvarint("superseded fence"), Root: rd.Str("superseded root"), LastSeq: rd.Uvarint("superseded last seq")}
	if rd.Bool("in flight") {
		r.InFlight = rd.mutation()
	}
	if rd.Bool("pause") {
		r.Pause = &store.Pause{
			Reason:   store.PauseReason(rd.Str("pause reason")),
			Detail:   rd.Str("pause detail"),
			At:       rd.time("pause at"),
			Fence:    rd.Uvarint("pause fence"),
			Evidence: rd.evidence("pause evidence"),
		}
	}
	if err := rd.End(); err != nil {
		return store.Record{}, err
	}
	return r, nil
}

func (rd *reader) mutation() *store.Mutation {
	m := &store.Mutation{}
	m.Resource = rd.Str("marker resource")
	m.Fence = rd.Uvarint("marker fence")
	m.Root = rd.Str("marker root")
	m.Seq = rd.Uvarint("marker seq")
	m.OperationID = rd.Str("marker operation ID")
	m.PayloadDigest = rd.Str("marker payload digest")
	m.GrantDigest = rd.Str("marker grant digest")
	m.Lease = rd.Str("marker lease")
	m.Owner = rd.Str("marker owner")
	m.Evidence = rd.evidence("marker evidence")
	m.BegunAt = rd.time("marker begun at")
	m.Deadline = rd.time("marker deadline")
	m.QuietAt = rd.time("marker quiet at")
	m.Attempts = rd.Uint32("marker attempts")
	m.State = store.MutationState(rd.Str("marker state"))
	m.Cause = store.UnknownCause(rd.Str("marker cause"))
	m.UnknownSince = rd.time("marker unknown since")
	return m
}
