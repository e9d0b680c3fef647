// Package codec is a compact binary encoding of the fenced store's hot
// values, store.Record and store.Receipt, for backends that keep them as
// bytes (store/bolt writes it; it has no backend dependency, so store/memory
// can keep receipts as bytes with it too).
//
// EncodeRecord and EncodeReceipt append a value to a buffer (append-style,
// no reflection); DecodeRecord, DecodeReceipt and DecodeStamp read either
// encoding: a binary value starts with its version byte (Version, 0x01), a
// JSON value (the encoding of earlier files, encoding/json of the same
// types) always starts with '{' and is decoded with encoding/json. Anything
// else is refused.
//
// # Format (version 1)
//
// A value is the version byte, a kind byte (KindRecord 0x01, KindReceipt
// 0x02: a receipt is never read as a record) and the fields in a fixed
// order, each:
//
//	unsigned integer   uvarint (encoding/binary), minimal
//	signed integer     varint (zigzag), minimal
//	string, bytes      uvarint length, then the bytes as they are
//	bool, presence     one byte, 0 or 1
//	time               varint seconds since 0001-01-01 UTC (the zero
//	                   time is 0), uvarint nanoseconds (< 1e9)
//	evidence           issuer epoch, backend revision, lineage
//
// A record: resource, highest fence, root, lease, grant digest, evidence,
// the number of prior lineages and each (lineage, fence), accepted at, last
// seq, superseded (fence, root, last seq), then the in-flight marker and the
// pause, each a presence byte and, when present, its fields: a marker's
// resource, fence, root, seq, operation ID, payload digest, grant digest,
// lease, owner, evidence, begun at, deadline, quiet at, attempts (at most
// 2^32-1), state, cause and unknown since; a pause's reason, detail, at,
// fence and evidence.
//
// A receipt: the length of its response body first, then resource, fence,
// root, seq, operation ID and accepted at (the stamp compaction reads:
// DecodeStamp stops allocating there), ID, payload digest, grant digest,
// owner, backend status, source, the response's status and truncated flag,
// its headers (a count, then each name in strictly ascending byte order with
// its values: a count plus one, 0 for a nil list, and each value), and last
// the body itself, the value's final bytes.
//
// # Strict, and the same values as JSON
//
// A decoder refuses what an encoder never writes: an unknown version or
// kind, a truncated value, bytes after the last field, a non-minimal
// varint, a bool other than 0 or 1, nanoseconds of 1e9 or more, attempts
// beyond uint32, header names out of order or repeated, and any length or
// count beyond what the remaining bytes can hold (so a decoder allocates at
// most in proportion to its input). So a value it accepts re-encodes to the
// same bytes. Every error wraps store.ErrCorrupt and starts with
// "store/codec: ".
//
// A decoded value equals (reflect.DeepEqual) what a JSON round trip of the
// encoded one gives, for the values the store writes: times decode in UTC
// without a monotonic reading (the store normalises every time it writes
// that way, store.normTime), an empty body, header map or list of prior
// lineages decodes nil (JSON omits them), a nil header value list stays nil
// and an empty one empty (as JSON's null and []). Two differences are
// deliberate, both outside what the store writes: strings are kept byte for
// byte (JSON replaces invalid UTF-8, which store validation refuses), and a
// time is kept as its instant in UTC (JSON keeps a zone offset, and cannot
// encode years outside 0..9999).
//
// A decoded value shares no memory with its input (a bbolt value is only
// valid during its transaction): the strings of one value are cut from one
// copy of its bytes (one allocation), a body is copied.
package codec
