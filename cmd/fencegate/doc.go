// Command fencegate is the one binary of fencegate: the grant registry, the
// sidecar proxy, and the tools around them, on cobra. root.go builds the
// whole command tree from each subcommand file's newXCmd; exitcodes.go
// holds the exit codes (docs/cli.md documents them) and how errors map to
// them; callerror.go and clierror.go word a failure (what was sent, what to
// do next) in text or as one JSON object under -o json. The operator
// commands: lease.go (lease list, get, revoke), registry_admin.go and
// policies.go (admin epoch, fence-floor, meta, policies) at the registry;
// receipts.go (receipts, receipts get) and admin.go (reconcile, resume) at
// a sidecar's admin API; table.go prints their aligned tables.
package main
