package postgres

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCommitUnknown is returned (wrapped) by a call whose COMMIT PostgreSQL
// answered with a warning instead of plain success: as when a COMMIT that
// waits for a synchronous standby is cancelled (pg_cancel_backend, an
// operator's or a pooler's cancel), the transaction "has already committed
// locally, but might not have been replicated to the standby". The write
// is on the primary but may be lost in a failover, so the call does not
// report success: its durability is unknown (for Begin the proxy refuses
// the write, and the marker left in flight becomes UNKNOWN at its
// deadline; for Commit the mutation is taken as unknown). A COMMIT
// cancelled by the call's own ctx is not this error: pgx then closes the
// connection and the call returns the ctx's error, its outcome unknown
// all the same.
var ErrCommitUnknown = errors.New("store/postgres: the commit's durability is unknown (PostgreSQL warned at COMMIT: committed locally, maybe not replicated)")

// commitWatch notes the warnings PostgreSQL sends while a COMMIT of the
// store runs: Open installs its onNotice on the pool's connections, and
// an attempt registers its connection around COMMIT (watch, then done).
type commitWatch struct {
	committing sync.Map // *pgconn.PgConn -> *commitNotice
}

// commitNotice is what a COMMIT being watched received.
type commitNotice struct {
	warned atomic.Pointer[pgconn.Notice]
}

// onNotice is the pool's pgconn.NoticeHandler: a warning on a connection
// whose COMMIT is being watched is kept, then next is called (when set).
func (w *commitWatch) onNotice(next pgconn.NoticeHandler) pgconn.NoticeHandler {
	return func(c *pgconn.PgConn, n *pgconn.Notice) {
		if v, ok := w.committing.Load(c); ok && warns(n) {
			v.(*commitNotice).warned.CompareAndSwap(nil, n)
		}
		if next != nil {
			next(c, n)
		}
	}
}

// warns reports a notice of severity WARNING: the sync-rep cancel's is
// SQLSTATE 01000, and any other warning at COMMIT is taken as unknown too
// (fail closed: the text may be localized).
func warns(n *pgconn.Notice) bool {
	sev := n.SeverityUnlocalized
	if sev == "" {
		sev = n.Severity
	}
	return sev == "WARNING"
}

// watch starts watching c's COMMIT; nil w (a pool of the caller's, New)
// watches nothing.
func (w *commitWatch) watch(c *pgconn.PgConn) *commitNotice {
	if w == nil {
		return nil
	}
	n := &commitNotice{}
	w.committing.Store(c, n)
	return n
}

// done stops watching c and returns the warning its COMMIT received, nil
// when none.
func (w *commitWatch) done(c *pgconn.PgConn, n *commitNotice) *pgconn.Notice {
	if w == nil {
		return nil
	}
	w.committing.Delete(c)
	return n.warned.Load()
}
