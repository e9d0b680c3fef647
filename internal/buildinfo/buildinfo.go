// Package buildinfo says which build of fencegate is running: the version
// stamped at link time (-ldflags "-X .../internal/buildinfo.version=v1.2.3"),
// the VCS revision Go recorded, and the Go toolchain. The version command,
// the fencegate_build_info metric and the logs all read it here.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// version is set at link time; a plain `go build` leaves "dev".
var version = "dev"

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
}

// Read returns the running binary's build information. Revision is
// "unknown" when the binary was built outside a VCS checkout (or with
// -buildvcs=false).
func Read() Info {
	in := Info{Version: version, Revision: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
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
