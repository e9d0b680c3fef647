package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/proxy/adminapi"
)

// The trust subcommands talk to a sidecar's admin API: the pins of its
// fenced store and its trust bundle file (docs/design.md, trust rotation).

func newTrustCmd(a *app) *cobra.Command {
	var ra adminFlags
	var force bool
	reload := &cobra.Command{
		Use:   "reload [--force]",
		Short: "make the sidecar read its trust bundle file again",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return ra.call(cmd.Context(), http.MethodPost, "/v1/trust/reload", map[string]bool{"force": force}, cmd.OutOrStdout())
		},
	}
	ra.add(reload.Flags())
	reload.Flags().BoolVar(&force, "force", false, "drop keys even when grants signed by them may still be held (logged by the sidecar)")

	var aa adminFlags
	var kid, tp, reason string
	accept := &cobra.Command{
		Use:   "accept --kid K [--thumbprint T] [--reason TEXT]",
		Short: "pin a key of the sidecar's trust bundle file",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kid == "" {
				return usagef(cmd, "--kid is required")
			}
			return aa.call(cmd.Context(), http.MethodPost, "/v1/trust/accept", adminapi.TrustAcceptRequest{Kid: kid, Thumbprint: tp, Reason: reason}, cmd.OutOrStdout())
		},
	}
	aa.add(accept.Flags())
	accept.Flags().StringVar(&kid, "kid", "", "kid of the key of the sidecar's trust bundle file to pin (trust)")
	accept.Flags().StringVar(&tp, "thumbprint", "", "its RFC 7638 thumbprint as its owner published it (fencegate trust list shows the file's): refused if the file's key has another")
	accept.Flags().StringVar(&reason, "reason", "", "why (kept with the pin, logged)")

	var la adminFlags
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "the sidecar's trust bundle file and its keys, as a table (-o json: the admin API's answer)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return trustList(cmd, &la, asJSON || a.json())
		},
	}
	la.add(list.Flags())
	list.Flags().BoolVar(&asJSON, "json", false, "the same as -o json")
	return groupCmd("trust", "the sidecar's trusted keys: trust list | accept --kid K | reload (sidecar admin API)", list, accept, reload)
}

func trustList(cmd *cobra.Command, a *adminFlags, asJSON bool) error {
	var buf bytes.Buffer
	if err := a.call(cmd.Context(), http.MethodGet, "/v1/trust", nil, &buf); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		_, err := out.Write(buf.Bytes())
		return err
	}
	var l authn.TrustList
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil {
		return fmt.Errorf("trust list: %s answered: %w", a.target(), err)
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
