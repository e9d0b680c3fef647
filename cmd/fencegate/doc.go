// Command fencegate is the one binary of fencegate: the grant registry, the
// sidecar proxy, and the tools around them. Each subcommand lives in a file
// of its own.
package main
