package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	in := flag.String("in", "charts/fencegate/files/dashboard.json", "dashboard JSON, relative to the repository root")
	out := flag.String("out", "docs/images/dashboard.svg", "SVG to write, relative to the repository root")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, in))
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	d, err := parse(raw)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := render(&buf, d); err != nil {
		return err
	}
	path := filepath.Join(root, out)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	fmt.Printf("%s: %d panels -> %s\n", in, len(d.flat()), out)
	return nil
}

// repoRoot is the nearest directory at or above the working directory
// holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("dashboard: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("dashboard: %w", err)
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", ErrNoRoot
		}
		dir = up
	}
}
