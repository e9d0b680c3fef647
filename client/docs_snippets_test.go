package client_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The Go snippets of the user docs must compile as written: every ```go
// block of these files is built and vetted (go vet, which type-checks:
// an unused variable fails) in a module of its own that depends on this
// one through a replace directive, exactly as docs/sdk.md tells users to
// depend on the module before it is published.
var snippetDocs = []string{"../README.md", "../docs/sdk.md"}

// snippetGiven are the names a snippet may use without declaring them:
// what the surrounding worker code has (a context, the worker's mTLS
// transport, a request and its body, ...) and what an earlier snippet of
// the same guide declared (h, tr). Each becomes a parameter of the
// function the snippet is the body of, when the snippet uses it and does
// not declare it itself.
var snippetGiven = map[string]string{
	"ctx":           "context.Context",
	"err":           "error",
	"reg":           "*client.Client",
	"h":             "*client.Holder",
	"tr":            "*client.Transport",
	"hc":            "*http.Client",
	"mtlsTransport": "http.RoundTripper",
	"req":           "*http.Request",
	"resp":          "*http.Response",
	"body":          "io.Reader",
	"url":           "string",
	"chunks":        "[]string",
	"compute":       "func(string) []byte",
	"msg":           "*Message",
	"work":          "func(context.Context) error",
}

// snippetImports are the packages a snippet may use (a snippet's own
// import lines must name one of them).
var snippetImports = []string{"bytes", "context", "errors", "fmt", "io", "log", "net/http", "os", "strings", "time",
	"github.com/fencegate/fencegate", "github.com/fencegate/fencegate/client"}

type snippet struct {
	doc  string // path of the markdown file
	line int    // line of the snippet's first line of code
	code string
}

var fence = regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")

// readSnippets returns the ```go blocks of a markdown file, unindented.
func readSnippets(t *testing.T, path string) []snippet {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []snippet
	var cur *snippet
	var indent, prev string
	skip := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil && m[2] == "go" && strings.HasPrefix(prev, "<!-- pgfence/example/"):
			// A whole file of a compiled example package, compared with its
			// source by that package's test: not a snippet of statements.
			cur, indent, skip = &snippet{doc: path, line: n + 1}, m[1], true
		case cur == nil && m != nil && m[2] == "go":
			cur, indent = &snippet{doc: path, line: n + 1}, m[1]
		case cur != nil && m != nil && m[2] == "" && m[1] == indent:
			if !skip {
				out = append(out, *cur)
			}
			cur, skip = nil, false
		case cur != nil:
			cur.code += strings.TrimPrefix(line, indent) + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = strings.TrimSpace(line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: unterminated ```go block", path, cur.line)
	}
	return out
}

// free returns the given names (snippetGiven) that body uses without
// declaring them itself.
func free(t *testing.T, s snippet, body string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package p\nfunc _() {\n"+body+"\n}\n", 0)
	if err != nil {
		t.Fatalf("%s:%d: the snippet is not a list of Go statements: %v", s.doc, s.line, err)
	}
	// Declared: by the snippet's own top-level statements (a name
	// declared in a nested block or a closure shadows a parameter, which
	// compiles either way).
	declared, used := map[string]bool{}, map[string]bool{}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						declared[id.Name] = true
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok {
				for _, sp := range g.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for _, id := range vs.Names {
							declared[id.Name] = true
						}
					}
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(n.X, func(m ast.Node) bool { // not the selected name
				if id, ok := m.(*ast.Ident); ok {
					used[id.Name] = true
				}
				return true
			})
			return false
		case *ast.Ident:
			used[n.Name] = true
		}
		return true
	})
	var out []string
	for name := range snippetGiven {
		if used[name] && !declared[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// source is the Go file a snippet is compiled as: its statements as the
// body of a function whose parameters are the given names it uses.
func source(t *testing.T, s snippet) string {
	t.Helper()
	var body []string
	first := s.line
	for _, l := range strings.Split(strings.TrimRight(s.code, "\n"), "\n") {
		if imp, ok := strings.CutPrefix(strings.TrimSpace(l), "import "); ok && len(body) == 0 {
			path := strings.Trim(imp, `"`)
			if !contains(snippetImports, path) {
				t.Fatalf("%s:%d: the snippet imports %s, which the test does not offer", s.doc, first, path)
			}
			first++
			continue
		}
		if len(body) == 0 && strings.TrimSpace(l) == "" {
			first++
			continue
		}
		body = append(body, l)
	}
	if len(body) == 0 {
		t.Fatalf("%s:%d: an empty Go snippet", s.doc, s.line)
	}
	code := strings.Join(body, "\n")
	var params []string
	for _, name := range free(t, s, code) {
		params = append(params, name+" "+snippetGiven[name])
	}
	abs, err := filepath.Abs(s.doc)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	for _, p := range snippetImports {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n\n// Message is a queue message with headers (a Kafka record ...).\ntype Message struct{ Headers map[string]string }\n\n")
	b.WriteString("var (\n\t_ = bytes.NewReader\n\t_ = context.Background\n\t_ = errors.Is\n\t_ = fmt.Sprint\n\t_ = io.EOF\n\t_ = log.Printf\n" +
		"\t_ = http.MethodPut\n\t_ = os.Exit\n\t_ = strings.NewReader\n\t_ = time.Second\n\t_ = fencegate.HeaderGrant\n\t_ = client.New\n)\n\n")
	end := "\treturn nil\n" // unless the snippet returns itself (vet: unreachable code)
	if strings.HasPrefix(body[len(body)-1], "return ") {
		end = ""
	}
	fmt.Fprintf(&b, "func snippet(%s) error {\n//line %s:%d\n%s\n%s}\n", strings.Join(params, ", "), abs, first, code, end)
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDocSnippetsCompile builds and vets every Go snippet of README.md and
// docs/sdk.md in a module that requires this one by a replace directive.
func TestDocSnippetsCompile(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var snippets []snippet
	for _, doc := range snippetDocs {
		snippets = append(snippets, readSnippets(t, doc)...)
	}
	if len(snippets) < 8 {
		t.Fatalf("found %d Go snippets in %v: the docs lost theirs, or the test its way of finding them", len(snippets), snippetDocs)
	}
	for i, s := range snippets {
		pkg := filepath.Join(dir, fmt.Sprintf("s%02d", i))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(source(t, s)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mod := fmt.Sprintf("module example.com/snippets\n\ngo 1.26\n\nrequire github.com/fencegate/fencegate v0.0.0\n\nreplace github.com/fencegate/fencegate => %s\n", root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	gobin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("the go command is needed to build the snippets: %v", err)
	}
	cmd := exec.Command(gobin, "vet", "./...")
	cmd.Dir = dir
	// Offline, from the module cache this module's own build fills; no
	// workspace of the caller's.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the docs' Go snippets do not compile (%d snippets; positions are the markdown's):\n%s", len(snippets), out)
	}
}
