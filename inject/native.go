package inject

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// NativeMode says how the injector decides between a native sidecar and
// a regular container.
type NativeMode string

const (
	// NativeAuto: native when the API server, asked once at the
	// injector's start, is Kubernetes 1.29 or later (where the
	// SidecarContainers feature is on by default).
	NativeAuto NativeMode = "auto"
	// NativeAlways: always native (a cluster older than 1.29 rejects or
	// mis-runs such pods; choose it only where you know the version).
	NativeAlways NativeMode = "always"
	// NativeNever: always a regular container.
	NativeNever NativeMode = "never"
)

// ParseNativeMode checks a mode's spelling.
func ParseNativeMode(s string) (NativeMode, error) {
	switch m := NativeMode(s); m {
	case NativeAuto, NativeAlways, NativeNever:
		return m, nil
	}
	return "", fmt.Errorf("native %q is not auto, always or never", s)
}

// nativeSince is the first release with native sidecars on by default.
var nativeSince = version.MajorMinor(1, 29)

// NativeSupported reports whether an API server of this version (its
// /version gitVersion, e.g. "v1.31.4-gke.1200") runs native sidecars.
func NativeSupported(gitVersion string) (bool, error) {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return false, fmt.Errorf("%w: API server version %q: %w", ErrNative, gitVersion, err)
	}
	return v.AtLeast(nativeSince), nil
}

// Native resolves the mode for a cluster: for auto, serverVersion is the
// API server's gitVersion; the other modes ignore it.
func (m NativeMode) Native(serverVersion string) (bool, error) {
	switch m {
	case NativeAlways:
		return true, nil
	case NativeNever:
		return false, nil
	case NativeAuto:
		return NativeSupported(serverVersion)
	}
	return false, fmt.Errorf("%w: native %q is not auto, always or never", ErrConfig, m)
}
