// Package listenaddr builds the default inbound listen addresses of the
// registry and the sidecar. Their host is 127.0.0.1 unless the environment
// variable FENCEGATE_LISTEN_HOST names another (a container image sets it
// to 0.0.0.0, so that a pod's IP reaches the inbound and health
// listeners). It only fills in defaults: an address the configuration
// spells out always wins, and the admin listeners never use it (they stay
// on loopback unless configured explicitly).
package listenaddr
