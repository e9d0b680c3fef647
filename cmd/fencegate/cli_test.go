package main

import (
	"context"
	"strings"
	"testing"
)

// cliResult is one run of the command line.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs the fencegate command line in process, as main does, with
// the FENCEGATE_* environment cleared (flag defaults read it).
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runCLIContext(t, context.Background(), args...)
}

func runCLIContext(t *testing.T, ctx context.Context, args ...string) cliResult {
	t.Helper()
	for _, e := range []string{"FENCEGATE_REGISTRY", "FENCEGATE_OWNER", "FENCEGATE_CERT", "FENCEGATE_KEY", "FENCEGATE_CA",
		"FENCEGATE_TLS_SERVER_NAME", "FENCEGATE_ADMIN", "FENCEGATE_ADMIN_TOKEN_FILE", "FENCEGATE_SIDECAR_TOKEN_FILE"} {
		t.Setenv(e, "")
	}
	var out, errb strings.Builder
	code := run(ctx, args, &out, &errb)
	return cliResult{out.String(), errb.String(), code}
}
