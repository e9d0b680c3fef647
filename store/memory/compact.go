package memory

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/fencegate/fencegate/store"
)

// fenceSeq orders a resource's receipts in the compaction index.
type fenceSeq struct{ fence, seq uint64 }

func compareFenceSeq(a, b fenceSeq) int {
	if c := cmp.Compare(a.fence, b.fence); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// indexReceipt adds a stored receipt to its resource's compaction index.
// Receipts are written in ascending order per resource, so this appends.
func (s *Store) indexReceipt(k store.ReceiptKey) {
	if s.byResource == nil {
		s.byResource = map[string][]fenceSeq{}
	}
	list := s.byResource[k.Resource]
	fs := fenceSeq{k.Fence, k.Seq}
	if i, found := slices.BinarySearchFunc(list, fs, compareFenceSeq); !found {
		s.byResource[k.Resource] = slices.Insert(list, i, fs)
	}
}

// stamps yields the receipts of resource in ascending (fence, seq) order.
func (s *Store) stamps(resource string) iter.Seq2[store.ReceiptStamp, error] {
	return func(yield func(store.ReceiptStamp, error) bool) {
		for _, fs := range s.byResource[resource] {
			k := store.ReceiptKey{Resource: resource, Fence: fs.fence, Seq: fs.seq}
			r := s.receipts[k]
			if r == nil {
				yield(store.ReceiptStamp{}, fmt.Errorf("store: memory: receipt index names a missing receipt %v: %w", k, store.ErrCorrupt))
				return
			}
			if !yield(r.Stamp(), nil) {
				return
			}
		}
	}
}

// plan runs store.PlanCompaction for one resource.
func (s *Store) plan(resource string, in store.CompactInput, budget int) (store.CompactPlan, error) {
	var qs []store.Quarantine
	for _, q := range s.quarantine[resource] {
		qs = append(qs, q)
	}
	return store.PlanCompaction(s.peek(resource), len(s.byResource[resource]), s.stamps(resource), qs, in, budget)
}

// Compact implements store.Store. It runs under the store's mutex: it finds
// the resources with something to delete (a bounded look at each), then
// compacts them in resource order until MaxDeletes, so that a deterministic
// simulation replays identically.
func (s *Store) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	if err := in.Validate(); err != nil {
		return store.CompactResult{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.CompactResult{}, err
	}
	defer s.mu.Unlock()
	var due []string
	consider := func(resource string) error {
		p, err := s.plan(resource, in, 1)
		if err != nil {
			return err
		}
		if p.Deletes() > 0 {
			due = append(due, resource)
		}
		return nil
	}
	for resource := range s.byResource {
		if err := consider(resource); err != nil {
			return store.CompactResult{}, err
		}
	}
	for resource := range s.quarantine {
		if _, ok := s.byResource[resource]; !ok {
			if err := consider(resource); err != nil {
				return store.CompactResult{}, err
			}
		}
	}
	slices.Sort(due)
	var res store.CompactResult
	for _, resource := range due {
		budget := in.MaxDeletes - res.Receipts - res.Quarantine
		if budget == 0 {
			res.More = true // due[i:] have something to delete
			break
		}
		p, err := s.plan(resource, in, budget)
		if err != nil {
			return res, err
		}
		if err := s.applyPlan(resource, p); err != nil {
			return res, err
		}
		res.Receipts += len(p.Receipts)
		res.Quarantine += len(p.Quarantine)
		res.More = res.More || p.More
	}
	return res, nil
}

// applyPlan deletes what p lists, keeping the operation-ID and compaction
// indexes in step. The receipts of a plan are a prefix of the index.
func (s *Store) applyPlan(resource string, p store.CompactPlan) error {
	list := s.byResource[resource]
	if len(p.Receipts) > len(list) {
		return fmt.Errorf("store: memory: compact %q: plan longer than index: %w", resource, store.ErrCorrupt)
	}
	for i, st := range p.Receipts {
		if k := st.Key; k.Resource != resource || (fenceSeq{k.Fence, k.Seq}) != list[i] {
			return fmt.Errorf("store: memory: compact %q: plan is not a prefix of the index: %w", resource, store.ErrCorrupt)
		}
	}
	for _, st := range p.Receipts {
		delete(s.receipts, st.Key)
		ok := opKey{resource, st.OperationID}
		fences := s.ops[ok]
		if i, found := slices.BinarySearch(fences, st.Key.Fence); found {
			fences = slices.Delete(fences, i, i+1)
		}
		if len(fences) == 0 {
			delete(s.ops, ok)
		} else {
			s.ops[ok] = fences
		}
	}
	if rest := list[len(p.Receipts):]; len(rest) == 0 {
		delete(s.byResource, resource)
	} else {
		s.byResource[resource] = rest
	}
	if len(p.Quarantine) > 0 {
		byID := s.quarantine[resource]
		for _, id := range p.Quarantine {
			delete(byID, id)
		}
		if len(byID) == 0 {
			delete(s.quarantine, resource)
		}
	}
	return nil
}

// Stats implements store.Store. Bytes is an estimate of the heap the store
// holds: the lengths of the strings, headers and bodies it keeps plus a fixed
// overhead per entry for struct fields and map slots. It walks every entry.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.lock(ctx); err != nil {
		return store.Stats{}, err
	}
	defer s.mu.Unlock()
	st := store.Stats{Resources: len(s.records), Receipts: len(s.receipts)}
	var n int64
	for _, r := range s.records {
		n += recordOverhead + int64(2*len(r.Resource)+len(r.Root)+len(r.Lease)+len(r.GrantDigest))
		if m := r.InFlight; m != nil {
			n += mutationOverhead + int64(len(m.Resource)+len(m.Root)+len(m.OperationID)+len(m.PayloadDigest)+len(m.GrantDigest)+len(m.Lease))
		}
		if p := r.Pause; p != nil {
			n += pauseOverhead + int64(len(p.Detail))
		}
	}
	for _, r := range s.receipts {
		n += receiptOverhead + int64(2*len(r.Resource)+len(r.ID)+len(r.Root)+2*len(r.OperationID)+
			len(r.PayloadDigest)+len(r.GrantDigest)+cap(r.Response.Body))
		for k, vs := range r.Response.Header {
			n += headerOverhead + int64(len(k))
			for _, v := range vs {
				n += stringOverhead + int64(len(v))
			}
		}
	}
	for _, byID := range s.quarantine {
		st.Quarantined += len(byID)
		for id, q := range byID {
			n += quarantineOverhead + int64(len(id)+len(q.ID)+len(q.Resource)+len(q.Root)+len(q.OperationID)+
				len(q.PayloadDigest)+len(q.AcceptedPayloadDigest)+len(q.ReceiptID)+len(q.GrantDigest))
		}
	}
	for shape, e := range s.ledger {
		n += recordOverhead + int64(2*len(shape))
		for _, ev := range e.History {
			n += stringOverhead + 24 + int64(len(ev.Kind)+len(ev.Detail))
		}
	}
	st.Bytes = n
	return st, nil
}

// Per-entry overheads of the Stats estimate: struct sizes rounded up, plus
// map slots and index entries.
const (
	stringOverhead     = 16
	headerOverhead     = 48
	recordOverhead     = 320
	mutationOverhead   = 256
	pauseOverhead      = 96
	receiptOverhead    = 480
	quarantineOverhead = 320
)
