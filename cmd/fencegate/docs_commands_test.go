package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// placeholder is a "<new kid>" of the docs, a value to fill in.
var placeholder = regexp.MustCompile(`<[^<>]+>`)

// docCommand is one fencegate command line quoted in the docs.
type docCommand struct {
	where   string // file:line
	heading string // the "## " section it is in
	// text is the command after "fencegate " as the doc writes it
	// (continuation lines joined, placeholders kept), cut at the first
	// shell operator or comment outside quotes and placeholders; tail is
	// what was cut ("> jwks.json   # public halves only").
	text, tail string
	// env holds the NAME=VALUE assignments of the block's export lines
	// above the command.
	env []string
	// args are text's shell words, each placeholder "PLACEHOLDER".
	args []string
}

// docCommands collects the command lines of code blocks that run
// fencegate ("fencegate ...", "./fencegate ..."), continuation lines
// joined, cut at the first shell operator or comment.
func docCommands(t *testing.T, files ...string) []docCommand {
	t.Helper()
	var out []docCommand
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, commandsOf(f, strings.Split(string(b), "\n"))...)
	}
	return out
}

var (
	docCommandStart = regexp.MustCompile(`^\s*(?:\$ )?(?:\./)?fencegate ([a-z].*)$`)
	docExport       = regexp.MustCompile(`^\s*export (.*)$`)
)

// commandsOf is docCommands of one file's lines.
func commandsOf(f string, lines []string) []docCommand {
	var out []docCommand
	var env []string
	inCode, heading := false, ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "```"):
			inCode, env = !inCode, nil
			continue
		case !inCode && strings.HasPrefix(l, "## "):
			heading = strings.TrimPrefix(l, "## ")
			continue
		case inCode && docExport.MatchString(l):
			assigns, _ := cutShell(docExport.FindStringSubmatch(l)[1])
			env = append(env, docWords(assigns)...)
			continue
		}
		m := docCommandStart.FindStringSubmatch(l)
		if !inCode || m == nil {
			continue
		}
		line, at := m[1], i+1
		for strings.HasSuffix(strings.TrimSpace(line), `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(strings.TrimSpace(line), `\`) + " " + strings.TrimSpace(lines[i])
		}
		text, tail := cutShell(line)
		text = strings.Join(strings.Fields(text), " ") // one space between words, as joined lines read
		out = append(out, docCommand{where: f + ":" + strconv.Itoa(at), heading: heading, text: text, tail: strings.TrimSpace(tail),
			env: slices.Clone(env), args: docWords(placeholder.ReplaceAllString(text, "PLACEHOLDER"))})
	}
	return out
}

// cutShell cuts line at its first shell operator or comment (# | & ; > <)
// outside quotes and outside a "<placeholder>".
func cutShell(line string) (cmd, tail string) {
	spans := placeholder.FindAllStringIndex(line, -1)
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case len(spans) > 0 && i == spans[0][0]:
			i, spans = spans[0][1]-1, spans[1:]
		case c == '\'' || c == '"':
			quote = c
		case strings.IndexByte("#|&;><", c) >= 0:
			return line[:i], line[i:]
		}
	}
	return line, ""
}

// docWords splits s into words as a shell does for plain words and
// single- or double-quoted ones (no escapes, no expansion).
func docWords(s string) []string {
	var words []string
	var w strings.Builder
	var quote byte
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
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
