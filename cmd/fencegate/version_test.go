package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

// TestVersionCommand: the human line and the --json document both say what
// buildinfo.Read says. (The stamped build is TestDockerfileBuild's.)
func TestVersionCommand(t *testing.T) {
	want := buildinfo.Read()
	var out strings.Builder
	if err := runVersion(context.Background(), nil, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != versionLine(want)+"\n" {
		t.Errorf("version = %q, want %q", got, versionLine(want)+"\n")
	}
	if !strings.HasPrefix(out.String(), "fencegate "+want.Version+" (revision ") {
		t.Errorf("version line %q does not start with the version", out.String())
	}
	out.Reset()
	if err := runVersion(context.Background(), []string{"--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out.String())
	}
	if got != want {
		t.Errorf("version --json = %+v, want %+v", got, want)
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
	var ee *exitError
	err := runVersion(context.Background(), []string{"extra"}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("version extra: %v, want unexpected arguments", err)
	}
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("version extra: %v, want exit code 2", err)
	}
}
