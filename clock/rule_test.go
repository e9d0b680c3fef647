package clock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbiddenTime are the functions of package time that read the process's
// clock. Outside package clock, non-test code takes a clock.Clock instead.
var forbiddenTime = map[string]bool{
	"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
	"NewTimer": true, "NewTicker": true, "Tick": true, "Sleep": true,
}

// TestNoDirectTimeOutsideClock parses every non-test .go file of the
// module and fails on any use (a call or a function value) of a forbidden
// time function outside the directory of package clock.
func TestNoDirectTimeOutsideClock(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	allowed := filepath.Join(root, "clock")
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || filepath.Dir(path) == allowed {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, v := range timeUses(f) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s:%d: time.%s outside package clock: take a clock.Clock", rel, fset.Position(v.Pos()).Line, v.Sel.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned only %d files: is %s the module root?", files, root)
	}
}

// timeUses returns the selectors naming a forbidden time function in f,
// whatever name the file imports package time under.
func timeUses(f *ast.File) []*ast.SelectorExpr {
	var names []string
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			switch {
			case imp.Name == nil:
				names = append(names, "time")
			case imp.Name.Name != "_" && imp.Name.Name != ".":
				names = append(names, imp.Name.Name)
			}
		}
	}
	var uses []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || !forbiddenTime[sel.Sel.Name] {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && containsName(names, id.Name) {
			uses = append(uses, sel)
		}
		return true
	})
	return uses
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// TestTimeUsesSeesAliasesAndValues: the scan finds calls, function values
// and aliased imports, and leaves other time functions and shadowing-free
// lookalikes alone.
func TestTimeUsesSeesAliasesAndValues(t *testing.T) {
	src := `package p
import (
	"time"
	tm "time"
)
var f = time.Now
func g() {
	time.Sleep(1)
	tm.NewTicker(2)
	_ = time.Duration(3)
	_ = time.Unix(0, 0)
	var x struct{ Now func() }
	x.Now()
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range timeUses(f) {
		got = append(got, s.Sel.Name)
	}
	if strings.Join(got, ",") != "Now,Sleep,NewTicker" {
		t.Errorf("found %v, want Now, Sleep, NewTicker", got)
	}
}
