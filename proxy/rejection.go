package proxy

import (
	"github.com/fencegate/fencegate"
)

// rejection is a decision not to forward: a code, a detail, and where it applies a Retry-After.
type rejection struct {
	code   fencegate.Code
	detail string
	status int // 0: code.Status()
	extra  map[string]any
}

func reject(code fencegate.Code, detail string) *rejection {
	return &rejection{code: code, detail: detail}
}

func (r *rejection) with(k string, v any) *rejection {
	if r.extra == nil {
		r.extra = map[string]any{}
	}
	r.extra[k] = v
	return r
}

func (r *rejection) problem() *fencegate.Problem {
	d := fencegate.NewProblem(r.code, r.detail)
	if r.status != 0 {
		d.WithStatus(r.status)
	}
	for k, v := range r.extra {
		d.With(k, v)
	}
	return d
}
