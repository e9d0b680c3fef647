package charts_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fencegate/fencegate/inject"
)

// The operator guide's sections whose commands this test runs, or names
// as needing a cluster.
var guideSections = []string{"## Install on an empty cluster", "## Add the sidecar to an existing Deployment", "## Inject the sidecar with the webhook"}

// guideBlocks returns the sh commands (continuation lines joined, trailing
// comments dropped) and the YAML files (a block whose first line is
// "# NAME.yaml") of the guide's sections.
func guideBlocks(t *testing.T) (cmds []string, files, excerpts map[string]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, excerpts = map[string]string{}, map[string]string{}
	in, lang := false, ""
	var block []string
	section := false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			section = false
			for _, s := range guideSections {
				section = section || line == s
			}
		}
		switch {
		case !section:
		case !in && strings.HasPrefix(line, "```"):
			in, lang, block = true, strings.TrimPrefix(line, "```"), nil
		case in && line == "```":
			in = false
			switch lang {
			case "sh":
				cmds = append(cmds, joinLines(block)...)
			case "yaml":
				if m := regexp.MustCompile(`^# ([a-z0-9-]+\.yaml)$`).FindStringSubmatch(block[0]); m != nil {
					files[m[1]] = strings.Join(block, "\n") + "\n"
				} else if strings.HasPrefix(block[0], "# ") {
					excerpts[strings.TrimPrefix(block[0], "# ")] = strings.Join(block, "\n") + "\n"
				}
			}
		case in:
			block = append(block, line)
		}
	}
	return cmds, files, excerpts
}

var trailingComment = regexp.MustCompile(`\s+#\s.*$`)

func joinLines(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`)
			continue
		}
		cur += l
		if c := strings.TrimSpace(trailingComment.ReplaceAllString(cur, "")); c != "" {
			out = append(out, c)
		}
		cur = ""
	}
	return out
}

// needsCluster are the commands that talk to a cluster, an outside
// registry or a running process; each is named, so a new command in the
// guide fails this test until it is run here or added to this list.
var needsCluster = []*regexp.Regexp{
	regexp.MustCompile(`^kind load docker-image `),
	regexp.MustCompile(`^docker (tag|push) `),
	regexp.MustCompile(`^helm repo add `),
	regexp.MustCompile(`^helm install cert-manager jetstack/`),
	regexp.MustCompile(`^kubectl (-n [a-z-]+ )?(rollout|port-forward|label|get|delete) `),
	regexp.MustCompile(`^curl `),
	regexp.MustCompile(`^fencegate grant acquire `),
}

// TestOperatorGuide runs the install and injection commands of
// docs/operations.md that can run without a cluster, in order, in one
// directory: `fencegate keys generate` (the real binary), the shell
// pipeline, `kubectl create` with --dry-run=client (when kubectl is on
// PATH) and the objects it prints through the validator, `kubectl apply
// -f` files through the validator, and every `helm install` / `helm
// upgrade` of ./charts/fencegate as `helm template` with the guide's own
// values files, validated like the chart's scenarios. The docker build
// line is TestDockerfileBuild's (cmd/fencegate); here its tag must be the
// chart's default image.
func TestOperatorGuide(t *testing.T) {
	tl := needTools(t)
	cmds, files, excerpts := guideBlocks(t)
	if len(cmds) < 10 || len(files) < 3 {
		t.Fatalf("found %d commands and %d values files in the guide", len(cmds), len(files))
	}
	work := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := &guide{t: t, tl: tl, dir: work, rendered: map[string][]object{}}
	for _, c := range cmds {
		g.run(c)
	}
	checkPodExcerpt(t, excerpts["the workload's pod template (excerpt)"], g.rendered["billing-fencegate"])
	g.parentValues(excerpts["values.yaml of the workload's chart"])
	if g.helm < 4 {
		t.Errorf("rendered %d helm installs, want the registry, monitoring, injector and sidecar ones", g.helm)
	}
}

type guide struct {
	t    *testing.T
	tl   tools
	dir  string
	fg   string // the fencegate binary, built on first use
	helm int
	// rendered are the objects of each release the guide installs.
	rendered map[string][]object
}

func (g *guide) run(c string) {
	t := g.t
	switch {
	case strings.HasPrefix(c, "docker build "):
		g.checkImageTag(c)
	case strings.HasPrefix(c, "fencegate keys generate "):
		g.shell(strings.Replace(c, "fencegate", g.fencegate(), 1))
	case strings.HasPrefix(c, "head -c 32 /dev/urandom"):
		g.shell(c)
	case regexp.MustCompile(`^kubectl (-n [a-z-]+ )?create `).MatchString(c):
		g.kubectlCreate(c)
	case strings.HasPrefix(c, "kubectl apply -f docs/k8s/"):
		path := filepath.Join("..", strings.Fields(c)[3])
		if out, err := exec.Command(g.tl.validate, path).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	case regexp.MustCompile(`^helm (install|upgrade) [a-z-]+ \./charts/fencegate `).MatchString(c):
		g.helmTemplate(c)
	default:
		for _, re := range needsCluster {
			if re.MatchString(c) {
				t.Logf("needs a cluster, not run: %s", c)
				return
			}
		}
		t.Errorf("the guide's command %q is neither run by this test nor listed in needsCluster", c)
	}
}

func (g *guide) fencegate() string {
	if g.fg == "" {
		g.fg = filepath.Join(g.tl.dir, "bin", "fencegate")
		cmd := goCmd(context.Background(), "..", "build", "-trimpath", "-o", g.fg, "./cmd/fencegate") // as the image's
		if out, err := cmd.CombinedOutput(); err != nil {
			g.t.Fatalf("go build ./cmd/fencegate: %v\n%s", err, out)
		}
	}
	return g.fg
}

func (g *guide) shell(c string) string {
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", c)
	cmd.Dir = g.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Errorf("%s: %v\n%s", c, err, out)
	}
	return string(out)
}

