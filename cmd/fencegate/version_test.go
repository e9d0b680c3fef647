package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

// TestVersionCommand: the human line and the --json document both say what
// buildinfo.Read says. (The stamped build is TestDockerfileBuild's.)
func TestVersionCommand(t *testing.T) {
	want := buildinfo.Read()
	r := runCLI(t, "version")
	if got := r.stdout; got != versionLine(want)+"\n" || r.code != 0 {
		t.Errorf("version = %q (exit %d), want %q", got, r.code, versionLine(want)+"\n")
	}
	if !strings.HasPrefix(r.stdout, "fencegate "+want.Version+" (revision ") {
		t.Errorf("version line %q does not start with the version", r.stdout)
	}
	if v := runCLI(t, "--version"); v.stdout != r.stdout || v.code != 0 {
		t.Errorf("--version = %q (exit %d), want the version command's %q", v.stdout, v.code, r.stdout)
	}
	for _, args := range [][]string{{"version", "--json"}, {"version", "-o", "json"}, {"-o", "json", "version"}} {
		r := runCLI(t, args...)
		var got buildinfo.Info
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r.stdout)
		}
		if got != want {
			t.Errorf("%v = %+v, want %+v", args, got, want)
		}
	}
}

func TestVersionLine(t *testing.T) {
	in := buildinfo.Info{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.8"}
	if got := versionLine(in); got != "fencegate v1.2.3 (revision abc, go1.26.8)" {
		t.Errorf("versionLine = %q", got)
	}
	in.Modified = true
	if got := versionLine(in); got != "fencegate v1.2.3 (revision abc, modified, go1.26.8)" {
		t.Errorf("versionLine (modified) = %q", got)
	}
}

func TestVersionCommandRejectsArguments(t *testing.T) {
	r := runCLI(t, "version", "extra")
	if !strings.Contains(r.stderr, "unexpected arguments") || r.code != exitUsage {
		t.Errorf("version extra: exit %d %q, want unexpected arguments, exit code 2", r.code, r.stderr)
	}
}
