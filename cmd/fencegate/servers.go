package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// What "fencegate registry" and "fencegate proxy" share: the --check
// answer and the shutdown line's reason.

// fileName is " FILE" when a file was given.
func fileName(path string) string {
	if path == "" {
		return ""
	}
	return " " + path
}

// stopReason is why a server stopped: its error, or the signal's context.
func stopReason(cmd *cobra.Command, err error) error {
	if err != nil {
		return err
	}
	if cerr := cmd.Context().Err(); cerr != nil {
		return errors.New("signal: interrupt or terminate")
	}
	return nil
}

// printCheck reports a valid configuration (--check).
func printCheck(cmd *cobra.Command, a *app, what, path string) error {
	if a.json() {
		return printJSON(cmd.OutOrStdout(), map[string]any{"valid": true, "command": what, "config": path})
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s configuration%s is valid\n", what, fileName(path))
	return err
}
