package bolt

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/internal/wire"
	"github.com/fencegate/fencegate/registry"
)

// The records every acquire, renew and release reads and writes (the meta,
// a resource's record, a lease) are stored in a binary form: a version
// byte, then the fields in a fixed order in internal/wire's primitives:
// unsigned integers as minimal uvarints, signed ones as minimal varints,
// strings as a uvarint length and the bytes.
// A value that starts with '{' is the JSON of the files written before
// (SchemaVersion 1), decoded as it was; it is rewritten in the binary
// form the next time it is written. The other buckets stay JSON: they
// are not on the acquire and release path.

// recordV1 is the version byte of the binary form.
const recordV1 byte = 1

// ErrCodec is wrapped by every failure to decode a stored record: the
// file is corrupt or of a newer build. It also wraps registry.ErrBackend,
// so the operation fails closed.
var ErrCodec = errors.New("registry/bolt: undecodable record")

// encoder appends the fields of a binary record (internal/wire).
type encoder struct{ b []byte }

func newEncoder(size int) *encoder {
	e := &encoder{b: make([]byte, 0, size)}
	e.b = append(e.b, recordV1)
	return e
}

func (e *encoder) uint(v uint64) { e.b = wire.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = wire.AppendVarint(e.b, v) }
func (e *encoder) str(s string)  { e.b = wire.AppendString(e.b, s) }
func (e *encoder) bytes() []byte { return e.b }

// decodeRecord decodes raw into v: the JSON of an older file, or the
// binary form by fields.
func decodeRecord[V any](raw []byte, v *V, fields func(*wire.Reader, *V)) error {
	switch {
	case len(raw) == 0:
		return fmt.Errorf("%w: empty", ErrCodec)
	case raw[0] == '{':
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%w: %v", ErrCodec, err)
		}
		return nil
	case raw[0] != recordV1:
		return fmt.Errorf("%w: version %d", ErrCodec, raw[0])
	}
	d := &wire.Reader{B: raw[1:], CopyStrings: true, Prefix: "registry/bolt: ", Offset: 1, Sentinel: ErrCodec}
	fields(d, v)
	return d.End()
}

func encodeMeta(m registry.Meta) []byte {
	e := newEncoder(48 + len(m.Lineage))
	e.uint(m.IssuerEpoch)
	e.uint(m.Revision)
	e.uint(m.FenceFloor)
	e.uint(m.PolicySeq)
	e.str(m.Lineage)
	if m.Time != 0 {
		// The registry's time, a trailing field: a meta written before it
		// existed ends at the lineage and reads as time 0.
		e.int(m.Time)
	}
	return e.bytes()
}

func decodeMeta(raw []byte) (registry.Meta, error) {
	var m registry.Meta
	err := decodeRecord(raw, &m, func(d *wire.Reader, m *registry.Meta) {
		m.IssuerEpoch = d.Uvarint("issuerEpoch")
		m.Revision = d.Uvarint("revision")
		m.FenceFloor = d.Uvarint("fenceFloor")
		m.PolicySeq = d.Uvarint("policySeq")
		m.Lineage = d.Str("lineage")
		if d.Rest() > 0 {
			m.Time = d.Varint("time")
		}
	})
	return m, err
}

func encodeResource(r registry.ResourceRecord) []byte {
	e := newEncoder(40 + len(r.Resource) + len(r.Holder))
	e.str(r.Resource)
	e.uint(r.LastFence)
	e.uint(r.FenceFloor)
	e.str(r.Holder)
	e.int(r.FreedAt)
	return e.bytes()
}

func decodeResource(raw []byte) (registry.ResourceRecord, error) {
	var r registry.ResourceRecord
	err := decodeRecord(raw, &r, func(d *wire.Reader, r *registry.ResourceRecord) {
		r.Resource = d.Str("resource")
		r.LastFence = d.Uvarint("lastFence")
		r.FenceFloor = d.Uvarint("fenceFloor")
		r.Holder = d.Str("holder")
		r.FreedAt = d.Varint("freedAt")
	})
	return r, err
}

func encodeLease(l registry.LeaseRecord) []byte {
	e := newEncoder(128 + len(l.Lease) + len(l.GrantID) + len(l.Resource) + len(l.Owner) + len(l.RequestID) +
		len(l.OpClass) + len(l.Lineage) + len(l.State) + len(l.Token) + len(l.Digest))
	e.str(l.Lease)
	e.str(l.GrantID)
	e.str(l.Resource)
	e.str(l.Owner)
	e.str(l.RequestID)
	e.str(l.OpClass)
	e.str(l.Lineage)
	e.uint(l.Fence)
	e.uint(l.IssuerEpoch)
	e.uint(l.PolicyGeneration)
	e.uint(l.Revision)
	e.uint(l.TTLMs)
	e.int(l.IssuedAt)
	e.int(l.ExpiresAt)
	e.str(l.State)
	e.int(l.EndedAt)
	e.str(l.Token)
	e.str(l.Digest)
	return e.bytes()
}

func decodeLease(raw []byte) (registry.LeaseRecord, error) {
	var l registry.LeaseRecord
	err := decodeRecord(raw, &l, func(d *wire.Reader, l *registry.LeaseRecord) {
		l.Lease = d.Str("lease")
		l.GrantID = d.Str("grantID")
		l.Resource = d.Str("resource")
		l.Owner = d.Str("owner")
		l.RequestID = d.Str("requestID")
		l.OpClass = d.Str("opClass")
		l.Lineage = d.Str("lineage")
		l.Fence = d.Uvarint("fence")
		l.IssuerEpoch = d.Uvarint("issuerEpoch")
		l.PolicyGeneration = d.Uvarint("policyGeneration")
		l.Revision = d.Uvarint("revision")
		l.TTLMs = d.Uvarint("tTLMs")
		l.IssuedAt = d.Varint("issuedAt")
		l.ExpiresAt = d.Varint("expiresAt")
		l.State = d.Str("state")
		l.EndedAt = d.Varint("endedAt")
		l.Token = d.Str("token")
		l.Digest = d.Str("digest")
	})
	return l, err
}
