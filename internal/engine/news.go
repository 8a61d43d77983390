package engine

import (
	"slices"
	"strings"
	"sync"
)

// MaxNewsKeys bounds the records a RecordNews holds to be read again; past
// it, a record's kind is read again whole.
const MaxNewsKeys = 10000

// RecordRef names one record.
type RecordRef struct{ Kind, Key string }

// RecordBatch is what a service has to read again: whole kinds, and single
// records of the other kinds.
type RecordBatch struct {
	Kinds []string    // in the order the service gave its kinds
	Keys  []RecordRef // by kind in that order, then by key
}

// Empty reports whether there is nothing to read.
func (b RecordBatch) Empty() bool { return len(b.Kinds) == 0 && len(b.Keys) == 0 }

// RecordNews gathers what Cluster.WatchRecords reports of a service's
// kinds until the service's own goroutine takes it: Add never blocks (the
// store calls it on its goroutine), a record changed twice is read once,
// and the records held are bounded by MaxNewsKeys. It is safe for
// concurrent use.
type RecordNews struct {
	kinds []string // the service's kinds, in the order a reread takes them
	wake  chan struct{}

	mu    sync.Mutex
	whole map[string]bool
	keys  map[RecordRef]struct{}
}

// NewRecordNews gathers news of kinds, which a batch lists in this order.
func NewRecordNews(kinds ...string) *RecordNews {
	return &RecordNews{kinds: kinds, wake: make(chan struct{}, 1), whole: map[string]bool{}, keys: map[RecordRef]struct{}{}}
}

// Add records that kind/key changed, as WatchRecords tells it: kind ""
// means every kind, key "" every record of the kind. Other kinds than the
// service's are ignored.
func (n *RecordNews) Add(kind, key string) {
	if kind != "" && !slices.Contains(n.kinds, kind) {
		return
	}
	n.mu.Lock()
	switch {
	case kind == "":
		for _, k := range n.kinds {
			n.whole[k] = true
		}
	case key == "" || len(n.keys) >= MaxNewsKeys:
		n.whole[kind] = true
	default:
		n.keys[RecordRef{kind, key}] = struct{}{}
	}
	n.mu.Unlock()
	n.signal()
}

// Wake is signalled when news has come since the last Take.
func (n *RecordNews) Wake() <-chan struct{} { return n.wake }

func (n *RecordNews) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Take empties the news and returns it as a batch.
func (n *RecordNews) Take() RecordBatch {
	n.mu.Lock()
	whole, keys := n.whole, n.keys
	n.whole, n.keys = map[string]bool{}, map[RecordRef]struct{}{}
	n.mu.Unlock()
	var b RecordBatch
	for _, k := range n.kinds {
		if whole[k] {
			b.Kinds = append(b.Kinds, k)
		}
	}
	for r := range keys {
		if !whole[r.Kind] {
			b.Keys = append(b.Keys, r)
		}
	}
	order := func(r RecordRef) int { return slices.Index(n.kinds, r.Kind) }
	slices.SortFunc(b.Keys, func(a, c RecordRef) int {
		if d := order(a) - order(c); d != 0 {
			return d
		}
		return strings.Compare(a.Key, c.Key)
	})
	return b
}

// PutBack returns a batch that could not be applied, to be taken again
// with the next news.
func (n *RecordNews) PutBack(b RecordBatch) {
	if b.Empty() {
		return
	}
	for _, k := range b.Kinds {
		n.Add(k, "")
	}
	for _, r := range b.Keys {
		n.Add(r.Kind, r.Key)
	}
}
