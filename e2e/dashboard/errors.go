package main

import "errors"

var (
	// ErrLayout: a panel leaves the 24-column grid, has no size, or
	// overlaps another panel.
	ErrLayout = errors.New("dashboard: bad layout")
	// ErrNoRoot: no go.mod was found above the working directory.
	ErrNoRoot = errors.New("dashboard: not inside the repository")
)
