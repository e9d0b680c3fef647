// Command validate checks rendered Kubernetes manifests offline: every YAML
// document of the files named on the command line (or of standard input)
// is decoded strictly into its typed object from k8s.io/api or
// prometheus-operator's monitoring/v1 types, so an unknown or misspelled
// field, a value of the wrong type or a duplicate key is an error, and then
// checked for what the API server's validation would refuse and a typed
// decode cannot see (names, labels, selectors, named ports, volume mounts).
//
// It is a module of its own so that fencegate's go.mod carries no
// Kubernetes dependency; the charts test builds it (go build) and runs it
// on every rendered scenario.
//
// Exit status: 0 when every document passes, 1 when any fails (each
// problem printed as "FILE: KIND/NAME: problem"), 2 on usage errors.
package main
