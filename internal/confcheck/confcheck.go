package confcheck

import (
	"errors"
	"fmt"
	"time"
)

// Problems is the list a validator appends to.
type Problems []error

// Add appends a problem, formatted as by fmt.Errorf.
func (p *Problems) Add(format string, a ...any) { *p = append(*p, fmt.Errorf(format, a...)) }

// Append appends problems found elsewhere (a nested section's validator).
func (p *Problems) Append(errs ...error) { *p = append(*p, errs...) }

// AppendErr appends the problems of err, another validator's joined
// result (each of errors.Join's list; nothing for nil).
func (p *Problems) AppendErr(err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		p.Append(j.Unwrap()...)
	} else if err != nil {
		p.Append(err)
	}
}

// Positive is a problem unless d > 0.
func (p *Problems) Positive(name string, d time.Duration) {
	if d <= 0 {
		p.Add("%s: %v must be positive", name, d)
	}
}

// Duration is a problem when d < 0 (0 is the default).
func (p *Problems) Duration(name string, d time.Duration) {
	if d < 0 {
		p.Add("%s: %v must not be negative (0 is the default)", name, d)
	}
}

// Count is a problem when n < 0 (0 is the default).
func (p *Problems) Count(name string, n int64) {
	if n < 0 {
		p.Add("%s: %d must not be negative (0 is the default)", name, n)
	}
}

// Err joins the problems (nil for none).
func (p Problems) Err() error { return errors.Join(p...) }
