package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Reader decodes fields from B with a sticky error: after the first
// failure every read returns the zero value and Err holds the failure.
// Strings are cut from Arena, a copy of B made once per value, or copied
// one by one when CopyStrings is set.
type Reader struct {
	// B is the value's fields; I the next byte to read.
	B []byte
	I int
	// Arena, when set, is string(B): strings read share it.
	Arena string
	// CopyStrings: no arena; each string read is its own copy.
	CopyStrings bool
	// Prefix starts every error ("store/codec: "); Offset is added to
	// the byte positions errors name (the bytes before B); Sentinel is
	// wrapped by every error.
	Prefix   string
	Offset   int
	Sentinel error
	// Err is the first failure.
	Err error
}

// Fail records a failure (the first one sticks) and stops the reading.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf(r.Prefix+format+" at byte %d: %w", append(args, r.Offset+r.I, r.Sentinel)...)
	}
	r.I = len(r.B)
}

// Rest is the number of bytes not read yet.
func (r *Reader) Rest() int { return len(r.B) - r.I }

// Uvarint reads a minimal uvarint.
func (r *Reader) Uvarint(what string) uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B[r.I:])
	if n <= 0 {
		r.Fail("%s: bad uvarint", what)
		return 0
	}
	if n > 1 && r.B[r.I+n-1] == 0 {
		r.Fail("%s: non-minimal uvarint", what)
		return 0
	}
	r.I += n
	return v
}

// Varint reads a minimal varint.
func (r *Reader) Varint(what string) int64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Varint(r.B[r.I:])
	if n <= 0 {
		r.Fail("%s: bad varint", what)
		return 0
	}
	if n > 1 && r.B[r.I+n-1] == 0 {
		r.Fail("%s: non-minimal varint", what)
		return 0
	}
	r.I += n
	return v
}

// Int reads a varint that fits an int.
func (r *Reader) Int(what string) int {
	v := r.Varint(what)
	if int64(int(v)) != v {
		r.Fail("%s: %d out of range", what, v)
		return 0
	}
	return int(v)
}

// Uint32 reads a uvarint that fits a uint32.
func (r *Reader) Uint32(what string) uint32 {
	v := r.Uvarint(what)
	if v > math.MaxUint32 {
		r.Fail("%s: %d beyond uint32", what, v)
		return 0
	}
	return uint32(v)
}

// Count reads a number of elements of at least min bytes each, refused
// when they cannot fit in the bytes left.
func (r *Reader) Count(what string, min int) int {
	v := r.Uvarint(what)
	if r.Err == nil && v > uint64(r.Rest()/min) {
		r.Fail("%s: count %d beyond the value's %d bytes left", what, v, r.Rest())
		return 0
	}
	return int(v)
}

// Raw reads a length-prefixed byte string, shared with B.
func (r *Reader) Raw(what string) []byte {
	n := r.Uvarint(what)
	if r.Err != nil {
		return nil
	}
	if n > uint64(r.Rest()) {
		r.Fail("%s: length %d beyond the value's %d bytes left", what, n, r.Rest())
		return nil
	}
	out := r.B[r.I : r.I+int(n) : r.I+int(n)]
	r.I += int(n)
	return out
}

// Str reads a length-prefixed string: cut from Arena, or a copy with
// CopyStrings.
func (r *Reader) Str(what string) string {
	b := r.Raw(what)
	if len(b) == 0 {
		return ""
	}
	if r.CopyStrings {
		return string(b)
	}
	return r.Arena[r.I-len(b) : r.I]
}

// Bool reads one byte, 0 or 1.
func (r *Reader) Bool(what string) bool {
	if r.Err != nil {
		return false
	}
	if r.Rest() < 1 {
		r.Fail("%s: truncated", what)
		return false
	}
	v := r.B[r.I]
	if v > 1 {
		r.Fail("%s: byte %#x is not 0 or 1", what, v)
		return false
	}
	r.I++
	return v == 1
}

// End fails unless every byte was read, and returns the first failure.
func (r *Reader) End() error {
	if r.Err == nil && r.Rest() != 0 {
		r.Fail("%d trailing bytes", r.Rest())
	}
	return r.Err
}
