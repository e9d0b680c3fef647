package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// ErrNotDurable is returned (wrapped) by Open and New when the store's
// sessions run with fsync off or synchronous_commit off or local: the
// server acknowledges a COMMIT before it is on disk (or, for local, before
// any standby has it), so a crash or a failover can lose a Begin or a
// Commit the sidecar took as done, and a record lost that way forgets its
// resource's highest fence. The store refuses such a server unless
// Options.AllowNonDurable.
var ErrNotDurable = errors.New("store/postgres: the server may lose acknowledged writes")

// durability is what the store's own session reports of the settings that
// make a COMMIT durable.
type durability struct {
	fsync, syncCommit, standbyNames string
}

// readDurability reads the settings on q, a connection of the store's
// pool: synchronous_commit can be set per role, per database and per
// session (the DSN's options), and the value the store's sessions run
// with is the one that counts.
func readDurability(ctx context.Context, q querier) (durability, error) {
	var d durability
	err := q.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('synchronous_standby_names')`).Scan(&d.fsync, &d.syncCommit, &d.standbyNames)
	if err != nil {
		return durability{}, fmt.Errorf("store/postgres: read the durability settings: %w", err)
	}
	return d, nil
}

// problem names the setting that lets the server lose an acknowledged
// COMMIT and its fix, "" when there is none.
func (d durability) problem() string {
	switch {
	case d.fsync != "on":
		return "fsync is " + d.fsync + " (set fsync = on in postgresql.conf)"
	case d.syncCommit == "off" || d.syncCommit == "local":
		return "synchronous_commit is " + d.syncCommit + " for the store's sessions " +
			"(set it to on or remote_apply: check ALTER SYSTEM, ALTER DATABASE ... SET, ALTER ROLE ... SET and the DSN's options)"
	}
	return ""
}

// checkDurable refuses a server whose sessions may lose an acknowledged
// COMMIT, unless allow (Options.AllowNonDurable): then it is accepted with
// a warning, so that a scratch setting that reached production shows in
// the start's log. A primary without synchronous standbys is accepted
// with a warning: a single node is as durable as its disk, but a failover
// to an asynchronous standby can lose acknowledged writes.
func checkDurable(ctx context.Context, q querier, allow bool, log *slog.Logger) error {
	d, err := readDurability(ctx, q)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	if p := d.problem(); p != "" {
		if !allow {
			return fmt.Errorf("%w: %s; or set allowNonDurable for a scratch database", ErrNotDurable, p)
		}
		log.Warn("store/postgres: the server may lose acknowledged writes ("+p+
			"), accepted because allowNonDurable is set: a write it loses in a crash can take a highest fence with it; never where a lost write matters",
			"fsync", d.fsync, "synchronous_commit", d.syncCommit)
	}
	if d.standbyNames == "" {
		log.Warn("store/postgres: synchronous_standby_names is empty: no standby must confirm a COMMIT, so a failover to an " +
			"asynchronous standby can lose acknowledged writes (a sidecar's outside anchor then finds each resource set back " +
			"and pauses it, STORE_LOSS); name the standby a failover promotes in synchronous_standby_names, or run a single node")
	}
	return nil
}
