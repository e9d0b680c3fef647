//go:build unix

package tlsfiles

import (
	"os"
	"syscall"
)

// statFile stats path: size, time, device and inode.
func statFile(path string) fileID {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{missing: true}
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.inode = uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // int types differ by platform
	}
	return id
}
