package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// table prints aligned columns under a header (the text output of every
// listing). Empty cells print "-"; an empty table prints its header and
// the line that says there is nothing.
type table struct {
	tw   *tabwriter.Writer
	rows int
}

// newTable starts a table with the columns of header.
func newTable(out io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.tw, strings.Join(header, "\t"))
	return t
}

// row adds one row; each cell is printed with %v, "" as "-".
func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(s, "\t"))
	t.rows++
}

// flush prints the table; with no row, none says so ("no receipts of R").
func (t *table) flush(out io.Writer, none string) error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	if t.rows == 0 {
		_, err := fmt.Fprintln(out, none)
		return err
	}
	return nil
}

// cell is the text of one value: times in RFC 3339 (UTC), "" and the
// zero time as "-", tabs and newlines of free text as spaces.
func cell(v any) string {
	var s string
	switch x := v.(type) {
	case time.Time:
		s = rfc3339(x)
	case string:
		s = x
	default:
		s = fmt.Sprint(x)
	}
	s = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	if s == "" {
		return "-"
	}
	return s
}

// rfc3339 is t in RFC 3339 (UTC, seconds), "-" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// unixMilli is a Unix-millisecond time in RFC 3339, "-" for 0.
func unixMilli(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return rfc3339(time.UnixMilli(ms))
}
