package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/proxy/authn"
)

// The trust subcommands talk to a sidecar's admin API: the pins of its
// fenced store and its trust bundle file (docs/design.md, trust rotation).

const trustUsage = "usage: fencegate trust list [--json] | accept --kid K [--thumbprint T] [--reason TEXT] | reload [--force]"

func trustCommand(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return &exitError{2, errors.New(trustUsage)}
	}
	switch args[0] {
	case "reload":
		return trustReload(ctx, args[1:], out)
	case "accept":
		return trustAccept(ctx, args[1:], out)
	case "list":
		return trustList(ctx, args[1:], out)
	}
	return &exitError{2, fmt.Errorf("unknown trust command %q; %s", args[0], trustUsage)}
}

func trustReload(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("trust reload", "[--force]")
	var a adminFlags
	a.add(fs)
	force := fs.Bool("force", false, "drop keys even when grants signed by them may still be held (logged by the sidecar)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	return a.call(ctx, http.MethodPost, "/v1/trust/reload", map[string]bool{"force": *force}, out)
}

func trustAccept(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("trust accept", "--kid K [--thumbprint T] [--reason TEXT]")
	var a adminFlags
	a.add(fs)
	kid := fs.String("kid", "", "kid of the key of the sidecar's trust bundle file to pin (trust)")
	tp := fs.String("thumbprint", "", "its RFC 7638 thumbprint as its owner published it (fencegate trust list shows the file's): refused if the file's key has another")
	reason := fs.String("reason", "", "why (kept with the pin, logged)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *kid == "" {
		return &exitError{2, errors.New("--kid is required")}
	}
	return a.call(ctx, http.MethodPost, "/v1/trust/accept", adminapi.TrustAcceptRequest{Kid: *kid, Thumbprint: *tp, Reason: *reason}, out)
}

func trustList(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("trust list", "[--json]")
	var a adminFlags
	a.add(fs)
	asJSON := fs.Bool("json", false, "print the admin API's JSON answer")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := a.call(ctx, http.MethodGet, "/v1/trust", nil, &buf); err != nil {
		return err
	}
	if *asJSON {
		_, err := out.Write(buf.Bytes())
		return err
	}
	var l authn.TrustList
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil {
		return fmt.Errorf("trust list: %w", err)
	}
	return printTrustList(out, l)
}

// printTrustList prints the bundle file's description and a table of the
// keys.
func printTrustList(out io.Writer, l authn.TrustList) error {
	fw := newFieldWriter(out)
	fw.row("bundle", l.Bundle.Path)
	fw.row("sha256", l.Bundle.SHA256)
	if l.Bundle.Signed {
		fw.row("signed by", l.Bundle.SignedBy)
		fw.row("issued at", stamp(l.Bundle.IssuedAt))
		fw.row("expires at", stamp(l.Bundle.ExpiresAt))
	} else {
		fw.row("signed", "no")
	}
	fw.row("signed-bundle watermark", l.Bundle.BundleSeq)
	if err := fw.flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tTHUMBPRINT\tALG\tSTATE\tHOW\tPINNED AT\tIN USE UNTIL")
	for _, k := range l.Keys {
		how := string(k.How)
		if how == "" {
			how = "-"
		}
		state := k.State
		if k.PinnedThumbprint != "" {
			state += " (pinned as " + k.PinnedThumbprint + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Kid, k.Thumbprint, k.Alg, state, how, stamp(k.PinnedAt), stamp(k.InUseUntil))
	}
	return tw.Flush()
}

// stamp formats t in UTC to the second, "-" when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
