package redisconf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"
)

// ErrNotDurable is returned by CheckDurable when the server reports a
// persistence that can lose a write it acknowledged: anything but
// appendonly yes with appendfsync always.
var ErrNotDurable = errors.New("redisconf: the server may lose acknowledged writes (want appendonly yes and appendfsync always)")

// Durability is what CONFIG GET reported of a server's persistence.
type Durability struct {
	AppendOnly  string // "yes" or "no"
	AppendFsync string // "always", "everysec" or "no"
}

// Durable reports whether every acknowledged write is on disk before the
// server answers it: appendonly yes and appendfsync always.
func (d Durability) Durable() bool { return d.AppendOnly == "yes" && d.AppendFsync == "always" }

// String names both settings as redis.conf spells them.
func (d Durability) String() string {
	return fmt.Sprintf("appendonly %s, appendfsync %s", orUnset(d.AppendOnly), orUnset(d.AppendFsync))
}

func orUnset(s string) string {
	if s == "" {
		return "(not reported)"
	}
	return s
}

// CheckDurable reads the server's appendonly and appendfsync and returns
// a *NotDurableError (matching ErrNotDurable) unless they are yes and
// always. A write the server acknowledged and then lost (a restart with
// appendfsync everysec, or with no append-only file at all) takes the
// highest fence or the last fence issued with it. A server that does not
// let it read them (CONFIG renamed or denied, as managed services do) is
// logged under who and accepted, as CheckNoEviction does: the operator is
// then responsible. A connection error is returned as it is.
func CheckDurable(ctx context.Context, c goredis.UniversalClient, log *slog.Logger, who string) error {
	if log == nil {
		log = slog.Default()
	}
	m, ok, err := readConfig(ctx, c, log, who, "append*", "appendonly and appendfsync", "they are yes and always")
	if !ok || err != nil {
		return err
	}
	d := Durability{AppendOnly: m["appendonly"], AppendFsync: m["appendfsync"]}
	if d.AppendOnly == "" && d.AppendFsync == "" {
		log.Warn(who + ": the server does not report appendonly and appendfsync; make sure they are yes and always")
		return nil
	}
	if !d.Durable() {
		return &NotDurableError{Reported: d}
	}
	return nil
}

// NotDurableError is CheckDurable's refusal: what the server reported.
// It matches ErrNotDurable (errors.Is).
type NotDurableError struct{ Reported Durability }

func (e *NotDurableError) Error() string {
	return fmt.Sprintf("%v: it runs with %s", ErrNotDurable, e.Reported)
}

// Unwrap returns ErrNotDurable.
func (e *NotDurableError) Unwrap() error { return ErrNotDurable }

// WarnNonDurable logs, under who, that a server reporting d was accepted
// although it may lose acknowledged writes, because the operator allowed
// it (allowNonDurable): a development setting must not pass unseen.
func WarnNonDurable(log *slog.Logger, who string, d Durability) {
	if log == nil {
		log = slog.Default()
	}
	log.Warn(who+": the server may lose acknowledged writes (it runs with "+d.String()+
		"), accepted because allowNonDurable is set: a write it loses in a restart can take a highest fence with it; never where a lost write matters",
		"appendonly", d.AppendOnly, "appendfsync", d.AppendFsync)
}
