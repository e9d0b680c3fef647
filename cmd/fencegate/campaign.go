package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fencegate/fencegate/internal/campaign"
)

func init() {
	register(command{name: "campaign", summary: "run the grant/proof mutation campaign against the sidecar's checks", run: runCampaign})
}

// campaignProgress is where progress lines go; the table goes to out.
var campaignProgress io.Writer = os.Stderr

func runCampaign(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("campaign", "[--n N] [--seed S] [--kinds a,b] [--workers W] [--quiet]")
	n := fs.Int("n", 1_000_000, "number of mutations")
	seed := fs.Uint64("seed", 1, "seed of the keys, the original tokens and every mutation (same seed, same counts)")
	kinds := fs.String("kinds", "", "comma-separated kinds to run (default all: "+strings.Join(campaign.Kinds(), ",")+")")
	workers := fs.Int("workers", 0, "worker goroutines (0: one per core); the counts do not depend on it")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	cfg := campaign.Config{N: *n, Seed: *seed, Workers: *workers, Progress: campaignProgress}
	if *quiet {
		cfg.Progress = nil
	}
	if *kinds != "" {
		cfg.Kinds = strings.Split(*kinds, ",")
	}
	res, err := campaign.Run(ctx, cfg)
	if errors.Is(err, campaign.ErrBadConfig) || errors.Is(err, campaign.ErrUnknownKind) {
		return &exitError{2, err}
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
		return &exitError{1, fmt.Errorf("%s", res.Verdict())}
	}
	return nil
}
