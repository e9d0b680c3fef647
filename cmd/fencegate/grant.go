package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/verify"
)

func init() {
	register(command{name: "grant", summary: "acquire, renew, release, look up, inspect grants; run a command under a lease", run: runGrant})
}

const grantUsage = "usage: fencegate grant acquire|lookup|renew|release|status|inspect|run [flags]"

func runGrant(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return &exitError{2, errors.New(grantUsage)}
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "acquire":
		return grantAcquire(ctx, rest, out)
	case "lookup":
		return grantLookup(ctx, rest, out)
	case "renew", "release", "status":
		return grantLeaseOp(ctx, sub, rest, out)
	case "inspect":
		return grantInspect(ctx, rest, out)
	case "run":
		return grantRun(ctx, rest, out)
	}
	return &exitError{2, fmt.Errorf("unknown grant command %q\n%s", sub, grantUsage)}
}

type outputFlags struct {
	format   string
	grantOut string
}

func (o *outputFlags) add(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&o.format, "o", "text", "output: text or json")
	fs.StringVar(&o.grantOut, "grant-out", "", "also write the grant (JWS) to this file, mode 0600")
}

func (o *outputFlags) check() error {
	if o.format != "text" && o.format != "json" {
		return &exitError{2, fmt.Errorf("-o must be text or json, not %q", o.format)}
	}
	return nil
}

func grantAcquire(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("grant acquire", "--resource R [--ttl D] [--wait D] [--request-id ID] [-o json]")
	var conn connFlags
	conn.add(fs)
	var o outputFlags
	o.add(fs)
	resource := fs.String("resource", "", "canonical resource ID (e.g. invoice-batch/2026-07-19)")
	ttl := fs.Duration("ttl", 0, "lease TTL (default: the registry's)")
	wait := fs.Duration("wait", 0, "wait up to this long for the current holder to release or expire")
	reqID := fs.String("request-id", "", "request ID; reuse it to recover a lost answer (default: random)")
	opClass := fs.String("op-class", "", "operation class (default write)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	if *resource == "" {
		return &exitError{2, errors.New("--resource is required")}
	}
	if *reqID == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		*reqID = "req-" + hex.EncodeToString(b)
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	l, err := c.Acquire(ctx, client.AcquireRequest{Resource: *resource, RequestID: *reqID, TTL: *ttl, Wait: *wait, OpClass: *opClass})
	if err != nil {
		if !isProblem(err) {
			return fmt.Errorf("%w\nthe outcome is unknown: recover with 'fencegate grant lookup --request-id %s'", err, *reqID)
		}
		return err
	}
	return printLease(out, l, &o)
}

func isProblem(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce)
}

func grantLookup(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("grant lookup", "--request-id ID [-o json]")
	var conn connFlags
	conn.add(fs)
	var o outputFlags
	o.add(fs)
	reqID := fs.String("request-id", "", "the request ID of the acquire whose answer was lost")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	if *reqID == "" {
		return &exitError{2, errors.New("--request-id is required")}
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	l, err := c.Lookup(ctx, *reqID)
	if err != nil {
		return err
	}
	return printLease(out, l, &o)
}

func grantLeaseOp(ctx context.Context, op string, args []string, out io.Writer) error {
	fs := newFlags("grant "+op, "--lease ID | --digest sha256:... [--ttl D] [-o json]")
	var conn connFlags
	conn.add(fs)
	var o outputFlags
	o.add(fs)
	lease := fs.String("lease", "", "lease ID")
	digest := fs.String("digest", "", "grant digest (status only)")
	ttl := fs.Duration("ttl", 0, "new TTL from now (renew only; default: the lease's own TTL, as granted)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	if op == "renew" && *ttl != 0 && *ttl < time.Millisecond {
		// Sent as whole milliseconds: a shorter TTL would turn into 0, which
		// renews by the lease's own TTL.
		return &exitError{2, errors.New("--ttl must be at least 1ms (omit it to keep the lease's own TTL)")}
	}
	if *lease == "" && (op != "status" || *digest == "") {
		return &exitError{2, errors.New("--lease is required (status also takes --digest)")}
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	var l *client.Lease
	switch {
	case op == "renew":
		l, err = c.Renew(ctx, *lease, *ttl)
	case op == "release":
		l, err = c.Release(ctx, *lease)
	case *lease != "":
		l, err = c.Status(ctx, *lease)
	default:
		l, err = c.StatusByDigest(ctx, *digest)
	}
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && ce.Problem.Extra["state"] != nil {
			return &exitError{3, fmt.Errorf("%w (state %v)", err, ce.Problem.Extra["state"])}
		}
		return err
	}
	return printLease(out, l, &o)
}

func printLease(out io.Writer, l *client.Lease, o *outputFlags) error {
	if o.grantOut != "" && l.Grant != "" {
		if err := os.WriteFile(o.grantOut, []byte(l.Grant+"\n"), 0o600); err != nil {
			return err
		}
	}
	if o.format == "json" {
		return printJSON(out, l)
	}
	fw := newFieldWriter(out)
	row := fw.row
	row("resource", l.Resource)
	row("owner", l.Owner)
	row("lease", l.Lease)
	row("fenceToken", l.FenceToken)
	row("backendRevision", l.BackendRevision)
	row("policyGeneration", l.PolicyGeneration)
	row("issuerEpoch", l.IssuerEpoch)
	row("state", l.State)
	row("expiresAt", l.ExpiresAt.Format(time.RFC3339Nano))
	row("grantDigest", l.GrantDigest)
	row("statusProof", fmt.Sprintf("%s, valid until %s", l.State, l.StatusExpiresAt.Format(time.RFC3339Nano)))
	if l.Replayed {
		row("replayed", "true (an earlier acquire with this request ID)")
	}
	if l.Grant != "" {
		row("grant", l.Grant)
	}
	return fw.flush()
}

func grantInspect(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("grant inspect", "[--jwks FILE] [--file F] [TOKEN|-]")
	var conn connFlags
	conn.add(fs)
	jwksPath := fs.String("jwks", "", "trust bundle file (default: fetch the registry's /.well-known/jwks.json)")
	file := fs.String("file", "", "read the grant from this file")
	format := fs.String("o", "text", "output: text or json")
	hs := fs.Bool("allow-hs256", false, "accept HS256 (MAC) grants; the bundle then holds the shared secret")
	status := fs.Bool("status", false, "also ask the registry for the grant's current status")
	if err := parse(fs, args, true); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return &exitError{2, fmt.Errorf("-o must be text or json")}
	}
	var raw []byte
	var err error
	switch {
	case *file != "":
		raw, err = os.ReadFile(*file)
	case fs.NArg() == 1 && fs.Arg(0) != "-":
		raw = []byte(fs.Arg(0))
	case fs.NArg() <= 1:
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	default:
		return &exitError{2, errors.New("give one token, '-', or --file")}
	}
	if err != nil {
		return err
	}
	token := []byte(strings.TrimSpace(string(raw)))
	bundle, err := trustBundle(ctx, *jwksPath, &conn, *hs)
	if err != nil {
		return err
	}
	g, digest, err := verify.ParseAndVerifyGrant(token, bundle)
	if err != nil {
		return &exitError{3, fmt.Errorf("grant rejected: %w", err)}
	}
	var lease *client.Lease
	if *status {
		c, err := conn.client()
		if err != nil {
			return err
		}
		if lease, err = c.StatusByDigest(ctx, digest); err != nil {
			return err
		}
	}
	if *format == "json" {
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
			return &exitError{3, fmt.Errorf("the registry's status proof does not verify: %w", err)}
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