func (g *guide) kubectlCreate(c string) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		g.t.Logf("kubectl is not on PATH, not run: %s", c)
		return
	}
	out := g.shell(c + " --dry-run=client -o yaml")
	path := filepath.Join(g.dir, "kubectl-out.yaml")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		g.t.Fatal(err)
	}
	if strings.Contains(c, " create namespace ") {
		return // the validator has no checks for a Namespace; kubectl made it
	}
	if v, err := exec.Command(g.tl.validate, path).CombinedOutput(); err != nil {
		g.t.Errorf("%s: the object it creates does not validate: %v\n%s", c, err, v)
	}
}

// helmTemplate renders a `helm install|upgrade NAME ./charts/fencegate
// -n NS -f FILE... [--set ...]` with the guide's files.
func (g *guide) helmTemplate(c string) {
	t := g.t
	f := strings.Fields(c)
	args := []string{"template", f[2], chartDir}
	for i := 4; i < len(f); i++ {
		switch f[i] {
		case "-n", "--set":
			args = append(args, f[i], f[i+1])
			i++
		case "-f":
			args = append(args, "-f", filepath.Join(g.dir, f[i+1]))
			i++
		default:
			t.Errorf("%s: flag %s is not one this test passes to helm template", c, f[i])
		}
	}
	manifest, err := runHelm(t, g.tl, args...)
	if err != nil {
		t.Errorf("%s: %v", c, err)
		return
	}
	g.helm++
	validateManifests(t, g.tl, "guide-"+f[2], manifest)
	objs := parseManifests(t, manifest)
	g.rendered[f[2]] = append(g.rendered[f[2]], objs...)
	checkContainerSecurity(t, objs)
	checkConfigs(t, objs)
}

// checkImageTag: the guide's docker build tags the chart's default image.
func (g *guide) checkImageTag(c string) {
	m := regexp.MustCompile(` -t ([^ ]+) \.$`).FindStringSubmatch(c)
	if m == nil {
		g.t.Errorf("%s: no -t NAME:TAG . at its end", c)
		return
	}
	out, err := runHelm(g.t, g.tl, "show", "values", chartDir, "--jsonpath", "{.image.repository}")
	if err != nil {
		g.t.Fatal(err)
	}
	chart, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		g.t.Fatal(err)
	}
	app := regexp.MustCompile(`(?m)^appVersion: "?([^"\n]+)"?$`).FindSubmatch(chart)
	if app == nil {
		g.t.Fatal("Chart.yaml has no appVersion")
	}
	if want := strings.TrimSpace(out) + ":" + string(app[1]); m[1] != want {
		g.t.Errorf("the guide builds %s, the chart's default image is %s", m[1], want)
	}
}

// checkPodExcerpt: the guide's annotated pod template asks the injector
// for exactly what the guide's sidecar release renders (its ConfigMap and
// claim), in annotations the injector accepts.
func checkPodExcerpt(t *testing.T, excerpt string, objs []object) {
	t.Helper()
	if excerpt == "" || len(objs) == 0 {
		t.Fatalf("the guide's pod template excerpt (%d bytes) or the sidecar release (%d objects) is missing", len(excerpt), len(objs))
	}
	var pod struct {
		Metadata struct {
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(excerpt), &pod); err != nil {
		t.Fatalf("the pod template excerpt: %v", err)
	}
	req, err := inject.ParseAnnotations(pod.Metadata.Annotations)
	if err != nil {
		t.Fatalf("the injector refuses the guide's annotations: %v", err)
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.kind()+"/"+o.name()] = true
	}
	if !have["ConfigMap/"+req.ConfigMap] {
		t.Errorf("fencegate.io/config names ConfigMap %s, which the sidecar release does not render", req.ConfigMap)
	}
	if req.Data.Kind == inject.SourceClaim && !have["PersistentVolumeClaim/"+req.Data.Name] {
		t.Errorf("fencegate.io/data names claim %s, which the sidecar release does not render", req.Data.Name)
	}
}

// TestK8sManifests validates every manifest under docs/k8s, and checks
// the guide applies each of them (none is orphaned).
func TestK8sManifests(t *testing.T) {
	tl := needTools(t)
	paths, err := filepath.Glob(filepath.Join("..", "docs", "k8s", "*", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no docs/k8s/*/*.yaml: %v", err)
	}
	cmds, _, _ := guideBlocks(t)
	for _, p := range paths {
		if out, err := exec.Command(tl.validate, p).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", p, err, out)
		}
		rel, _ := filepath.Rel("..", p)
		applied := false
		for _, c := range cmds {
			applied = applied || c == "kubectl apply -f "+filepath.ToSlash(rel)
		}
		if !applied {
			t.Errorf("the operator guide never applies %s", rel)
		}
	}
}

// parentValues renders the fencegate block of the guide's parent-chart
// values.yaml (what the subchart receives) with the chart.
func (g *guide) parentValues(text string) {
	t := g.t
	var parent map[string]any
	if err := yaml.Unmarshal([]byte(text), &parent); err != nil || parent["fencegate"] == nil {
		t.Fatalf("the guide's parent values.yaml has no fencegate block: %v", err)
	}
	sub, err := yaml.Marshal(parent["fencegate"])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(g.dir, "parent-fencegate-values.yaml")
	if err := os.WriteFile(path, sub, 0o600); err != nil {
		t.Fatal(err)
	}
	g.helmTemplate("helm install billing-api ./charts/fencegate -n billing -f parent-fencegate-values.yaml")
}
