package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

// app is what every command shares: the global flags and the streams.
type app struct {
	output         string // -o: text or json
	stdout, stderr io.Writer
}

// format is the output format; an invalid -o value reports in text.
func (a *app) format() string {
	if a.output == "json" {
		return "json"
	}
	return "text"
}

// json reports whether results are printed as JSON.
func (a *app) json() bool { return a.output == "json" }

// flagError marks a flag parsing failure (cobra's are plain errors).
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe) || strings.HasPrefix(err.Error(), "unknown command ")
}

// newRootCmd builds the whole command tree: each subcommand comes from
// the newXCmd of its own file.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "fencegate",
		Short: "Fenced grants for legacy HTTP services: a lock registry, a sidecar proxy and their CLI",
		Long: `fencegate issues signed grants (lockGrant.v1) with per-resource monotonic fence
tokens from its registry, and its sidecar forwards a write to a legacy HTTP
service only when the write's grant is authentic, held and its fence fits.

Exit codes are documented in docs/cli.md: 0 ok, 1 failure, 2 bad input,
3 held by another owner, 4 unreachable, 5 not held, 6 not found,
7 credentials, 8 grant rejected, 75 ownership lost (grant run).`,
		Version:                    versionLine(buildinfo.Read()),
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if a.output != "text" && a.output != "json" {
				return usagef(cmd, "-o/--output must be text or json, not %q", a.output)
			}
			return nil
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "text", "output format: text or json (results on stdout; errors as one JSON object on stderr)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	root.AddCommand(
		newRegistryCmd(a),
		newProxyCmd(a),
		newGrantCmd(a),
		newKeysCmd(a),
		newTrustCmd(a),
		newStoreCmd(a),
		newReceiptsCmd(a),
		newReconcileCmd(a),
		newResumeCmd(a),
		newFencesCmd(a),
		newLeaseCmd(a),
		newAdminCmd(a),
		newCampaignCmd(a),
		newDemoCmd(a),
		newVersionCmd(a),
	)
	return root
}

// groupCmd is a command that only holds subcommands: without one, or
// with an unknown one, it is a usage error naming the closest.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:                   use,
		Short:                 short,
		Args:                  cobra.ArbitraryArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef(cmd, "a subcommand is required: %s", subNames(cmd))
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usageErr(cmd, errors.New(msg))
		},
	}
	c.SuggestionsMinimumDistance = 2
	c.AddCommand(subs...)
	return c
}

// subNames lists cmd's subcommands.
func subNames(cmd *cobra.Command) string {
	var n []string
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			n = append(n, s.Name())
		}
	}
	return strings.Join(n, ", ")
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef(cmd, "unexpected arguments: %q", args)
	}
	return nil
}
