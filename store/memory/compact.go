package memory

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
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
			b, ok := s.receipts[k]
			if !ok {
				yield(store.ReceiptStamp{}, fmt.Errorf("store: memory: receipt index names a missing receipt %v: %w", k, store.ErrCorrupt))
				return
			}
			st, err := codec.DecodeStamp(b)
			if err != nil {
				yield(store.ReceiptStamp{}, fmt.Errorf("store: memory: receipt %v: %w", k, err))
				return
			}
			if !yield(st, nil) {
				return
			}
		}
	}
}

// CompactResources lists the resources with receipts or quarantine
// entries, in resource order.
func (t tx) CompactResources() ([]string, error) {
	out := make([]string, 0, len(t.s.byResource)+len(t.s.quarantine))
	for resource := range t.s.byResource {
		out = append(out, resource)
	}
	for resource := range t.s.quarantine {
		if _, ok := t.s.byResource[resource]; !ok {
			out = append(out, resource)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (t tx) CompactSnapshot(resource string) (store.CompactSnapshot, error) {
	snap := store.CompactSnapshot{Receipts: len(t.s.byResource[resource])}
	if r := t.s.records[resource]; r != nil {
		snap.Record = *r
	}
	for _, q := range t.s.quarantine[resource] {
		snap.Quarantine = append(snap.Quarantine, q)
	}
	return snap, nil
}

func (t tx) Stamps(resource string) iter.Seq2[store.ReceiptStamp, error] { return t.s.stamps(resource) }

// DeleteReceipt deletes a receipt, keeping the operation-ID and compaction
// indexes in step.
func (t tx) DeleteReceipt(st store.ReceiptStamp) error {
	s, k := t.s, st.Key
	delete(s.receipts, k)
	ok := opKey{k.Resource, st.OperationID}
	fences := s.ops[ok]
	if i, found := slices.BinarySearch(fences, k.Fence); found {
		fences = slices.Delete(fences, i, i+1)
	}
	if len(fences) == 0 {
		delete(s.ops, ok)
	} else {
		s.ops[ok] = fences
	}
	list := s.byResource[k.Resource]
	if i, found := slices.BinarySearchFunc(list, fenceSeq{k.Fence, k.Seq}, compareFenceSeq); found {
		list = slices.Delete(list, i, i+1)
	} else {
		return fmt.Errorf("store: memory: compact %v: not in the receipt index: %w", k, store.ErrCorrupt)
	}
	if len(list) == 0 {
		delete(s.byResource, k.Resource)
	} else {
		s.byResource[k.Resource] = list
	}
	return nil
}

func (t tx) DeleteQuarantine(resource string, ids []string) error {
	byID := t.s.quarantine[resource]
	for _, id := range ids {
		delete(byID, id)
	}
	if len(byID) == 0 {
		delete(t.s.quarantine, resource)
	}
	return nil
}

// Stats reads the store's size. Bytes is an estimate of the heap the store
// holds: the lengths of the strings, headers and bodies it keeps plus a fixed
// overhead per entry for struct fields and map slots. It walks every entry.
func (t tx) Stats() (store.Stats, error) {
	s := t.s
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
	for k, b := range s.receipts {
		n += receiptOverhead + int64(len(k.Resource)+cap(b))
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
// map slots and index entries (a receipt: its map slot, its key's and its
// slice's headers, its compaction and operation-ID index entries, around its
// encoded bytes).
const (
	stringOverhead     = 16
	recordOverhead     = 320
	mutationOverhead   = 256
	pauseOverhead      = 96
	receiptOverhead    = 128
	quarantineOverhead = 320
)

// TrimReceipts of store.Tx: the resource's receipt count is its index's
// length.
func (t tx) TrimReceipts(rec store.Record, keep int) (int, error) {
	return store.TrimOldest(t, rec, len(t.s.byResource[rec.Resource]), keep)
}
