package codec

import (
	"slices"

	"github.com/fencegate/fencegate/store"
)

// EncodeReceipt appends the binary encoding of r to dst.
func EncodeReceipt(dst []byte, r store.Receipt) []byte {
	b := append(dst, Version, KindReceipt)
	body := r.Response.Body
	b = appendUvarint(b, uint64(len(body)))
	b = appendString(b, r.Resource)
	b = appendUvarint(b, r.Fence)
	b = appendString(b, r.Root)
	b = appendUvarint(b, r.Seq)
	b = appendString(b, r.OperationID)
	b = appendTime(b, r.AcceptedAt)
	b = appendString(b, r.ID)
	b = appendString(b, r.PayloadDigest)
	b = appendString(b, r.GrantDigest)
	b = appendString(b, r.Owner)
	b = appendVarint(b, int64(r.BackendStatus))
	b = appendString(b, string(r.Source))
	b = appendVarint(b, int64(r.Response.Status))
	b = appendBool(b, r.Response.Truncated)
	b = appendHeader(b, r.Response.Header)
	return append(b, body...)
}

// appendHeader writes h's names in ascending byte order (as encoding/json
// orders map keys), each with its values.
func appendHeader(b []byte, h map[string][]string) []byte {
	b = appendUvarint(b, uint64(len(h)))
	if len(h) == 0 {
		return b
	}
	var small [8]string
	names := small[:0]
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b = appendString(b, k)
		vs := h[k]
		if vs == nil {
			b = appendUvarint(b, 0)
			continue
		}
		b = appendUvarint(b, uint64(len(vs))+1)
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return b
}

// receiptReader checks a binary receipt's header and splits it: a reader
// over its fields, which must end where its body starts, and the body.
func receiptReader(b []byte, copyStrings bool) (reader, []byte, error) {
	if err := header(b, KindReceipt, "receipt"); err != nil {
		return reader{}, nil, err
	}
	rd := reader{b: b[fieldsAt:], copyStrings: copyStrings}
	n := rd.uvarint("body length")
	if rd.err == nil && n > uint64(rd.rest()) {
		rd.fail("body length %d beyond the value's %d bytes left", n, rd.rest())
	}
	if rd.err != nil {
		return reader{}, nil, rd.err
	}
	cut := len(rd.b) - int(n)
	body := rd.b[cut:]
	rd.b = rd.b[:cut]
	if !copyStrings {
		// The arena is the fields' bytes only, the body left out; the
		// indexes stay those of rd.b.
		rd.arena = string(rd.b)
	}
	return rd, body, nil
}

// stamp reads the leading fields of a receipt: its stamp.
func (rd *reader) stamp() store.ReceiptStamp {
	var st store.ReceiptStamp
	st.Key.Resource = rd.str("resource")
	st.Key.Fence = rd.uvarint("fence")
	rd.raw("root")
	st.Key.Seq = rd.uvarint("seq")
	st.OperationID = rd.str("operation ID")
	st.AcceptedAt = rd.time("accepted at")
	return st
}

// DecodeReceipt decodes a receipt of either encoding: binary
// (EncodeReceipt) or JSON (an earlier file's).
func DecodeReceipt(b []byte) (store.Receipt, error) {
	if isJSON(b) {
		return receiptJSON(b)
	}
	var r store.Receipt
	rd, body, err := receiptReader(b, false)
	if err != nil {
		return store.Receipt{}, err
	}
	r.Resource = rd.str("resource")
	r.Fence = rd.uvarint("fence")
	r.Root = rd.str("root")
	r.Seq = rd.uvarint("seq")
	r.OperationID = rd.str("operation ID")
	r.AcceptedAt = rd.time("accepted at")
	r.ID = rd.str("ID")
	r.PayloadDigest = rd.str("payload digest")
	r.GrantDigest = rd.str("grant digest")
	r.Owner = rd.str("owner")
	r.BackendStatus = rd.int("backend status")
	r.Source = store.ReceiptSource(rd.str("source"))
	r.Response.Status = rd.int("response status")
	r.Response.Truncated = rd.bool("truncated")
	r.Response.Header = rd.header()
	if err := rd.end(); err != nil {
		return store.Receipt{}, err
	}
	if len(body) > 0 {
		r.Response.Body = append([]byte(nil), body...)
	}
	return r, nil
}

// DecodeStamp decodes what compaction reads of a receipt of either
// encoding. Of a binary receipt it copies only the stamp's strings; the rest
// is checked as strictly as DecodeReceipt checks it, so the two accept the
// same values.
func DecodeStamp(b []byte) (store.ReceiptStamp, error) {
	if isJSON(b) {
		r, err := receiptJSON(b)
		return r.Stamp(), err
	}
	rd, _, err := receiptReader(b, true)
	if err != nil {
		return store.ReceiptStamp{}, err
	}
	st := rd.stamp()
	rd.raw("ID")
	rd.raw("payload digest")
	rd.raw("grant digest")
	rd.raw("owner")
	rd.int("backend status")
	rd.raw("source")
	rd.int("response status")
	rd.bool("truncated")
	rd.skipHeader()
	if err := rd.end(); err != nil {
		return store.ReceiptStamp{}, err
	}
	return st, nil
}

// header reads a response's headers: nil when there are none.
func (rd *reader) header() map[string][]string {
	// A name takes at least 2 bytes: its length and its values' count.
	n := rd.count("header names", 2)
	if n == 0 {
		return nil
	}
	h := make(map[string][]string, n)
	prev := ""
	for i := range n {
		k := rd.str("header name")
		if rd.err == nil && i > 0 && k <= prev {
			rd.fail("header name %q after %q", k, prev)
		}
		prev = k
		vs := rd.listLen("header values")
		if rd.err != nil {
			return nil
		}
		if vs == 0 {
			h[k] = nil
			continue
		}
		list := make([]string, vs-1)
		for j := range list {
			list[j] = rd.str("header value")
		}
		h[k] = list
	}
	return h
}

// skipHeader checks a response's headers as header reads them, keeping
// nothing.
func (rd *reader) skipHeader() {
	n := rd.count("header names", 2)
	var prev []byte
	for i := range n {
		k := rd.raw("header name")
		if rd.err == nil && i > 0 && string(k) <= string(prev) {
			rd.fail("header name %q after %q", k, prev)
		}
		prev = k
		vs := rd.listLen("header values")
		for j := 1; j < vs; j++ {
			rd.raw("header value")
		}
		if rd.err != nil {
			return
		}
	}
}

// listLen reads the count-plus-one of a list of strings (0: a nil list);
// each string takes at least a byte.
func (rd *reader) listLen(what string) int {
	v := rd.uvarint(what)
	if rd.err == nil && v > 0 && v-1 > uint64(rd.rest()) {
		rd.fail("%s: count %d beyond the value's %d bytes left", what, v-1, rd.rest())
		return 0
	}
	return int(v)
}
