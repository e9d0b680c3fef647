package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestExitCodesDocumented: docs/cli.md's exit-code table is exactly the
// exit codes of exitcodes.go, each with its class.
func TestExitCodesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Exit codes\n")
	if !ok {
		t.Fatal("docs/cli.md has no Exit codes section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([a-z-]+)` \\|")
	documented := map[int]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		code, _ := strconv.Atoi(m[1])
		if _, dup := documented[code]; dup {
			t.Errorf("exit code %d documented twice", code)
		}
		documented[code] = m[2]
	}
	for code, class := range exitClass {
		if documented[code] != class {
			t.Errorf("exit code %d (%s) documented as %q", code, class, documented[code])
		}
	}
	for code := range documented {
		if _, ok := exitClass[code]; !ok {
			t.Errorf("docs/cli.md documents exit code %d, which the command does not have", code)
		}
	}
}

// TestReadmeLinksCLIReference: the README points to docs/cli.md.
func TestReadmeLinksCLIReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "(docs/cli.md)") {
		t.Error("README.md does not link docs/cli.md")
	}
}
