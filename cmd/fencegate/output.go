package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// printJSON writes v as indented JSON (the -o json output of every command).
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fieldWriter prints "key: value" lines with aligned values, the text
// output of the grant commands (the design's notation).
type fieldWriter struct{ tw *tabwriter.Writer }

func newFieldWriter(out io.Writer) *fieldWriter {
	return &fieldWriter{tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)}
}

func (f *fieldWriter) row(key string, v any) { fmt.Fprintf(f.tw, "%s:\t%v\n", key, v) }

func (f *fieldWriter) flush() error { return f.tw.Flush() }
