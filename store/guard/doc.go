// Package guard reads the per-resource checkpoints that sidecars kept on
// the pod before the outside anchor (package store/anchor) replaced the
// checkpoint guard: the bbolt file store-checkpoint.db and the JSON file
// of still earlier versions, store-checkpoint.json. Nothing writes them
// any more. At start a sidecar upgraded from such a version reads them
// (Read, ReadJSON), hands them to the anchor (anchor.Options.Upgrade),
// which compares each with the store's record and anchors or pauses what
// the store lost, and then renames the files.
//
// The guard was a wrapper around the store that compared every Begin's
// record with the checkpoint this pod had written. It is gone because the
// anchor catches everything it caught and what it could not: the
// checkpoints lived on the pod (an emptyDir in the chart), so a new pod, or
// a replica that did not take part in the lost writes, adopted whatever the
// store held; and they kept the highest fence and last segment, not the
// mutation in flight (a Redis restored while a segment was in flight let
// its retry through again).
//
// # The files
//
// store-checkpoint.db is a bbolt file with three buckets:
//
//	meta         "format" = "fencegate.guard", "schema" = "1",
//	             "clock" = last Touched (8, BE), "count" = checkpoints (8, BE)
//	checkpoints  resource → Checkpoint (see Checkpoint.Encode)
//	lru          Touched (8, BE) → resource (index for eviction)
//
// store-checkpoint.json is {"version": 1, "clock": N, "resources":
// {resource: Checkpoint}}.
package guard
