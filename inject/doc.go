// Package inject decides whether a pod gets fencegate's sidecar and builds
// it: the pod's fencegate.io/* annotations parsed and checked strictly
// (ParseAnnotations; an unknown fencegate.io/ key or a bad value is an
// error naming the annotation), the injector's own settings (Config), and
// the mutation itself as the JSON patch operations that add the sidecar
// container, its volumes and the injected marker to the pod (Plan). It does
// no I/O: the admission webhook that calls it is inject/webhook, the binary
// cmd/fencegate-injector.
//
// The sidecar it adds is the one the chart's "fencegate.sidecar.container"
// template renders: the same image, arguments, ports, probes, mounts and
// security context, reading proxy.yaml from the ConfigMap the pod's
// fencegate.io/config annotation names (the chart renders it with
// sidecar.enabled). What proxy.yaml holds (the backend, the routes and
// their modes) is not taken from annotations: a route's mode is part of
// the enforcement ledger, and a pod annotation must not be a way around it.
//
// The sidecar is a native sidecar (an init container with restartPolicy
// Always, Kubernetes 1.29 and later) when the cluster has them, else a
// regular container; Config.Native says how the injector decides (auto
// reads the API server's version at start, see NativeSupported).
package inject
