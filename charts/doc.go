// Package charts holds fencegate's Helm chart (charts/fencegate) and the
// tests that keep it deployable; it has no Go code of its own.
//
// The tests build Helm (helm.sh/helm/v3/cmd/helm at a pinned version) from
// the Go module proxy and an offline manifest validator (charts/validate, a
// module of its own, so that this module's go.mod has no Kubernetes
// dependency), then, for the chart's defaults and every ci/*-values.yaml
// scenario and for the example parent chart in charts/fencegate/examples:
// helm lint, helm template, a strict decode of every rendered document into
// its typed Kubernetes (or prometheus-operator) object, the rendered
// proxy.yaml and registry.yaml through fencegate's own config loaders, and
// the chart's safety properties (non-root, read-only, no capabilities, the
// admin listener on loopback, a local store never shared by replicas,
// every file a rendered proxy.yaml or registry.yaml names under one of its
// container's mounts), the injector's rendered injector.yaml through its own loader and its webhook
// configuration; and the commands of docs/operations.md's install and
// injection sections that need no cluster (guide_test.go), with the
// manifests of docs/k8s. They skip only when the module proxy cannot be
// reached.
package charts
