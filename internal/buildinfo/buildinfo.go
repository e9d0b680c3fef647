package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// version is set at link time; a plain `go build` leaves "dev".
var version = "dev"

// revision is set at link time by builds that have no VCS checkout to read
// (the Dockerfile's: .git is not in its build context). A revision Go
// recorded from the checkout takes precedence over it.
var revision = ""

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
}

// readBuildInfo is the binary's build information, read once: it never
// changes, and debug.ReadBuildInfo parses it at every call (every
// component's metrics start reads it).
var readBuildInfo = sync.OnceValues(debug.ReadBuildInfo)

// Read returns the running binary's build information. Revision is the
// VCS revision Go recorded, else the stamped one, else "unknown" (a build
// outside a VCS checkout, or with -buildvcs=false, and nothing stamped).
func Read() Info {
	in := Info{Version: version, Revision: "unknown", GoVersion: runtime.Version()}
	if revision != "" {
		in.Revision = revision
	}
	if bi, ok := readBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
		if in.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
	}
	return in
}
