package fencegate_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quickstartOutputs finds the files the README's shell blocks make in the
// clone: go build -o FILE, --data ./DIR (and the private key the registry
// generates in it), --grant-out FILE.
var quickstartOutputs = []struct {
	re   *regexp.Regexp
	dir  bool
	name string
}{
	{regexp.MustCompile(`go build -o (\S+)`), false, "go build -o"},
	{regexp.MustCompile(`--data \./(\S+)`), true, "--data"},
	{regexp.MustCompile(`--grant-out (\S+)`), false, "--grant-out"},
}

// TestQuickstartLeftoversIgnored: what the README's shell commands leave
// in a clone (the binary, the registry's data directory with its private
// key, the grant file) and what `helm dependency update` leaves in the
// example parent charts (Chart.lock, charts/) are ignored by git, so a
// build after the quickstart is not stamped +dirty and no key or bearer
// grant is committed by accident. Asked of git itself (check-ignore
// --no-index), so it fails on a .gitignore that misses one.
func TestQuickstartLeftoversIgnored(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH")
	}
	if out, err := exec.Command(gitBin, "rev-parse", "--is-inside-work-tree").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Skip("not in a git work tree")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, block := range shellBlocks(string(readme)) {
		for _, o := range quickstartOutputs {
			for _, m := range o.re.FindAllStringSubmatch(block, -1) {
				p := strings.TrimPrefix(m[1], "./")
				if o.dir {
					paths = append(paths, p+"/", p+"/keys/signing.jwk")
				} else {
					paths = append(paths, p)
				}
			}
		}
	}
	for _, o := range quickstartOutputs {
		if !o.re.MatchString(strings.Join(shellBlocks(string(readme)), "\n")) {
			t.Errorf("README's shell blocks no longer use %s: update this test", o.name)
		}
	}
	parents, err := filepath.Glob("charts/fencegate/examples/*/Chart.yaml")
	if err != nil || len(parents) == 0 {
		t.Fatalf("no example parent chart (%v)", err)
	}
	for _, c := range parents {
		dir := filepath.ToSlash(filepath.Dir(c))
		paths = append(paths, dir+"/Chart.lock", dir+"/charts/", dir+"/charts/fencegate-0.1.0.tgz")
	}
	for _, p := range paths {
		cmd := exec.Command(gitBin, "check-ignore", "-q", "--no-index", p)
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			t.Errorf("%s is not ignored by .gitignore (the quickstart or helm dependency update leaves it behind)", p)
		default:
			t.Fatalf("git check-ignore %s: %v", p, err)
		}
	}
}

// shellBlocks returns the bodies of the ```sh blocks of a markdown text.
func shellBlocks(md string) []string {
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && strings.HasPrefix(line, "```sh"):
			in, cur = true, nil
		case in && strings.HasPrefix(line, "```"):
			in = false
			out = append(out, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return out
}
