package fencegate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// ProblemContentType is the RFC 9457 media type.
const ProblemContentType = "application/problem+json"

// ProblemTypeBase prefixes the "type" URI of every fencegate problem; the
// code follows it ("https://fencegate.dev/problems/STALE_OWNER").
const ProblemTypeBase = "https://fencegate.dev/problems/"

// maxProblemBytes bounds a problem document ReadProblem decodes.
const maxProblemBytes = 64 << 10

// Problem is an RFC 9457 problem document with fencegate's stable "code"
// extension member. Every rejection of the registry and the sidecar is
// one. Code is what clients switch on; Detail is for people.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Code     Code   `json:"code"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Extra holds the extension members ("resource", "highestFence",
	// "receiptId" ...), written flat next to the standard ones.
	Extra map[string]any `json:"-"`
}

// NewProblem builds the problem of code, with the code's status
// (Code.Status) and a detail.
func NewProblem(code Code, detail string) *Problem {
	return newProblem(code.Status(), code, detail)
}

func newProblem(status int, code Code, detail string) *Problem {
	return &Problem{Type: ProblemTypeBase + string(code), Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

// WithStatus answers the problem with another status than its code's: the
// registry answers BACKEND_UNAVAILABLE with 503 where the sidecar answers
// 502. A status outside 100..599 is ignored.
func (p *Problem) WithStatus(status int) *Problem {
	if validStatus(status) {
		p.Status, p.Title = status, http.StatusText(status)
	}
	return p
}

// With adds an extension member.
func (p *Problem) With(key string, v any) *Problem {
	if p.Extra == nil {
		p.Extra = map[string]any{}
	}
	p.Extra[key] = v
	return p
}

// Error makes a Problem an error: "CODE: detail".
func (p *Problem) Error() string {
	if p.Detail == "" {
		return string(p.Code)
	}
	return string(p.Code) + ": " + p.Detail
}

// MarshalJSON writes the standard members and the extensions flat.
func (p *Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(p.Extra)+6)
	for k, v := range p.Extra {
		m[k] = v
	}
	m["type"], m["title"], m["status"], m["code"] = p.Type, p.Title, p.Status, p.Code
	if p.Detail != "" {
		m["detail"] = p.Detail
	}
	if p.Instance != "" {
		m["instance"] = p.Instance
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the standard members and keeps the rest in Extra.
func (p *Problem) UnmarshalJSON(b []byte) error {
	type plain Problem
	var q plain
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range []string{"type", "title", "status", "code", "detail", "instance"} {
		delete(all, k)
	}
	*p = Problem(q)
	if len(all) > 0 {
		p.Extra = all
	}
	return nil
}

// WriteProblem sends p as the response. A status outside 100..599 (a
// Problem built by hand without one) is replaced by the code's status, so
// no code, known or not, makes it write an invalid status. retryAfter > 0
// adds a Retry-After header (whole seconds, at least 1).
func WriteProblem(w http.ResponseWriter, p *Problem, retryAfter time.Duration) {
	if !validStatus(p.Status) {
		q := *p
		q.Status = p.Code.Status()
		q.Title = http.StatusText(q.Status)
		p = &q
	}
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(1, int((retryAfter+time.Second-1)/time.Second))))
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// ReadProblem decodes a problem response (at most 64 KiB of it). It
// returns an error when the response is not problem+json. A document
// without a status takes the response's.
func ReadProblem(resp *http.Response) (*Problem, error) {
	if ct := resp.Header.Get("Content-Type"); ct != ProblemContentType {
		return nil, fmt.Errorf("fencegate: problem: response %d is %q, not %s", resp.StatusCode, ct, ProblemContentType)
	}
	var p Problem
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxProblemBytes)).Decode(&p); err != nil {
		return nil, fmt.Errorf("fencegate: problem: decode: %w", err)
	}
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	return &p, nil
}

func validStatus(s int) bool { return s >= 100 && s <= 599 }
