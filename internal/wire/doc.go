// Package wire holds the primitives of the project's binary record
// encodings (store/codec's records and receipts, registry/bolt's meta,
// resource and lease records): fields appended in a fixed order, unsigned
// integers as minimal uvarints, signed ones as minimal varints (zigzag),
// strings and byte strings as a uvarint length and the bytes, booleans as
// one byte 0 or 1; and Reader, which reads them back strictly, with a
// sticky error.
//
// Reader refuses a non-minimal varint, a length or count beyond the bytes
// left and a boolean other than 0 or 1, so that decoding allocates at most
// in proportion to its input and every value it accepts re-encodes to the
// same bytes. Each encoding keeps its own version and kind bytes, its
// field order and its error (Reader.Prefix, Reader.Sentinel).
package wire
