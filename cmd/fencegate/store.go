package main

import (
	"context"
	"errors"
	"io"
	"net/http"
)

func init() {
	register(command{name: "store", summary: "the shared store after a Redis data loss: store acknowledge-loss (sidecar admin API)", run: runStore})
}

// runStore is "fencegate store acknowledge-loss": the operator's
// acknowledgement, on one sidecar, that the Redis store lost data (it
// restarted empty or holds another data set). The sidecar adopts the data
// set Redis has now and lets writes through again; its per-resource
// checkpoints still refuse any fence below what it saw accepted. Run it on
// every sidecar of the service, after restoring the newest Redis data
// there is and raising the registry's fence floor.
func runStore(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "acknowledge-loss" {
		return &exitError{2, errors.New("usage: fencegate store acknowledge-loss [--admin URL]")}
	}
	fs := newFlags("store acknowledge-loss", "")
	var a adminFlags
	a.add(fs)
	if err := parse(fs, args[1:], false); err != nil {
		return err
	}
	return a.call(ctx, http.MethodPost, "/v1/store/acknowledge-loss", nil, out)
}
