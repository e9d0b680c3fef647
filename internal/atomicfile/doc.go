// Package atomicfile writes small files durably: a temporary file in the
// same directory, fsynced, renamed over the target, and the directory
// fsynced, so that after a crash the target holds either its old or its
// new content, never a mix, and a returned nil means the new content is
// on disk.
package atomicfile
