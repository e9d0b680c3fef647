// Package problem writes and reads RFC 9457 problem details
// (application/problem+json) with fencegate's stable "code" extension
// member. Every rejection of the registry and the sidecar goes through it.
package problem

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// ContentType is the RFC 9457 media type.
const ContentType = "application/problem+json"

// TypeBase prefixes the "type" URI of every fencegate problem; the code
// follows it ("https://fencegate.dev/problems/STALE_OWNER").
const TypeBase = "https://fencegate.dev/problems/"

// Details is an RFC 9457 problem document. Code is the stable, documented
// error code clients switch on; Detail is for people.
type Details struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Code     string `json:"code"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Extra members (e.g. "resource", "highestFence", "retryAfterMs").
	Extra map[string]any `json:"-"`
}

// New builds problem details for code with an HTTP status and a detail.
func New(status int, code, detail string) *Details {
	return &Details{Type: TypeBase + code, Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

// With adds an extension member.
func (d *Details) With(key string, v any) *Details {
	if d.Extra == nil {
		d.Extra = map[string]any{}
	}
	d.Extra[key] = v
	return d
}

// Error makes Details an error: "CODE: detail".
func (d *Details) Error() string {
	if d.Detail == "" {
		return d.Code
	}
	return d.Code + ": " + d.Detail
}

// MarshalJSON writes the standard members and the extensions flat.
func (d *Details) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(d.Extra)+6)
	for k, v := range d.Extra {
		m[k] = v
	}
	m["type"], m["title"], m["status"], m["code"] = d.Type, d.Title, d.Status, d.Code
	if d.Detail != "" {
		m["detail"] = d.Detail
	}
	if d.Instance != "" {
		m["instance"] = d.Instance
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the standard members and keeps the rest in Extra.
func (d *Details) UnmarshalJSON(b []byte) error {
	type plain Details
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range []string{"type", "title", "status", "code", "detail", "instance"} {
		delete(all, k)
	}
	*d = Details(p)
	if len(all) > 0 {
		d.Extra = all
	}
	return nil
}

// Write sends d as the response. retryAfter > 0 adds a Retry-After header
// (whole seconds, at least 1).
func Write(w http.ResponseWriter, d *Details, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(1, int((retryAfter+time.Second-1)/time.Second))))
	}
	w.WriteHeader(d.Status)
	_ = json.NewEncoder(w).Encode(d)
}

// Read decodes a problem response. It returns an error when the response
// is not problem+json.
func Read(resp *http.Response) (*Details, error) {
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		return nil, fmt.Errorf("problem: response %d is %q, not %s", resp.StatusCode, ct, ContentType)
	}
	var d Details
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&d); err != nil {
		return nil, fmt.Errorf("problem: decode: %w", err)
	}
	if d.Status == 0 {
		d.Status = resp.StatusCode
	}
	return &d, nil
}
