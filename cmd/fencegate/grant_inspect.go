package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/verify"
)

type grantInspectOpts struct {
	conn         connFlags
	jwks, file   string
	hs256, withS bool
}

func newGrantInspectCmd(a *app) *cobra.Command {
	var o grantInspectOpts
	c := &cobra.Command{
		Use:   "inspect [--jwks FILE] [--file F | TOKEN | -] [--status]",
		Short: "verify a grant and print its claims",
		Long: `Verify a grant's signature against a trust bundle (--jwks, or the registry's
published /.well-known/jwks.json) and print its claims; --status also asks
the registry for its current state. A grant that does not verify exits 8.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 || (len(args) == 1 && o.file != "") {
				return usagef(cmd, "give one token, '-', or --file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return grantInspect(cmd, a, &o, args) },
	}
	o.conn.add(c.Flags(), false)
	f := c.Flags()
	f.StringVar(&o.jwks, "jwks", "", "trust bundle file (default: fetch the registry's /.well-known/jwks.json)")
	f.StringVar(&o.file, "file", "", "read the grant from this file")
	f.BoolVar(&o.hs256, "allow-hs256", false, "accept HS256 (MAC) grants; the bundle then holds the shared secret")
	f.BoolVar(&o.withS, "status", false, "also ask the registry for the grant's current status")
	return c
}

// readToken reads the grant: --file, the argument, or stdin ("-" or none).
func readToken(cmd *cobra.Command, file string, args []string) ([]byte, error) {
	var raw []byte
	var err error
	switch {
	case file != "":
		raw, err = os.ReadFile(file)
	case len(args) == 1 && args[0] != "-":
		raw = []byte(args[0])
	default:
		raw, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
	}
	if err != nil {
		return nil, withExit(exitUsage, fmt.Errorf("reading the grant: %w", err), "")
	}
	return []byte(strings.TrimSpace(string(raw))), nil
}

func grantInspect(cmd *cobra.Command, a *app, o *grantInspectOpts, args []string) error {
	token, err := readToken(cmd, o.file, args)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	bundle, err := trustBundle(ctx, o.jwks, &o.conn, o.hs256)
	if err != nil {
		return err
	}
	g, digest, err := verify.ParseAndVerifyGrant(token, bundle)
	if err != nil {
		return withExit(exitRejected, fmt.Errorf("grant rejected: %w", err), "")
	}
	var lease *client.Lease
	if o.withS {
		c, err := o.conn.client()
		if err != nil {
			return err
		}
		if lease, err = c.StatusByDigest(ctx, digest); err != nil {
			return callFailed(err, o.conn.target(), "")
		}
	}
	out := cmd.OutOrStdout()
	if a.json() {
		v := map[string]any{"verified": true, "grantDigest": digest, "claims": g}
		if lease != nil {
			v["state"], v["status"] = lease.State, lease.Status
		}
		return printJSON(out, v)
	}
	fw := newFieldWriter(out)
	row := fw.row
	row("schema", g.Schema)
	row("resource", g.Resource)
	row("owner", g.Owner)
	row("lease", g.Lease)
	row("fenceToken", g.FenceToken)
	row("backendRevision", g.BackendRevision)
	row("policyGeneration", g.PolicyGeneration)
	row("operationRoot", g.OperationRoot)
	row("issuerEpoch", g.IssuerEpoch)
	row("grantProof", digest+" (signature verified)")
	if lease != nil { // the original design's order first: statusProof and state follow grantProof
		st, err := verify.ParseAndVerifyStatus([]byte(lease.Status), bundle)
		if err != nil {
			return withExit(exitRejected, fmt.Errorf("the registry's status proof does not verify: %w", err), "")
		}
		row("statusProof", fmt.Sprintf("%s@revision-%d (signed, valid until %s)", st.State, st.BackendRevision,
			time.UnixMilli(int64(st.ExpiresAt)).UTC().Format(time.RFC3339Nano)))
		row("state", st.State)
	}
	row("requestId", g.RequestID)
	row("grantId", g.GrantID)
	row("opClass", g.OpClass)
	row("ttlMs", g.TTLMs)
	row("issuedAt", time.UnixMilli(int64(g.IssuedAt)).UTC().Format(time.RFC3339Nano))
	row("iss", g.Issuer)
	return fw.flush()
}
