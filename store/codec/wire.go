package codec

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/internal/wire"
	"github.com/fencegate/fencegate/store"
)

// Version is the first byte of a binary value.
const Version = 0x01

// Kinds: the second byte of a binary value.
const (
	KindRecord  = 0x01
	KindReceipt = 0x02
)

// zeroUnix is the Unix time of the zero time.Time, from which a time's
// seconds count (so that the zero time encodes as 0).
var zeroUnix = time.Time{}.Unix()

func appendUvarint(b []byte, v uint64) []byte { return wire.AppendUvarint(b, v) }

func appendVarint(b []byte, v int64) []byte { return wire.AppendVarint(b, v) }

func appendString(b []byte, s string) []byte { return wire.AppendString(b, s) }

func appendBool(b []byte, v bool) []byte { return wire.AppendBool(b, v) }

// appendTime writes t's instant; the subtraction wraps for instants far
// outside the years JSON can hold, and the decoder's addition wraps back.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix()-zeroUnix)
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendEvidence(b []byte, e store.Evidence) []byte {
	b = appendUvarint(b, e.IssuerEpoch)
	b = appendUvarint(b, e.BackendRevision)
	return appendString(b, e.Lineage)
}

// reader is a wire.Reader over a binary value's fields, failing with
// store.ErrCorrupt, plus the store's own field types.
type reader struct{ wire.Reader }

// fieldsAt is the offset of a binary value's fields (after its version and
// kind bytes), which errors count bytes from.
const fieldsAt = 2

// newReader reads fields (a value without its version and kind bytes).
func newReader(fields []byte, copyStrings bool) reader {
	return reader{wire.Reader{B: fields, CopyStrings: copyStrings, Prefix: "store/codec: ", Offset: fieldsAt, Sentinel: store.ErrCorrupt}}
}

func (r *reader) time(what string) time.Time {
	sec := r.Varint(what)
	nsec := r.Uvarint(what)
	if r.Err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		r.Fail("%s: %d nanoseconds", what, nsec)
		return time.Time{}
	}
	return time.Unix(sec+zeroUnix, int64(nsec)).UTC()
}

func (r *reader) evidence(what string) store.Evidence {
	return store.Evidence{
		IssuerEpoch:     r.Uvarint(what),
		BackendRevision: r.Uvarint(what),
		Lineage:         r.Str(what),
	}
}

// header checks the version and kind bytes of a binary value.
func header(b []byte, kind byte, what string) error {
	if len(b) < 2 {
		return fmt.Errorf("store/codec: %s of %d bytes: %w", what, len(b), store.ErrCorrupt)
	}
	if b[0] != Version {
		return fmt.Errorf("store/codec: %s: unknown version %#x: %w", what, b[0], store.ErrCorrupt)
	}
	if b[1] != kind {
		return fmt.Errorf("store/codec: %s: kind %#x, want %#x: %w", what, b[1], kind, store.ErrCorrupt)
	}
	return nil
}
