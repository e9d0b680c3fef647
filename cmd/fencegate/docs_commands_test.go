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
		out = append(out, commandsOf(f, docLines(t, f))...)
	}
	return out
}

// docLines reads the lines of the doc file f.
func docLines(t *testing.T, f string) []string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

var (
	docCommandStart = regexp.MustCompile(`^\s*(?:\$ )?(?:\./)?fencegate ([a-z].*)$`)
	docExport       = regexp.MustCompile(`^\s*export (.*)$`)
	// docInline is a command quoted in running text: `fencegate trust list`.
	docInline = regexp.MustCompile("`(?:\\./)?fencegate ([a-z][^`]*)`")
	// docMessage is a quoted message: words then a colon.
	docMessage = regexp.MustCompile(`^[a-z -]+: `)
	// docLetter is a value named by capitals in running text.
	docLetter = regexp.MustCompile(`\b([A-Z]{1,2})\b`)
)

// inlineCommands collects the commands quoted in running text (outside
// code blocks) of files: parsed like the blocks' lines, never run.
func inlineCommands(t *testing.T, files ...string) []docCommand {
	t.Helper()
	var out []docCommand
	for _, f := range files {
		inCode := false
		for i, l := range docLines(t, f) {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				continue
			}
			for _, m := range docInline.FindAllStringSubmatch(l, -1) {
				if docMessage.MatchString(m[1]) {
					continue // a message the CLI prints ("fencegate grant acquire: <what happened>")
				}
				text, _ := cutShell(m[1])
				text = strings.TrimSpace(strings.NewReplacer("…", "", "...", "").Replace(text))
				// Running text names a value by a capital letter (--to N,
				// --resource R: "1" parses as a number and as a name), or
				// a flag alone (--sign-with).
				text = docLetter.ReplaceAllString(text, "1")
				if f := strings.Fields(text); len(f) > 0 && strings.HasPrefix(f[len(f)-1], "--") && !strings.Contains(f[len(f)-1], "=") {
					text += " <value>"
				}
				out = append(out, docCommand{where: f + ":" + strconv.Itoa(i+1), text: text,
					args: docWords(placeholder.ReplaceAllString(text, "PLACEHOLDER"))})
			}
		}
	}
	return out
}

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
// the docs, and every fencegate command their running text quotes, names
// a command that exists and only flags it has (with values that parse):
// the docs and the CLI do not drift apart. (docs/operations.md's lines
// are also run, by TestOperationsRunbooks.)
func TestDocsCommandsParse(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	charts, _ := filepath.Glob(filepath.Join(repoRoot, "charts", "fencegate", "*.md"))
	files = append(append(files, docs...), charts...)
	cmds := docCommands(t, files...)
	if len(cmds) < 20 {
		t.Fatalf("found only %d fencegate command lines in the docs", len(cmds))
	}
	inline := inlineCommands(t, files...)
	if len(inline) < 20 {
		t.Fatalf("found only %d fencegate commands quoted in the docs' text", len(inline))
	}
	for _, dc := range append(cmds, inline...) {
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
