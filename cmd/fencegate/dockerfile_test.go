package main

// No Docker engine runs in CI, so these tests check the container build
// without one: the Dockerfile's Go image is go.mod's toolchain, the context
// .dockerignore leaves carries no .git or key material, and the Dockerfile's
// own go build line, run on exactly that context, yields a static binary
// whose version command prints the stamped version and revision.

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

const repoRoot = "../.."

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// readDockerfile splits the Dockerfile into instructions: comment lines
// (also inside a continuation) dropped, lines ending in \ joined.
func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var ins []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		full := strings.TrimSpace(cur.String())
		cur.Reset()
		if full == "" {
			continue
		}
		cmd, args, _ := strings.Cut(full, " ")
		ins = append(ins, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	return ins
}

// stage is one build stage's instructions, FROM first.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" || len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], in)
	}
	return out
}

func goModVersion(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go line")
	return ""
}

// TestDockerfileGoVersion: the build stage's golang image is go.mod's go
// version exactly (a tag of 1.26 would float to whatever 1.26.x is newest).
func TestDockerfileGoVersion(t *testing.T) {
	want := goModVersion(t)
	found := false
	for _, in := range readDockerfile(t) {
		if in.cmd != "FROM" {
			continue
		}
		image := strings.Fields(in.args)[0]
		name, tag, _ := strings.Cut(image, ":")
		if name != "golang" && !strings.HasSuffix(name, "/golang") {
			continue
		}
		found = true
		if v, _, _ := strings.Cut(tag, "-"); v != want {
			t.Errorf("Dockerfile builds with %s, go.mod says go %s", image, want)
		}
	}
	if !found {
		t.Fatal("Dockerfile has no golang build stage")
	}
}

// TestDockerfileRuntime: the image runs as the distroless nonroot user and
// does not expose the sidecar's admin port (loopback only by default).
func TestDockerfileRuntime(t *testing.T) {
	st := stages(readDockerfile(t))
	final := st[len(st)-1]
	if !strings.HasPrefix(final[0].args, "gcr.io/distroless/static") || !strings.Contains(final[0].args, ":nonroot") {
		t.Errorf("runtime image %q, want distroless static nonroot", final[0].args)
	}
	user := ""
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			for _, p := range strings.Fields(in.args) {
				if strings.HasPrefix(p, "8781") {
					t.Errorf("EXPOSE %s: the sidecar admin port is loopback-only", p)
				}
			}
		case "ENV":
			if !strings.Contains(in.args, "FENCEGATE_LISTEN_HOST=0.0.0.0") {
				t.Errorf("ENV %s: want FENCEGATE_LISTEN_HOST=0.0.0.0", in.args)
			}
		}
	}
	if user != "65532:65532" && user != "nonroot" && user != "nonroot:nonroot" {
		t.Errorf("runtime USER %q, want 65532:65532", user)
	}
}

// ignoreRule is one .dockerignore line, compiled the way Docker's
// patternmatcher does for the syntax used here (*, ?, **, leading !).
type ignoreRule struct {
	re     *regexp.Regexp
	negate bool
}

func readDockerignore(t *testing.T) []ignoreRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var rules []ignoreRule
	for _, line := range strings.Split(string(b), "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if strings.ContainsAny(p, `[]\{}`) {
			t.Fatalf(".dockerignore %q: this test's matcher knows only *, ?, ** and !", line)
		}
		p = strings.TrimPrefix(path.Clean(p), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case c == '*' && i+1 < len(p) && p[i+1] == '*':
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
				}
				if i+1 == len(p) {
					re.WriteString(".*")
				} else {
					re.WriteString("(.*/)?")
				}
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		rules = append(rules, ignoreRule{regexp.MustCompile(re.String()), neg})
	}
	return rules
}

// ignored reports whether Docker leaves rel (slash-separated, relative to
// the context) out: the last rule matching it or one of its parent
// directories decides.
func ignored(rules []ignoreRule, rel string) bool {
	out := false
	parts := strings.Split(rel, "/")
	for _, r := range rules {
		match := false
		for i := len(parts); i > 0 && !match; i-- {
			match = r.re.MatchString(strings.Join(parts[:i], "/"))
		}
		if match {
			out = !r.negate
		}
	}
	return out
}

// keyMaterial is what must never be in the build context.
var keyMaterial = regexp.MustCompile(`(^|/)(\.git(/|$)|fencegate-data(/|$))|\.(pem|key|jwk|jwks)$|(^|/)jwks[^/]*\.json$`)

