package main

import (
	"errors"
	"strings"
	"testing"
)

// FuzzOutputArg: reading -o from raw arguments (when cobra failed before
// parsing flags) never panics, and finds a value given as "-o X".
func FuzzOutputArg(f *testing.F) {
	f.Add("grnt\x00-o\x00json")
	f.Add("-ojson")
	f.Add("--output=json\x00--\x00-o\x00text")
	f.Add("-o")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		_ = outputArg(args)
		if v := outputArg([]string{"x", "-o", joined}); v != joined {
			t.Fatalf("outputArg(-o %q) = %q", joined, v)
		}
	})
}

// FuzzOneLineCobra: folding cobra's messages never panics and leaves one
// line.
func FuzzOneLineCobra(f *testing.F) {
	f.Add("unknown command \"grnt\" for \"fencegate\"\n\nDid you mean this?\n\tgrant\n")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, msg string) {
		if got := oneLineCobra(errors.New(msg)).Error(); strings.Contains(got, "\n") && !strings.Contains(msg, "\n") {
			t.Fatalf("%q became %q", msg, got)
		} else if strings.Contains(msg, "\n") && strings.Contains(got, "\n") {
			t.Fatalf("%q folded to %q, still more than one line", msg, got)
		}
	})
}
