package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate"
)

// cliError is a failure as the command reports it: one line of what
// happened (err), what to do next (hint), and the exit code (0: derived
// from err by exitCodeOf).
type cliError struct {
	exit int
	err  error
	hint string
	// class overrides the exit code's class: grant run passes its
	// command's own exit code on, whatever class that number has.
	class string
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }

// usageErr is bad input to cmd: exit 2 with the hint to its help.
func usageErr(cmd *cobra.Command, err error) error {
	return &cliError{exit: exitUsage, err: err, hint: helpHint(cmd)}
}

// usagef is usageErr with a formatted message.
func usagef(cmd *cobra.Command, format string, a ...any) error {
	return usageErr(cmd, fmt.Errorf(format, a...))
}

// helpHint names cmd's help.
func helpHint(cmd *cobra.Command) string {
	return fmt.Sprintf("Run '%s --help' for usage.", cmd.CommandPath())
}

// withExit is err reported with exit code and hint (hint may be "").
func withExit(exit int, err error, hint string) error {
	return &cliError{exit: exit, err: err, hint: hint}
}

// jsonError is the -o json form of a failure: one object on stderr.
//
//	{"error": {"code": "LEASE_HELD", "class": "held", "exit": 3,
//	           "message": "...", "hint": "...", "problem": {...}}}
//
// code is the server's problem code when it answered one, else the class
// in upper case (USAGE, UNREACHABLE, FAILURE ...); problem is the server's
// RFC 9457 document, when there is one; problems lists each problem of an
// invalid configuration.
type jsonError struct {
	Code    string             `json:"code"`
	Class   string             `json:"class"`
	Exit    int                `json:"exit"`
	Message string             `json:"message"`
	Hint    string             `json:"hint,omitempty"`
	Problem *fencegate.Problem `json:"problem,omitempty"`
	// Problems lists each problem of an invalid configuration (--check,
	// or a server refusing its file), one string each.
	Problems []string `json:"problems,omitempty"`
}

// reportError writes err to w in the chosen format and returns the exit
// code. prefix is the command path ("fencegate grant acquire").
func reportError(w io.Writer, prefix, format string, err error) int {
	code := exitCodeOf(err)
	var ce *cliError
	hint, class := "", exitClass[code]
	if errors.As(err, &ce) {
		hint = ce.hint
		if ce.class != "" {
			class = ce.class
		}
	}
	msg := oneLine(err.Error())
	if format == "json" {
		je := jsonError{Class: class, Exit: code, Message: msg, Hint: hint, Problem: problemOf(err)}
		if code == exitUsage {
			je.Problems = problemList(err)
		}
		je.Code = strings.ToUpper(strings.ReplaceAll(je.Class, "-", "_"))
		if je.Problem != nil {
			je.Code = string(je.Problem.Code)
		}
		b, _ := json.Marshal(map[string]jsonError{"error": je})
		fmt.Fprintf(w, "%s\n", b)
		return code
	}
	fmt.Fprintf(w, "%s: %s\n", prefix, msg)
	if hint != "" {
		fmt.Fprintln(w, hint)
	}
	return code
}

// oneLine folds a multi-line message (a configuration's list of errors
// keeps its lines) and trims it.
func oneLine(s string) string { return strings.TrimSpace(s) }

// problemList is each problem of a joined error (an invalid
// configuration's), nil for a single error.
func problemList(err error) []string {
	var j interface{ Unwrap() []error }
	if !errors.As(err, &j) {
		return nil
	}
	var out []string
	for _, e := range j.Unwrap() {
		if e == nil {
			continue
		}
		if sub := problemList(e); sub != nil {
			out = append(out, sub...)
			continue
		}
		out = append(out, e.Error())
	}
	return out
}
