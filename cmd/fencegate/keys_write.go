package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// keyFile is one file "keys generate" writes: a JWK or a JWK set.
type keyFile struct {
	path string
	v    any
}

// errExists is the refusal to replace an existing key file without --force.
func errExists(path string) error {
	return fmt.Errorf("%s already exists: refusing to overwrite it (replacing a signing key makes every grant it signed unverifiable); "+
		"choose another --out, or pass --force to replace the key and its trust bundle", path)
}

// writeKeyFiles writes files as a set, each mode 0600 and atomically: the
// content goes to a new temporary file in the same directory, is synced,
// then takes the final name. Without force the final name is taken with a
// hard link, which fails when the name exists (even if it appeared after
// the caller's check): nothing is replaced, and a file this call already
// placed is removed again. With force the final name is replaced by rename.
func writeKeyFiles(force bool, files ...keyFile) (err error) {
	var tmps, placed []string
	defer func() {
		for _, t := range tmps {
			os.Remove(t)
		}
		if err != nil {
			for _, p := range placed {
				os.Remove(p)
			}
		}
	}()
	for _, f := range files {
		t, werr := writeTemp(f.path, f.v)
		if werr != nil {
			return werr
		}
		tmps = append(tmps, t)
	}
	for i, f := range files {
		if force {
			if err := os.Rename(tmps[i], f.path); err != nil {
				return fmt.Errorf("keys generate: %w", err)
			}
			tmps[i] = "" // renamed away; nothing to remove
			continue
		}
		if err := os.Link(tmps[i], f.path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return errExists(f.path)
			}
			return fmt.Errorf("keys generate: %w", err)
		}
		placed = append(placed, f.path)
	}
	return syncDir(filepath.Dir(files[0].path))
}

// writeTemp writes v as indented JSON to a new 0600 temporary file next to
// path, synced to disk, and returns its name.
func writeTemp(path string, v any) (string, error) {
	buf, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("keys generate: encode %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("keys generate: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("keys generate: %w", err)
	}
	name := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(append(buf, '\n'))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("keys generate: write %s: %w", path, err)
	}
	return name, nil
}

// syncDir makes the new directory entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keys generate: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("keys generate: sync %s: %w", dir, err)
	}
	return nil
}
