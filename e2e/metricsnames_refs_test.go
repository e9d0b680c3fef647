package e2e

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// The observability files the chart ships, and the guide their alerts
// link to, relative to this package.
var (
	alertsPath    = filepath.Join("..", "charts", "fencegate", "files", "alerts.yaml")
	dashboardPath = filepath.Join("..", "charts", "fencegate", "files", "dashboard.json")
	opsGuidePath  = filepath.Join("..", "docs", "operations.md")
	codeGoPath    = filepath.Join("..", "code.go")
)

// runbookPrefix is what every alert's runbook_url starts with; the rest
// is an anchor of docs/operations.md.
const runbookPrefix = "https://github.com/fencegate/fencegate/blob/main/docs/operations.md#"

// alertRules is the PrometheusRule spec of alerts.yaml.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadAlerts(t *testing.T) alertRules {
	t.Helper()
	raw, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	var a alertRules
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("%s: %v", alertsPath, err)
	}
	if len(a.Groups) == 0 {
		t.Fatalf("%s: no groups", alertsPath)
	}
	return a
}

// dashPanel is the part of a Grafana panel the checks read.
type dashPanel struct {
	ID         *int        `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *dashSource `json:"datasource"`
	Panels     []dashPanel `json:"panels"`
	Targets    []struct {
		Expr       string      `json:"expr"`
		Datasource *dashSource `json:"datasource"`
	} `json:"targets"`
}

type dashSource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardModel struct {
	Title         string      `json:"title"`
	UID           string      `json:"uid"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboardModel {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardModel
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels is every panel, rows' nested panels included.
func (d dashboardModel) allPanels() []dashPanel {
	var out []dashPanel
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// queries is every PromQL text of the dashboard: panel targets and the
// template variables' queries.
func (d dashboardModel) queries() []string {
	var out []string
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			out = append(out, v.Definition, string(v.Query))
		}
	}
	return out
}

// metricNameRE finds fencegate metric names in PromQL: a name starts where
// no identifier character (letters, digits, _ or :) precedes it, so a
// longer identifier that merely contains "fencegate_" is not taken, and it
// runs as far as metric-name characters go.
var metricNameRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_:])(fencegate_[A-Za-z0-9_:]+)`)

// metricNames returns the fencegate metric names the expressions refer to.
func metricNames(exprs ...string) []string {
	set := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricNameRE.FindAllStringSubmatch(e, -1) {
			set[m[1]] = true
		}
	}
	return sortedNames(set)
}

// alertExprs is every expression of alerts.yaml.
func alertExprs(a alertRules) []string {
	var out []string
	for _, g := range a.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

// scrapedFamilies reads a Prometheus text exposition and returns each
// metric family's name with its type (from the # TYPE lines).
func scrapedFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Fatalf("scrape %s: %d %s", url, resp.StatusCode, b)
	}
	fams := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			fams[f[2]] = f[3]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

// exposed reports whether the name a query uses is in the scrape: a family
// itself, or the _bucket, _sum or _count series of a histogram or summary.
func exposed(fams map[string]string, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if typ := fams[base]; typ == "histogram" || (typ == "summary" && suf != "_bucket") {
				return true
			}
		}
	}
	return false
}

// markdownAnchors returns the GitHub anchors of a Markdown file's headings
// (outside fenced code blocks): lower case, punctuation but '-' and '_'
// dropped, spaces turned into '-'.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors[slug(title)] = true
	}
	return anchors
}

// slug is GitHub's heading anchor of title.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// problemCodes returns the string values of every constant of type Code
// in code.go.
func problemCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), codeGoPath, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					c, _ := strconv.Unquote(lit.Value)
					codes = append(codes, c)
				}
			}
		}
	}
	if len(codes) < 30 {
		t.Fatalf("found only %d codes in %s: the parse is broken", len(codes), codeGoPath)
	}
	return codes
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
