package main

import (
	"context"
	"fmt"
	"io"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

func init() {
	register(command{name: "version", summary: "print the build: version, VCS revision, Go toolchain (--json for a document)", run: runVersion})
}

func runVersion(_ context.Context, args []string, out io.Writer) error {
	fs := newFlags("version", "[--json]")
	asJSON := fs.Bool("json", false, "print a JSON document {version, revision, modified, goVersion}")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	info := buildinfo.Read()
	if *asJSON {
		return printJSON(out, info)
	}
	_, err := fmt.Fprintln(out, versionLine(info))
	return err
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
