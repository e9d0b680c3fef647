package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/fencegate/fencegate/registry"
)

// The records every acquire, renew and release reads and writes (the meta,
// a resource's record, a lease) are stored in a binary form: a version
// byte, then the fields in a fixed order, unsigned integers as uvarints,
// signed ones as varints, strings as a uvarint length and the bytes.
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

// encoder appends the fields of a binary record.
type encoder struct{ b []byte }

func newEncoder(size int) *encoder {
	e := &encoder{b: make([]byte, 0, size)}
	e.b = append(e.b, recordV1)
	return e
}

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bytes() []byte { return e.b }

// decoder reads the fields of a binary record; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCodec, what)
	}
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad unsigned integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad signed integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) || n > math.MaxInt32 {
		d.fail("string longer than the record")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// end checks that the whole record was read.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

// decodeRecord decodes raw into v: the JSON of an older file, or the
// binary form by fields.
func decodeRecord[V any](raw []byte, v *V, fields func(*decoder, *V)) error {
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
	d := &decoder{b: raw[1:]}
	fields(d, v)
	return d.end()
}

func encodeMeta(m registry.Meta) []byte {
	e := newEncoder(48 + len(m.Lineage))
	e.uint(m.IssuerEpoch)
	e.uint(m.Revision)
	e.uint(m.FenceFloor)
	e.uint(m.PolicySeq)
	e.str(m.Lineage)
	return e.bytes()
}

func decodeMeta(raw []byte) (registry.Meta, error) {
	var m registry.Meta
	err := decodeRecord(raw, &m, func(d *decoder, m *registry.Meta) {
		m.IssuerEpoch = d.uint()
		m.Revision = d.uint()
		m.FenceFloor = d.uint()
		m.PolicySeq = d.uint()
		m.Lineage = d.str()
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
	err := decodeRecord(raw, &r, func(d *decoder, r *registry.ResourceRecord) {
		r.Resource = d.str()
		r.LastFence = d.uint()
		r.FenceFloor = d.uint()
		r.Holder = d.str()
		r.FreedAt = d.int()
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
	err := decodeRecord(raw, &l, func(d *decoder, l *registry.LeaseRecord) {
		l.Lease = d.str()
		l.GrantID = d.str()
		l.Resource = d.str()
		l.Owner = d.str()
		l.RequestID = d.str()
		l.OpClass = d.str()
		l.Lineage = d.str()
		l.Fence = d.uint()
		l.IssuerEpoch = d.uint()
		l.PolicyGeneration = d.uint()
		l.Revision = d.uint()
		l.TTLMs = d.uint()
		l.IssuedAt = d.int()
		l.ExpiresAt = d.int()
		l.State = d.str()
		l.EndedAt = d.int()
		l.Token = d.str()
		l.Digest = d.str()
	})
	return l, err
}
