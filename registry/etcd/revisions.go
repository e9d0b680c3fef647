package etcd

// etcd's own revision across a restore.
//
// A snapshot restored without --bump-revision moves etcd's revision back.
// The registry's data is met by the watermark (recover.go), but a wake-up
// watch is resumed by the client at the revision it had reached: on the
// restored cluster that revision lies in the future, and the watch would
// wait, silently, for revisions the cluster has yet to reach, missing the
// wake-ups meanwhile. A replica whose meta read shows no rollback (another
// replica recovered first) would never know. So each step notes the etcd
// revision its reads were made at: one below the highest that a step had
// read at before this one was sent (a read is linearizable, so it can only
// be at or above it) means etcd's revision went back, and the Store's
// watches start again from the current revision (restartWatches). With
// --bump-revision --mark-compacted the revision moves forward and the
// resumed watch is cancelled as compacted: the watch loop watches again by
// itself (notify.go).

// readAt notes rev, the etcd revision of a step's reads or of a watch
// response (0: the step read nothing), given seen, the highest revision
// noted before the step began (0 for a watch response: it only raises).
func (s *Store) readAt(seen, rev int64) {
	if rev == 0 {
		return
	}
	if rev < seen {
		s.log.Warn("registry/etcd: etcd's revision went back (restored from a snapshot without --bump-revision?): watching the wake-up keys again from the current revision",
			"revision", rev, "seen", seen)
		s.etcdRev.Store(rev)
		s.restartWatches()
		return
	}
	for {
		cur := s.etcdRev.Load()
		if rev <= cur || s.etcdRev.CompareAndSwap(cur, rev) {
			return
		}
	}
}
