package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "print the build: version, VCS revision, Go toolchain",
		Long: `Print the build: version, VCS revision, Go toolchain (fencegate --version
prints the same line). With -o json, a document {version, revision,
modified, goVersion}.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			if asJSON || a.json() {
				return printJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(info))
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "the same as -o json")
	return c
}

// versionLine is the human form: "fencegate v1.2.3 (revision 1c29d75…, go1.26.8)",
// with ", modified" when the checkout had uncommitted changes.
func versionLine(in buildinfo.Info) string {
	mod := ""
	if in.Modified {
		mod = ", modified"
	}
	return fmt.Sprintf("fencegate %s (revision %s%s, %s)", in.Version, in.Revision, mod, in.GoVersion)
}
