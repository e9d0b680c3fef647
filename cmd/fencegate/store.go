package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
)

// newStoreCmd is "fencegate store acknowledge-loss" and "fencegate store
// status".
//
// acknowledge-loss is the operator's acknowledgement, at the registry,
// that a fenced store lost data (it restarted empty, holds another data
// set, or its bbolt file was replaced): the registry adopts the store's new
// generation (POST /v1/stores/{store}/acknowledge, admin), and every
// sidecar of the store, at its next recheck, repairs its store from the
// anchors (each resource it is behind on paused STORE_LOSS) and accepts
// writes again. The store and the generation come from --store and
// --generation, or from a sidecar's admin API (--sidecar URL: GET
// /v1/store), or, for the generation, from the registry's record of the
// store (the latest generation presented; that read needs an identity the
// store's policy allows, --owner or --cert).
func newStoreCmd(_ *app) *cobra.Command {
	var st sidecarFlags
	status := &cobra.Command{
		Use:   "status --sidecar URL",
		Short: "the fenced store's generation and loss, as a sidecar reports it (GET /v1/store)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := st.status(cmd)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), s)
		},
	}
	st.add(status.Flags())

	var o ackOpts
	ack := &cobra.Command{
		Use:   "acknowledge-loss [--sidecar URL] [--store NAME] [--generation G] --registry URL --admin-token-file F",
		Short: "acknowledge at the registry that a fenced store lost data, so its sidecars repair it and accept writes again",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return acknowledgeLoss(cmd, &o) },
	}
	o.conn.add(ack.Flags(), true)
	o.sc.add(ack.Flags())
	ack.Flags().StringVar(&o.name, "store", "", "the fenced store's name (the sidecars' store.service)")
	ack.Flags().StringVar(&o.gen, "generation", "", "the generation to adopt (the one the store presents now)")
	return groupCmd("store", "a fenced store that lost data: store acknowledge-loss (at the registry), store status (sidecar admin API)", ack, status)
}

type ackOpts struct {
	conn      connFlags
	sc        sidecarFlags
	name, gen string
}

func acknowledgeLoss(cmd *cobra.Command, o *ackOpts) error {
	ctx := cmd.Context()
	if o.sc.url != "" && (o.name == "" || o.gen == "") {
		st, err := o.sc.status(cmd)
		if err != nil {
			return err
		}
		if !st.Lost {
			return fmt.Errorf("the sidecar at %s reports store %q not lost (generation %s): nothing to acknowledge, nothing was sent to the registry", o.sc.url, st.Store, st.Generation)
		}
		if o.name == "" {
			o.name = st.Store
		}
		if o.gen == "" {
			o.gen = st.Presented
		}
	}
	if o.name == "" {
		return usagef(cmd, "--store (or --sidecar) is required")
	}
	c, err := o.conn.client()
	if err != nil {
		return err
	}
	if o.gen == "" {
		v, err := c.StoreAnchor(ctx, o.name)
		if err != nil {
			return callFailed(fmt.Errorf("read store %s at the registry (pass --generation, or --sidecar): %w", o.name, err), o.conn.target(), "")
		}
		if v.Presented == "" {
			return fmt.Errorf("the registry has no loss of store %s to acknowledge (generation %s, no other presented)", o.name, v.Generation)
		}
		o.gen = v.Presented
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "acknowledging the loss of store %s at %s: adopting generation %s\n", o.name, o.conn.url, o.gen)
	a, err := c.AcknowledgeStoreLoss(ctx, o.name, o.gen)
	if err != nil {
		return callFailed(err, o.conn.target(), "Run 'fencegate store status --sidecar URL' to see whether the loss was acknowledged.")
	}
	return printJSON(cmd.OutOrStdout(), a)
}

// sidecarFlags name a sidecar's admin API.
type sidecarFlags struct{ url, tokenFile string }

func (s *sidecarFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&s.url, "sidecar", os.Getenv("FENCEGATE_ADMIN"), "a sidecar's admin URL (env FENCEGATE_ADMIN): where the store's name and generation are read")
	fs.StringVar(&s.url, "admin", os.Getenv("FENCEGATE_ADMIN"), "the same as --sidecar")
	fs.StringVar(&s.tokenFile, "sidecar-token-file", os.Getenv("FENCEGATE_SIDECAR_TOKEN_FILE"), "file holding the sidecar's admin bearer token")
}

// status reads GET /v1/store of the sidecar.
func (s *sidecarFlags) status(cmd *cobra.Command) (adminapi.StoreStatus, error) {
	var st adminapi.StoreStatus
	if s.url == "" {
		return st, usagef(cmd, "--sidecar is required")
	}
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, strings.TrimSuffix(s.url, "/")+"/v1/store", nil)
	if err != nil {
		return st, withExit(exitUsage, fmt.Errorf("--sidecar %q: %w", s.url, err), "")
	}
	if s.tokenFile != "" {
		tok, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return st, withExit(exitUsage, fmt.Errorf("--sidecar-token-file: %w", err), "")
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	target := "the sidecar at " + s.url
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, callFailed(err, target, "")
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		d, err := fencegate.ReadProblem(resp)
		if err != nil {
			return st, fmt.Errorf("GET /v1/store: %s answered %d without a problem document", target, resp.StatusCode)
		}
		if d.Code == fencegate.CodeNotFound {
			return st, withExit(exitNotFound, &describedError{fmt.Sprintf("%s has no fenced-store status (GET /v1/store: 404 NOT_FOUND): "+
				"this sidecar's store does not support acknowledge-loss: it is not anchored at the registry (no store.service and registry.url, or a sidecar older than the anchor); nothing was sent to the registry", target), d},
				"Point --sidecar at a sidecar whose store is anchored, or pass --store NAME and --generation G to acknowledge at the registry directly.")
		}
		return st, sidecarRefused(d, target)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return st, fmt.Errorf("GET /v1/store: %w", err)
	}
	return st, nil
}

// sidecarRefused is callFailed of a problem the sidecar answered GET
// /v1/store with; without its admin token the lever is --sidecar-token-file
// (--admin-token-file is the registry's, for acknowledge-loss).
func sidecarRefused(p *fencegate.Problem, target string) error {
	err := callFailed(p, target, "")
	var ce *cliError
	if p.Code == fencegate.CodeAdminRequired && errors.As(err, &ce) {
		ce.hint = "Pass --sidecar-token-file FILE holding the sidecar's admin token (env FENCEGATE_SIDECAR_TOKEN_FILE); --admin-token-file is the registry's."
	}
	return err
}
