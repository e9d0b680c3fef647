package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

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

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

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

// reader decodes fields from b with a sticky error: after the first
// failure every read returns the zero value. Strings are cut from arena, a
// copy of b made once per value, or copied one by one when arena is unset
// (copyStrings).
type reader struct {
	b     []byte
	i     int
	arena string
	// copyStrings: no arena; each string read is its own copy.
	copyStrings bool
	err         error
}

// fieldsAt is the offset of a binary value's fields (after its version and
// kind bytes), which errors count bytes from.
const fieldsAt = 2

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("store/codec: "+format+" at byte %d: %w", append(args, fieldsAt+r.i, store.ErrCorrupt)...)
	}
	r.i = len(r.b)
}

// rest is the number of bytes not read yet.
func (r *reader) rest() int { return len(r.b) - r.i }

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.fail("%s: bad uvarint", what)
		return 0
	}
	if n > 1 && r.b[r.i+n-1] == 0 {
		r.fail("%s: non-minimal uvarint", what)
		return 0
	}
	r.i += n
	return v
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		r.fail("%s: bad varint", what)
		return 0
	}
	if n > 1 && r.b[r.i+n-1] == 0 {
		r.fail("%s: non-minimal varint", what)
		return 0
	}
	r.i += n
	return v
}

func (r *reader) int(what string) int {
	v := r.varint(what)
	if int64(int(v)) != v {
		r.fail("%s: %d out of range", what, v)
		return 0
	}
	return int(v)
}

// count reads a number of elements of at least min bytes each.
func (r *reader) count(what string, min int) int {
	v := r.uvarint(what)
	if r.err == nil && v > uint64(r.rest()/min) {
		r.fail("%s: count %d beyond the value's %d bytes left", what, v, r.rest())
		return 0
	}
	return int(v)
}

// raw reads a length-prefixed byte string, shared with the input.
func (r *reader) raw(what string) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(r.rest()) {
		r.fail("%s: length %d beyond the value's %d bytes left", what, n, r.rest())
		return nil
	}
	out := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return out
}

func (r *reader) str(what string) string {
	b := r.raw(what)
	if len(b) == 0 {
		return ""
	}
	if r.copyStrings {
		return string(b)
	}
	return r.arena[r.i-len(b) : r.i]
}

func (r *reader) bool(what string) bool {
	if r.err != nil {
		return false
	}
	if r.rest() < 1 {
		r.fail("%s: truncated", what)
		return false
	}
	v := r.b[r.i]
	if v > 1 {
		r.fail("%s: byte %#x is not 0 or 1", what, v)
		return false
	}
	r.i++
	return v == 1
}

func (r *reader) uint32(what string) uint32 {
	v := r.uvarint(what)
	if v > math.MaxUint32 {
		r.fail("%s: %d beyond uint32", what, v)
		return 0
	}
	return uint32(v)
}

func (r *reader) time(what string) time.Time {
	sec := r.varint(what)
	nsec := r.uvarint(what)
	if r.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		r.fail("%s: %d nanoseconds", what, nsec)
		return time.Time{}
	}
	return time.Unix(sec+zeroUnix, int64(nsec)).UTC()
}

func (r *reader) evidence(what string) store.Evidence {
	return store.Evidence{
		IssuerEpoch:     r.uvarint(what),
		BackendRevision: r.uvarint(what),
		Lineage:         r.str(what),
	}
}

// end fails unless every byte was read.
func (r *reader) end() error {
	if r.err == nil && r.rest() != 0 {
		r.fail("%d trailing bytes", r.rest())
	}
	return r.err
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
