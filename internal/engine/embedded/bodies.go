package embedded

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Message records (key kind kindBody) are read and written here, the one
// place that knows where they live. On disk they are Pebble's, written in
// the batch of the change they belong to. In memory (Options.InMemory)
// they are kept in a Go table instead, and Pebble holds only the small
// records (receive states, histories, deduplication entries, queues):
// nothing in memory survives a stop, so the table loses nothing Pebble
// would have kept, while a record in Pebble was copied into a batch, a
// memtable arena and, once flushed, an sstable file and the block cache
// (each a first touch of fresh memory), and every receive read it back
// through an iterator.
//
// The table's writes take effect at once, not when the batch they go with
// commits: a record is reached only through the index, which takes a
// message in once its batch has committed; a purge or queue deletion that
// overtakes a write is repaired by the writer, as for Pebble's range
// deletes; and in memory a commit fails only once the store is closed.

// bodyTable holds the message records of a queue of an in-memory store.
// It has a lock of its own: records are written and read outside the
// queue lock.
type bodyTable struct {
	mu sync.RWMutex
	m  map[uint64][]byte // by seq; records never change
}

// putBody stores rec (copied) as the record of q's message seq.
func (q *queue) putBody(b *pebble.Batch, seq uint64, rec []byte) error {
	if !q.e.memory {
		k := makeMsgKey(q.id, seq, kindBody)
		return b.Set(k[:], rec, nil)
	}
	t := &q.bodies
	rec = bytes.Clone(rec)
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[uint64][]byte)
	}
	t.m[seq] = rec
	t.mu.Unlock()
	return nil
}

// dropBody deletes the record of q's message seq. single says the record
// was written once since its key was last deleted, so that on disk a
// single delete lets compactions drop both as soon as they meet.
func (q *queue) dropBody(b *pebble.Batch, seq uint64, single bool) {
	if !q.e.memory {
		k := makeMsgKey(q.id, seq, kindBody)
		if single {
			_ = b.SingleDelete(k[:], nil)
		} else {
			_ = b.Delete(k[:], nil)
		}
		return
	}
	t := &q.bodies
	t.mu.Lock()
	delete(t.m, seq)
	t.mu.Unlock()
}

// dropBodiesBelow deletes the records of q's messages below seq from the
// table (a purge; with seq 0, a queue deletion: all of them). On disk the
// range delete of the queue's messages covers them.
func (q *queue) dropBodiesBelow(seq uint64) {
	if !q.e.memory {
		return
	}
	t := &q.bodies
	t.mu.Lock()
	if seq == 0 {
		t.m = nil
	} else {
		for s := range t.m {
			if s < seq {
				delete(t.m, s)
			}
		}
	}
	t.mu.Unlock()
}

// body returns the record of q's message seq, nil if it has none. The
// caller must not change it.
func (q *queue) body(seq uint64) ([]byte, error) {
	if !q.e.memory {
		k := makeMsgKey(q.id, seq, kindBody)
		return q.e.get(k[:])
	}
	q.bodies.mu.RLock()
	defer q.bodies.mu.RUnlock()
	return q.bodies.m[seq], nil
}

// bodyReader reads records of one queue in ascending seq order: on disk
// one iterator serves them all, as taken messages are mostly neighbours,
// so that ascending seeks reuse the blocks already loaded.
type bodyReader struct {
	q  *queue
	it *pebble.Iterator // opened at the first read from disk
	// One key for every seek: declared in read, each would escape to the
	// heap (Pebble copies what it keeps).
	k msgKey
}

// read returns the record of message seq, nil if it has none (purged or
// expired since it was taken); on disk it is valid until the next read.
func (r *bodyReader) read(seq uint64) ([]byte, error) {
	if r.q.e.memory {
		return r.q.body(seq)
	}
	if r.it == nil {
		lo, hi := queueMsgSpan(r.q.id)
		var err error
		if r.it, err = r.q.e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi}); err != nil {
			return nil, fmt.Errorf("embedded: read messages: %w", err)
		}
	}
	r.k = makeMsgKey(r.q.id, seq, kindBody)
	if !r.it.SeekGE(r.k[:]) || !bytes.Equal(r.it.Key(), r.k[:]) {
		if err := r.it.Error(); err != nil {
			return nil, fmt.Errorf("embedded: read messages: %w", err)
		}
		return nil, nil
	}
	v, err := r.it.ValueAndErr()
	if err != nil {
		return nil, fmt.Errorf("embedded: read message: %w", err)
	}
	return v, nil
}

// close releases the reader's iterator.
func (r *bodyReader) close() {
	if r.it != nil {
		r.it.Close()
		r.it = nil
	}
}

// bodyCursor walks the records of one queue in ascending seq order from a
// seq on.
type bodyCursor struct {
	// On disk: an iterator over the queue's message keys, at a record
	// while valid; closed once closed is set.
	it     *pebble.Iterator
	closed bool
	// In memory: the seqs the table held at the start, and where the
	// cursor is among them.
	q    *queue
	seqs []uint64
	i    int
	rec  []byte
}

// bodiesFrom opens a cursor at q's first record at or after seq from.
func (q *queue) bodiesFrom(from uint64) (*bodyCursor, error) {
	if !q.e.memory {
		lo, _ := msgSpan(q.id, from, 0)
		_, hi := queueMsgSpan(q.id)
		it, err := q.e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return nil, fmt.Errorf("embedded: read messages: %w", err)
		}
		c := &bodyCursor{it: it}
		c.atBody(it.First())
		return c, nil
	}
	c := &bodyCursor{q: q, i: -1}
	q.bodies.mu.RLock()
	for s := range q.bodies.m {
		if s >= from {
			c.seqs = append(c.seqs, s)
		}
	}
	q.bodies.mu.RUnlock()
	slices.Sort(c.seqs)
	c.next()
	return c, nil
}

// atBody moves the iterator, which valid says is at a key, on to the first
// message record from there (past state and history records).
func (c *bodyCursor) atBody(valid bool) {
	for ; valid; valid = c.it.Next() {
		if _, _, kind, ok := parseMsgKey(c.it.Key()); ok && kind == kindBody {
			return
		}
	}
}

// valid reports whether the cursor is at a record.
func (c *bodyCursor) valid() bool {
	if c.it != nil {
		return c.it.Valid()
	}
	return c.i < len(c.seqs)
}

// next moves the cursor to the following record; it reports valid.
func (c *bodyCursor) next() bool {
	if c.it != nil {
		c.atBody(c.it.Next())
		return c.it.Valid()
	}
	// Records deleted since the cursor opened are passed over.
	for c.i++; c.i < len(c.seqs); c.i++ {
		if c.rec, _ = c.q.body(c.seqs[c.i]); c.rec != nil {
			return true
		}
	}
	return false
}

// seq is the seq of the record the cursor is at.
func (c *bodyCursor) seq() uint64 {
	if c.it != nil {
		_, seq, _, _ := parseMsgKey(c.it.Key())
		return seq
	}
	return c.seqs[c.i]
}

// value is the record the cursor is at, valid until the cursor moves.
func (c *bodyCursor) value() ([]byte, error) {
	if c.it != nil {
		return c.it.ValueAndErr()
	}
	return c.rec, nil
}

// close releases the cursor, reporting an error the walk met; closing it
// again does nothing.
func (c *bodyCursor) close() error {
	if c.it == nil || c.closed {
		return nil
	}
	c.closed = true
	err := c.it.Error()
	if cerr := c.it.Close(); err == nil {
		err = cerr
	}
	return err
}
