package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// placeholder is a "<new kid>" of the docs, a value to fill in.
var placeholder = regexp.MustCompile(`<[^<>]+>`)

// docCommand is one fencegate command line quoted in the docs.
type docCommand struct {
	where string
	args  []string
}

// docCommands collects the command lines of code blocks that run
// fencegate ("fencegate ...", "./fencegate ..."), continuation lines
// joined, cut at the first shell operator or comment.
func docCommands(t *testing.T, files ...string) []docCommand {
	t.Helper()
	start := regexp.MustCompile(`^\s*(?:\$ )?(?:\./)?fencegate ([a-z].*)$`)
	var out []docCommand
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		inCode := false
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inCode = !inCode
				continue
			}
			m := start.FindStringSubmatch(l)
			if !inCode || m == nil {
				continue
			}
			line, at := m[1], i+1
			for strings.HasSuffix(strings.TrimSpace(line), `\`) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(strings.TrimSpace(line), `\`) + " " + lines[i]
			}
			line = placeholder.ReplaceAllString(line, "PLACEHOLDER")
			if j := strings.IndexAny(line, "#|&;><"); j >= 0 {
				line = line[:j]
			}
			out = append(out, docCommand{where: f + ":" + strconv.Itoa(at), args: strings.Fields(line)})
		}
	}
	return out
}

// TestDocsCommandsParse: every fencegate command line of the README and
// the docs names a command that exists and only flags it has (with
// values that parse): the docs and the CLI do not drift apart.
func TestDocsCommandsParse(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	charts, _ := filepath.Glob(filepath.Join(repoRoot, "charts", "fencegate", "*.md"))
	files = append(append(files, docs...), charts...)
	cmds := docCommands(t, files...)
	if len(cmds) < 20 {
		t.Fatalf("found only %d fencegate command lines in the docs", len(cmds))
	}
	for _, dc := range cmds {
		root := newRootCmd(&app{stdout: &strings.Builder{}, stderr: &strings.Builder{}})
		root.InitDefaultHelpCmd()
		root.InitDefaultCompletionCmd()
		cmd, rest, err := root.Find(dc.args)
		if err != nil || cmd == root {
			t.Errorf("%s: fencegate %s: no such command (%v)", dc.where, strings.Join(dc.args, " "), err)
			continue
		}
		if cmd.HasSubCommands() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			t.Errorf("%s: fencegate %s: %q is not a subcommand of %s", dc.where, strings.Join(dc.args, " "), rest[0], cmd.CommandPath())
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil && !errors.Is(err, pflag.ErrHelp) {
			t.Errorf("%s: fencegate %s: %v", dc.where, strings.Join(dc.args, " "), err)
		}
	}
}
