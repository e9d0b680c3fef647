package fencegate_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"testing"

	"github.com/fencegate/fencegate"
)

// TestEveryCodeHasAStatus reads code.go: every Code constant declared
// there is in the status table (Known), with a 4xx or 5xx status. A code
// added without a status fails here instead of answering 500.
func TestEveryCodeHasAStatus(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "code.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			lit := v.Values[0].(*ast.BasicLit)
			code := fencegate.Code(lit.Value[1 : len(lit.Value)-1])
			n++
			if !code.Known() || code.Status() < 400 || code.Status() > 599 {
				t.Errorf("%s (%s): known %v, status %d", v.Names[0].Name, code, code.Known(), code.Status())
			}
		}
	}
	if n < 40 {
		t.Fatalf("found %d codes in code.go; the parse is broken", n)
	}
}

// TestCodeStatuses pins the statuses clients rely on.
func TestCodeStatuses(t *testing.T) {
	for code, want := range map[fencegate.Code]int{
		fencegate.CodeGrantRequired:      http.StatusPreconditionRequired,
		fencegate.CodeGrantInvalid:       http.StatusUnauthorized,
		fencegate.CodeStaleOwner:         http.StatusConflict,
		fencegate.CodeReplayIncomplete:   http.StatusConflict,
		fencegate.CodeFenceHeaderInvalid: http.StatusBadRequest,
		fencegate.CodeBackendUnavailable: http.StatusBadGateway,
		fencegate.CodeLeaseHeld:          http.StatusConflict,
		fencegate.CodeFenceExhausted:     http.StatusServiceUnavailable,
		fencegate.CodeNotFound:           http.StatusNotFound,
		fencegate.CodeMayStillApply:      http.StatusConflict,
	} {
		if got := code.Status(); got != want {
			t.Errorf("%s: %d, want %d", code, got, want)
		}
	}
}

// TestCodeIsAnError: a Code is its own sentinel, matched through %w
// wrapping, and formats as the code whether printed as a string or an
// error.
func TestCodeIsAnError(t *testing.T) {
	var err error = fencegate.CodeStaleOwner
	wrapped := fmt.Errorf("write: %w", err)
	if !errors.Is(wrapped, fencegate.CodeStaleOwner) || errors.Is(wrapped, fencegate.CodeSegmentGap) {
		t.Fatalf("errors.Is through %%w: %v", wrapped)
	}
	if err.Error() != "STALE_OWNER" || fmt.Sprintf("%s %v", fencegate.CodeStaleOwner, err) != "STALE_OWNER STALE_OWNER" {
		t.Fatalf("Error() = %q", err.Error())
	}
}
