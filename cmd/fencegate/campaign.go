package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/internal/campaign"
)

// campaignProgress is where progress lines go; the table goes to out.
var campaignProgress io.Writer = os.Stderr

func newCampaignCmd(_ *app) *cobra.Command {
	var cfg campaign.Config
	var kinds string
	var quiet bool
	c := &cobra.Command{
		Use:   "campaign [--n N] [--seed S] [--kinds a,b] [--workers W] [--quiet]",
		Short: "run the grant/proof mutation campaign against the sidecar's checks",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Progress = campaignProgress
			if quiet {
				cfg.Progress = nil
			}
			if kinds != "" {
				cfg.Kinds = strings.Split(kinds, ",")
			}
			return runCampaign(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.IntVar(&cfg.N, "n", 1_000_000, "number of mutations")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the keys, the original tokens and every mutation (same seed, same counts)")
	f.StringVar(&kinds, "kinds", "", "comma-separated kinds to run (default all: "+strings.Join(campaign.Kinds(), ",")+")")
	f.IntVar(&cfg.Workers, "workers", 0, "worker goroutines (0: one per core); the counts do not depend on it")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	return c
}

func runCampaign(ctx context.Context, cfg campaign.Config, out io.Writer) error {
	res, err := campaign.Run(ctx, cfg)
	if errors.Is(err, campaign.ErrBadConfig) || errors.Is(err, campaign.ErrUnknownKind) {
		return withExit(exitUsage, err, "")
	}
	if err != nil && res.N == 0 {
		return err
	}
	if werr := res.WriteTable(out); werr != nil {
		return werr
	}
	if err != nil {
		return err // interrupted: the table shows what ran
	}
	if !res.Passed() {
		return withExit(exitFailure, fmt.Errorf("%s", res.Verdict()), "")
	}
	return nil
}
