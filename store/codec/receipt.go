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
	rd := newReader(b[fieldsAt:], copyStrings)
	n := rd.Uvarint("body length")
	if rd.Err == nil && n > uint64(rd.Rest()) {
		rd.Fail("body length %d beyond the value's %d bytes left", n, rd.Rest())
	}
	if rd.Err != nil {
		return reader{}, nil, rd.Err
	}
	cut := len(rd.B) - int(n)
	body := rd.B[cut:]
	rd.B = rd.B[:cut]
	if !copyStrings {
		// The arena is the fields' bytes only, the body left out; the
		// indexes stay those of rd.B.
		rd.Arena = string(rd.B)
	}
	return rd, body, nil
}

// stamp reads the leading fields of a receipt: its stamp.
func (rd *reader) stamp() store.ReceiptStamp {
	var st store.ReceiptStamp
	st.Key.Resource = rd.Str("resource")
	st.Key.Fence = rd.Uvarint("fence")
	rd.Raw("root")
	st.Key.Seq = rd.Uvarint("seq")
	st.OperationID = rd.Str("operation ID")
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
	r.Resource = rd.Str("resource")
	r.Fence = rd.Uvarint("fence")
	r.Root = rd.Str("root")
	r.Seq = rd.Uvarint("seq")
	r.OperationID = rd.Str("operation ID")
	r.AcceptedAt = rd.time("accepted at")
	r.ID = rd.Str("ID")
	r.PayloadDigest = rd.Str("payload digest")
	r.GrantDigest = rd.Str("grant digest")
	r.Owner = rd.Str("owner")
	r.BackendStatus = rd.Int("backend status")
	r.Source = store.ReceiptSource(rd.Str("source"))
	r.Response.Status = rd.Int("response status")
	r.Response.Truncated = rd.Bool("truncated")
	r.Response.Header = rd.header()
	if err := rd.End(); err != nil {
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
	rd.Raw("ID")
	rd.Raw("payload digest")
	rd.Raw("grant digest")
	rd.Raw("owner")
	rd.Int("backend status")
	rd.Raw("source")
	rd.Int("response status")
	rd.Bool("truncated")
	rd.skipHeader()
	if err := rd.End(); err != nil {
		return store.ReceiptStamp{}, err
	}
	return st, nil
}

// header reads a response's headers: nil when there are none.
func (rd *reader) header() map[string][]string {
	// A name takes at least 2 bytes: its length and its values' count.
	n := rd.Count("header names", 2)
	if n == 0 {
		return nil
	}
	h := make(map[string][]string, n)
	prev := ""
	for i := range n {
		k := rd.Str("header name")
		if rd.Err == nil && i > 0 && k <= prev {
			rd.Fail("header name %q after %q", k, prev)
		}
		prev = k
		vs := rd.listLen("header values")
		if rd.Err != nil {
			return nil
		}
		if vs == 0 {
			h[k] = nil
			continue
		}
		list := make([]string, vs-1)
		for j := range list {
			list[j] = rd.Str("header value")
		}
		h[k] = list
	}
	return h
}

// skipHeader checks a response's headers as header reads them, keeping
// nothing.
func (rd *reader) skipHeader() {
	n := rd.Count("header names", 2)
	var prev []byte
	for i := range n {
		k := rd.Raw("header name")
		if rd.Err == nil && i > 0 && string(k) <= string(prev) {
			rd.Fail("header name %q after %q", k, prev)
		}
		prev = k
		vs := rd.listLen("header values")
		for j := 1; j < vs; j++ {
			rd.Raw("header value")
		}
		if rd.Err != nil {
			return
		}
	}
}

// listLen reads the count-plus-one of a list of strings (0: a nil list);
// each string takes at least a byte.
func (rd *reader) listLen(what string) int {
	v := rd.Uvarint(what)
	if rd.Err == nil && v > 0 && v-1 > uint64(rd.Rest()) {
		rd.Fail("%s: count %d beyond the value's %d bytes left", what, v-1, rd.Rest())
		return 0
	}
	return int(v)
}
