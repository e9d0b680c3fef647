package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
)

func init() {
	register(command{name: "store", summary: "a fenced store that lost data: store acknowledge-loss (at the registry), store status (sidecar admin API)", run: runStore})
}

// runStore is "fencegate store acknowledge-loss" and "fencegate store
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
func runStore(ctx context.Context, args []string, out io.Writer) error {
	usage := errors.New("usage: fencegate store acknowledge-loss [--sidecar URL] [--store NAME] [--generation G] --registry URL --admin-token-file F | fencegate store status [--sidecar URL]")
	if len(args) == 0 {
		return &exitError{2, usage}
	}
	switch args[0] {
	case "status":
		fs := newFlags("store status", "[--sidecar URL]")
		var sc sidecarFlags
		sc.add(fs)
		if err := parse(fs, args[1:], false); err != nil {
			return err
		}
		st, err := sc.status(ctx)
		if err != nil {
			return err
		}
		return printJSON(out, st)
	case "acknowledge-loss":
	default:
		return &exitError{2, usage}
	}
	fs := newFlags("store acknowledge-loss", "[--sidecar URL] [--store NAME] [--generation G] --registry URL --admin-token-file F")
	var conn connFlags
	conn.add(fs)
	var sc sidecarFlags
	sc.add(fs)
	name := fs.String("store", "", "the fenced store's name (the sidecars' store.service)")
	gen := fs.String("generation", "", "the generation to adopt (the one the store presents now)")
	if err := parse(fs, args[1:], false); err != nil {
		return err
	}
	if sc.url != "" && (*name == "" || *gen == "") {
		st, err := sc.status(ctx)
		if err != nil {
			return err
		}
		if !st.Lost {
			return &exitError{1, fmt.Errorf("the sidecar at %s reports store %q not lost (generation %s): nothing to acknowledge", sc.url, st.Store, st.Generation)}
		}
		if *name == "" {
			*name = st.Store
		}
		if *gen == "" {
			*gen = st.Presented
		}
	}
	if *name == "" {
		return &exitError{2, errors.New("--store (or --sidecar) is required")}
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	if *gen == "" {
		v, err := c.StoreAnchor(ctx, *name)
		if err != nil {
			return fmt.Errorf("read store %s at the registry (pass --generation, or --sidecar): %w", *name, err)
		}
		if v.Presented == "" {
			return &exitError{1, fmt.Errorf("the registry has no loss of store %s to acknowledge (generation %s, no other presented)", *name, v.Generation)}
		}
		*gen = v.Presented
	}
	fmt.Fprintf(os.Stderr, "acknowledging the loss of store %s at %s: adopting generation %s\n", *name, conn.url, *gen)
	a, err := c.AcknowledgeStoreLoss(ctx, *name, *gen)
	if err != nil {
		return err
	}
	return printJSON(out, a)
}

// sidecarFlags name a sidecar's admin API.
type sidecarFlags struct{ url, tokenFile string }

func (s *sidecarFlags) add(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&s.url, "sidecar", os.Getenv("FENCEGATE_ADMIN"), "a sidecar's admin URL (env FENCEGATE_ADMIN): where the store's name and generation are read")
	fs.StringVar(&s.url, "admin", os.Getenv("FENCEGATE_ADMIN"), "the same as --sidecar")
	fs.StringVar(&s.tokenFile, "sidecar-token-file", os.Getenv("FENCEGATE_SIDECAR_TOKEN_FILE"), "file holding the sidecar's admin bearer token")
}

// status reads GET /v1/store of the sidecar.
func (s *sidecarFlags) status(ctx context.Context) (adminapi.StoreStatus, error) {
	var st adminapi.StoreStatus
	if s.url == "" {
		return st, &exitError{2, errors.New("--sidecar is required")}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.url, "/")+"/v1/store", nil)
	if err != nil {
		return st, err
	}
	if s.tokenFile != "" {
		tok, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return st, err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		if d, err := fencegate.ReadProblem(resp); err == nil {
			return st, &exitError{1, d}
		}
		return st, fmt.Errorf("GET /v1/store: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return st, fmt.Errorf("GET /v1/store: %w", err)
	}
	return st, nil
}
