//go:build !unix

package tlsfiles

import "os"

// statFile stats path: size and time (no inode on this platform).
func statFile(path string) fileID {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{missing: true}
	}
	return fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
