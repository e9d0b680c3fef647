// Package confcheck collects the problems a configuration validator finds,
// so that each section's validator stays a short list of checks and every
// problem is reported at once (errors.Join of the list). The sidecar's
// pipeline (proxy) and its file (proxy/server) validate with it.
package confcheck