// TestDockerignore: .git, binaries, data and key material, test and bench
// output and editor files stay out; the module files and sources stay in.
func TestDockerignore(t *testing.T) {
	rules := readDockerignore(t)
	for _, p := range []string{
		".git", ".git/config", ".git/objects/1c/29d75", ".git/hooks/pre-commit.go",
		"fencegate", "bin/fencegate", "cmd/fencegate/fencegate",
		"fencegate-data/bolt.db", "fencegate-data/keys/signing.jwk", "fencegate-data/keys/jwks.json",
		"registry/fencegate-data/keys/signing.go",
		"signing.jwk", "keys/signing.jwk", "jwks.json", "demo/registry/keys/jwks.json",
		"dev.pem", "tls/server.key", "cmd/fencegate/ca.pem", "x/y/z.key.go.pem",
		"cmd/fencegate/fencegate.test", "cover.out", "tmp/x.go",
		"e2e/bench/results.json", "e2e/bench/RESULTS.md", "e2e/harness_test.go", "e2e/bench/main.go",
		"identity/testdata/fuzz/FuzzXFCC/f76ae744aceed499", "store/redis/testdata/rapid/x.fail",
		"registry/registry_test.go", ".ci/run",
		".idea/workspace.xml", ".vscode/settings.json", "cmd/fencegate/.main.go.swp", "main.go~", ".DS_Store",
	} {
		if !ignored(rules, p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "doc.go", "cmd/fencegate/main.go", "internal/buildinfo/buildinfo.go"} {
		if ignored(rules, p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
}

// buildContext copies the repository's files that .dockerignore lets in to
// dir, as `COPY . .` would see them, and returns their paths.
func buildContext(t *testing.T, dir string) []string {
	t.Helper()
	rules := readDockerignore(t)
	var files []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" && ignored(rules, rel) {
				return filepath.SkipDir // checked above; no need to walk it
			}
			return nil
		}
		if !d.Type().IsRegular() || ignored(rules, rel) {
			return nil
		}
		files = append(files, rel)
		return copyFile(p, filepath.Join(dir, filepath.FromSlash(rel)))
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// shellWords splits a RUN line the way sh would for the syntax it may use:
// words, "..." and '...' quoting, and $NAME / ${NAME} from vars (not inside
// single quotes). Anything else a shell would treat specially fails the test,
// so the line run here is the line Docker runs.
func shellWords(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'' && c != '\'':
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			inWord = true
			switch quote {
			case 0:
				quote = c
			case c:
				quote = 0
			default:
				cur.WriteByte(c)
			}
		case c == '$':
			name := ""
			if i+1 < len(s) && s[i+1] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					t.Fatalf("RUN %s: unterminated ${", s)
				}
				name, i = s[i+2:i+end], i+end
			} else {
				j := i + 1
				for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
					j++
				}
				name, i = s[i+1:j], j-1
			}
			v, ok := vars[name]
			if !ok {
				t.Fatalf("RUN %s: $%s is no ARG of the stage", s, name)
			}
			cur.WriteString(v)
			inWord = true
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case quote == 0 && strings.IndexByte(";&|<>`()\\*?~#", c) >= 0:
			t.Fatalf("RUN %s: %q is shell syntax this test does not run", s, c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("RUN %s: unterminated quote", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestDockerfileBuild runs the Dockerfile's go build line on the context
// .dockerignore leaves, with VERSION and REVISION given as build args, and
// runs the binary's version command.
func TestDockerfileBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	const version, revision = "v0.0.0-dockerfile-test", "0123456789abcdef0123456789abcdef01234567"
	buildArgs := map[string]string{"VERSION": version, "REVISION": revision}

	var build []instruction
	for _, st := range stages(readDockerfile(t)) {
		if strings.Contains(st[0].args, "golang:") {
			build = st
		}
	}
	vars := map[string]string{}
	var line string
	for _, in := range build {
		switch in.cmd {
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			vars[name] = def
			if v, ok := buildArgs[name]; ok {
				vars[name] = v
			}
		case "RUN":
			if strings.Contains(in.args, "go build") {
				if line != "" {
					t.Fatal("the build stage has more than one go build")
				}
				line = in.args // sees the ARGs declared above it, as Docker's does
				words := shellWords(t, line, vars)
				runDockerBuild(t, goBin, words, version, revision)
			}
		}
	}
	if line == "" {
		t.Fatal("no go build line in the Dockerfile's build stage")
	}
}

func runDockerBuild(t *testing.T, goBin string, words []string, version, revision string) {
	t.Helper()
	env := []string{}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		env = append(env, words[0])
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("build line %q is not VAR=... go build ...", words)
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("build line env %q: want CGO_ENABLED=0 (the runtime image has no libc)", env)
	}
	ctxDir := t.TempDir()
	files := buildContext(t, ctxDir)
	for _, f := range files {
		if keyMaterial.MatchString(f) {
			t.Errorf("the build context carries %s", f)
		}
	}
	bin := filepath.Join(t.TempDir(), "fencegate")
	args := append([]string(nil), words[2:]...)
	out := -1
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			args[i+1], out = bin, i+1
		}
	}
	if out < 0 {
		t.Fatalf("build line %q has no -o", words)
	}
	// Killed before the test binary's -timeout would leave it running.
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, goBin, append([]string{"build"}, args...)...)
	cmd.Dir = ctxDir
	// The module cache stands in for the image's `go mod download`; no
	// network, no workspace, no GOFLAGS of the caller's.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	cmd.Env = append(cmd.Env, env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build on the .dockerignore context (%d files): %v\n%s", len(files), err, b)
	}

	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary is dynamically linked; distroless static has no loader")
			}
		}
		f.Close()
	}

	human, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("fencegate version: %v", err)
	}
	want := versionLine(buildinfo.Info{Version: version, Revision: revision, GoVersion: runtime.Version()})
	if got := strings.TrimSpace(string(human)); got != want {
		t.Errorf("fencegate version = %q, want %q", got, want)
	}
	js, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("fencegate version --json: %v", err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatalf("version --json: %v\n%s", err, js)
	}
	if got != (buildinfo.Info{Version: version, Revision: revision, GoVersion: runtime.Version()}) {
		t.Errorf("version --json = %+v, want version %s, revision %s (stamped; no .git in the context), %s", got, version, revision, runtime.Version())
	}
}
