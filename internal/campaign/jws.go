package campaign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// The generators build compact JWS by hand so that they can put any bytes
// in any segment. With the fixture's header and payload they produce
// exactly the bytes keys.Signer produces (NewFixture checks this).

var enc = base64.RawURLEncoding

// compact joins the base64url encodings of header, payload and signature.
func compact(header, payload, sig []byte) []byte {
	out := make([]byte, 0, enc.EncodedLen(len(header))+enc.EncodedLen(len(payload))+enc.EncodedLen(len(sig))+2)
	out = enc.AppendEncode(out, header)
	out = append(out, '.')
	out = enc.AppendEncode(out, payload)
	out = append(out, '.')
	return enc.AppendEncode(out, sig)
}

// signingInput is the JWS signing input of a header and payload.
func signingInput(header, payload []byte) []byte {
	out := enc.AppendEncode(nil, header)
	out = append(out, '.')
	return enc.AppendEncode(out, payload)
}

// header is a protected header as jwx writes it: alg, kid, typ, in that
// (sorted) order. Empty members are left out.
func (f *Fixture) header(alg, kid, typ string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, m := range [][2]string{{"alg", alg}, {"kid", kid}, {"typ", typ}} {
		if m[1] == "" {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(quote(m[0]) + ":" + quote(m[1]))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// signEd signs header and payload with an Ed25519 key as they are.
func signEd(priv ed25519.PrivateKey, header, payload []byte) []byte {
	return compact(header, payload, ed25519.Sign(priv, signingInput(header, payload)))
}

// signHS signs header and payload with HMAC-SHA256 under secret.
func signHS(secret, header, payload []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(signingInput(header, payload))
	return compact(header, payload, m.Sum(nil))
}

// lenientSegments splits a compact JWS and decodes its three segments,
// ignoring non-zero padding bits, so that two encodings of the same bytes
// compare equal. ok is false when it is not three decodable segments.
func lenientSegments(tok []byte) (segs [3][]byte, ok bool) {
	parts := bytes.Split(tok, []byte("."))
	if len(parts) != 3 {
		return segs, false
	}
	for i, p := range parts {
		d, err := enc.DecodeString(string(p))
		if err != nil {
			return segs, false
		}
		segs[i] = d
	}
	return segs, true
}

// sameToken reports whether tok decodes to exactly the segments want.
func sameToken(tok []byte, want [3][]byte) bool {
	got, ok := lenientSegments(tok)
	return ok && bytes.Equal(got[0], want[0]) && bytes.Equal(got[1], want[1]) && bytes.Equal(got[2], want[2])
}

// quote is s as a JSON string (invalid UTF-8 becomes U+FFFD, as in
// json.Marshal).
func quote(s string) string { return string(mustJSON(s)) }
