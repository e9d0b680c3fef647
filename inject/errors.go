package inject

import "errors"

// Sentinel errors; every error of this package wraps one of them.
var (
	// ErrAnnotation: a fencegate.io/* annotation of the pod is unknown or
	// has a value the injector does not accept. The pod is refused.
	ErrAnnotation = errors.New("inject: bad annotation")
	// ErrConflict: the pod already has something the sidecar needs (a
	// container port, a volume name, a container named fencegate without
	// the injected marker). The pod is refused.
	ErrConflict = errors.New("inject: pod conflicts with the sidecar")
	// ErrNative: a native sidecar is asked for on a cluster without them.
	ErrNative = errors.New("inject: native sidecar not available")
	// ErrConfig: the injector's own settings are invalid.
	ErrConfig = errors.New("inject: invalid injector config")
)
