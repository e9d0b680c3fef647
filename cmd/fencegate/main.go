package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code: help and
// results on stdout, errors (one line and a hint, or one JSON object
// under -o json) on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	if isFlagError(err) {
		err = usageErr(cmd, oneLineCobra(err))
	}
	if !cmd.Flags().Parsed() {
		// cobra failed before parsing flags (an unknown command): -o is
		// read from the arguments themselves.
		a.output = outputArg(args)
	}
	return reportError(stderr, cmd.CommandPath(), a.format(), err)
}

// outputArg is the value of the last -o/--output in args ("" if none).
func outputArg(args []string) string {
	out := ""
	for i := 0; i < len(args); i++ {
		s := args[i]
		switch {
		case s == "--":
			return out
		case s == "-o" || s == "--output":
			if i+1 < len(args) {
				i++
				out = args[i]
			}
		case strings.HasPrefix(s, "--output="):
			out = strings.TrimPrefix(s, "--output=")
		case strings.HasPrefix(s, "-o") && !strings.HasPrefix(s, "--"):
			out = strings.TrimPrefix(strings.TrimPrefix(s, "-o"), "=")
		}
	}
	return out
}

// oneLineCobra folds cobra's "unknown command" message and its "Did you
// mean this?" list into one line.
func oneLineCobra(err error) error {
	msg := err.Error()
	head, rest, ok := strings.Cut(msg, "\n")
	if !ok {
		return err
	}
	var s []string
	for _, l := range strings.Split(rest, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Did you mean") {
			s = append(s, l)
		}
	}
	if len(s) > 0 {
		head += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(head)
}
