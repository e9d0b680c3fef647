package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpAtEveryLevel: every command of the tree, groups (grant, keys,
// store, trust, lease, admin, ...) and leaves alike, prints its help on
// stdout and exits 0, nothing on stderr, whether asked as
// `fencegate <path> --help`, `-h` or `fencegate help <path>`; and the
// help is the command's own (its usage line names its path), not the
// root's. A group command that took --help for an unknown subcommand
// (exit 2 on stderr, issue 21) fails it.
func TestHelpAtEveryLevel(t *testing.T) {
	root := newRootCmd(&app{stdout: &strings.Builder{}, stderr: &strings.Builder{}})
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || !sub.IsAvailableCommand() {
				continue
			}
			p := append(append([]string(nil), path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	if len(paths) < 30 {
		t.Fatalf("found only %d commands in the tree", len(paths))
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		for _, args := range [][]string{
			append(append([]string(nil), p...), "--help"),
			append(append([]string(nil), p...), "-h"),
			append([]string{"help"}, p...),
		} {
			r := runCLI(t, args...)
			if r.code != exitOK || r.stderr != "" {
				t.Errorf("fencegate %s: exit %d, stderr %q; want 0 and nothing on stderr", strings.Join(args, " "), r.code, r.stderr)
				continue
			}
			if !strings.Contains(r.stdout, "Usage:\n  fencegate "+name) {
				t.Errorf("fencegate %s: stdout is not %s's help:\n%s", strings.Join(args, " "), name, r.stdout)
			}
		}
	}
}
