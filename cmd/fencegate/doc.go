// Command fencegate is the one binary of fencegate: the grant registry, the
// sidecar proxy, and the tools around them, on cobra. root.go builds the
// whole command tree from each subcommand file's newXCmd; exitcodes.go
// holds the exit codes (docs/cli.md documents them) and how errors map to
// them; callerror.go and clierror.go word a failure (what was sent, what to
// do next) in text or as one JSON object under -o json.
package main
