package main

// The image carries the injector beside fencegate: these tests run the
// Dockerfile's build-injector stage's go build line (no Docker engine runs
// in CI) and check that the runtime stage copies its output.

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dockerfileStage returns the instructions of the stage named name,
// continuation lines joined and comments dropped.
func dockerfileStage(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stage []string
	in := false
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		tr := strings.TrimSpace(line)
		if strings.HasPrefix(tr, "#") || tr == "" && cur.Len() == 0 {
			continue
		}
		if strings.HasSuffix(tr, `\`) {
			cur.WriteString(strings.TrimSuffix(tr, `\`) + " ")
			continue
		}
		cur.WriteString(tr)
		full := cur.String()
		cur.Reset()
		if strings.HasPrefix(full, "FROM ") {
			in = strings.HasSuffix(full, " AS "+name)
		}
		if in {
			stage = append(stage, full)
		}
	}
	if len(stage) == 0 {
		t.Fatalf("the Dockerfile has no stage %s", name)
	}
	return stage
}

// words splits a build line: words, "..." quoting, ${NAME} from vars.
func words(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	if strings.ContainsAny(s, ";&|<>`()'*?") {
		t.Fatalf("RUN %s: shell syntax this test does not run", s)
	}
	s = regexp.MustCompile(`\$\{([A-Z_]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
		v, ok := vars[m[2:len(m)-1]]
		if !ok {
			t.Fatalf("RUN %s: %s is no ARG of the stage", s, m)
		}
		return v
	})
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, c := range s {
		switch {
		case c == '"':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestDockerfileBuildsInjector runs the build-injector stage's go build
// line with VERSION and REVISION set, checks the binary is static and
// prints the stamped version, and that the runtime stage copies it.
func TestDockerfileBuildsInjector(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	const version, revision = "v0.0.0-injector-test", "0123456789abcdef"
	vars := map[string]string{}
	var line []string
	for _, in := range dockerfileStage(t, "build-injector") {
		cmd, args, _ := strings.Cut(in, " ")
		switch cmd {
		case "ARG":
			name, _, _ := strings.Cut(args, "=")
			vars[name] = map[string]string{"VERSION": version, "REVISION": revision}[name]
		case "RUN":
			if line != nil {
				t.Fatal("more than one RUN in the build-injector stage")
			}
			line = words(t, args, vars)
		}
	}
	if len(line) < 3 || line[0] != "CGO_ENABLED=0" || line[1] != "go" || line[2] != "build" {
		t.Fatalf("build line %q, want CGO_ENABLED=0 go build ...", line)
	}
	bin := filepath.Join(t.TempDir(), "fencegate-injector")
	// -trimpath is checked, not passed: it changes every package's build
	// ID, so a cold cache would compile client-go and controller-runtime
	// afresh (minutes on CI's two cores); the ldflags stamp only the link.
	var args []string
	trimpath := false
	for _, a := range line[2:] {
		if a == "-trimpath" {
			trimpath = true
			continue
		}
		args = append(args, a)
	}
	if !trimpath {
		t.Error("the build line has no -trimpath (the image would carry the builder's paths)")
	}
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			if args[i+1] != "/out/fencegate-injector" {
				t.Errorf("builds %s, the runtime stage copies /out/fencegate-injector", args[i+1])
			}
			args[i+1] = bin
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The image's build context has no .git (.dockerignore): -buildvcs=false
	// builds as it does there, so the stamped revision is the one printed
	// (in a clone the VCS stamp would win over the -ldflags one).
	args = append(args[:1:1], append([]string{"-buildvcs=false"}, args[1:]...)...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the injector is dynamically linked; distroless static has no loader")
		}
	}
	f.Close()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), version) || !strings.Contains(string(out), revision) {
		t.Errorf("--version: %q, %v; want %s and %s", out, err, version, revision)
	}
	runtime := dockerfileStage(t, "runtime")
	found := false
	for _, in := range runtime {
		found = found || in == "COPY --from=build-injector /out/fencegate-injector /usr/local/bin/fencegate-injector"
	}
	if !found {
		t.Error("the runtime stage does not copy the injector to /usr/local/bin/fencegate-injector")
	}
}
