// Package buildinfo says which build of fencegate is running: the version
// stamped at link time (-ldflags "-X .../internal/buildinfo.version=v1.2.3"),
// the VCS revision Go recorded (or, for a build outside a checkout such as
// the container image's, the one stamped with -X .../buildinfo.revision=),
// and the Go toolchain. The version command, the fencegate_build_info metric
// and the logs all read it here.
package buildinfo
