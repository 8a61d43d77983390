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
	// order holds every seq of m, ascending, for walks in seq order (peeks),
	// and seqs deleted since it was last compacted. Seqs are handed out in
	// ascending order, so a put mostly appends.
	order []uint64
}

// put stores rec as seq's record; the caller holds mu.
func (t *bodyTable) put(seq uint64, rec []byte) {
	if t.m == nil {
		t.m = make(map[uint64][]byte)
	}
	t.m[seq] = rec
	if n := len(t.order); n == 0 || t.order[n-1] < seq {
		t.order = append(t.order, seq)
	} else if i, found := slices.BinarySearch(t.order, seq); !found {
		t.order = slices.Insert(t.order, i, seq) // a concurrent send's, a few places back
	}
}

// drop deletes seq's record; the caller holds mu. Once order holds more
// deleted seqs than live ones, it is compacted: each deletion pays for
// itself.
func (t *bodyTable) drop(seq uint64) {
	delete(t.m, seq)
	if len(t.order) > 2*len(t.m)+64 {
		t.order = slices.DeleteFunc(t.order, func(s uint64) bool { _, ok := t.m[s]; return !ok })
	}
}

// dropBelow deletes the records of the seqs below seq; the caller holds
// mu.
func (t *bodyTable) dropBelow(seq uint64) {
	i, _ := slices.BinarySearch(t.order, seq)
	for _, s := range t.order[:i] {
		delete(t.m, s)
	}
	t.order = slices.Delete(t.order, 0, i)
}

// after returns the first seq at or after from that has a record, the
// record, and the seq's place in order; ok is false if there is none.
// hint is where from would be in order, if the caller knows (a walk's
// next step), sparing the search while order has not changed. The caller
// holds mu (read).
func (t *bodyTable) after(from uint64, hint int) (seq uint64, rec []byte, i int, ok bool) {
	i = hint
	if i < 0 || i > len(t.order) || (i > 0 && t.order[i-1] >= from) || (i < len(t.order) && t.order[i] < from) {
		i, _ = slices.BinarySearch(t.order, from)
	}
	for ; i < len(t.order); i++ {
		if rec, ok = t.m[t.order[i]]; ok {
			return t.order[i], rec, i, true
		}
	}
	return 0, nil, i, false
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
	t.put(seq, rec)
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
	t.drop(seq)
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
		t.m, t.order = nil, nil
	} else {
		t.dropBelow(seq)
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
	// In memory: the queue, and the record the cursor is at (nil past
	// the last), its seq and its place in the table's order; ahead[ahd:]
	// are the records after it read under the same lock, and more says
	// the table may hold others after those.
	q     *queue
	rec   []byte
	at    uint64
	i     int
	ahead []bodyAt
	ahd   int
	more  bool
}

// bodyAt is a record read ahead by a cursor, and its seq and place.
type bodyAt struct {
	seq uint64
	rec []byte
	i   int
}

// cursorBatch is how many records an in-memory cursor reads under one
// lock: a page examines up to thousands.
const cursorBatch = 64

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
	c := &bodyCursor{q: q, ahead: make([]bodyAt, 0, cursorBatch)}
	c.seek(from, -1)
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

// seek moves an in-memory cursor to the first record at or after seq
// from. Records written or deleted since the cursor opened are seen or
// passed over: a peek checks each record it examines against the index.
func (c *bodyCursor) seek(from uint64, hint int) {
	t := &c.q.bodies
	c.ahead, c.ahd = c.ahead[:0], 0
	t.mu.RLock()
	for len(c.ahead) < cursorBatch {
		seq, rec, i, ok := t.after(from, hint)
		if !ok {
			break
		}
		c.ahead = append(c.ahead, bodyAt{seq, rec, i})
		from, hint = seq+1, i+1
	}
	t.mu.RUnlock()
	c.more = len(c.ahead) == cursorBatch
	c.step()
}

// step moves an in-memory cursor to the first record read ahead, if any.
func (c *bodyCursor) step() {
	if c.ahd == len(c.ahead) {
		c.rec = nil
		return
	}
	a := &c.ahead[c.ahd]
	c.ahd++
	c.at, c.rec, c.i = a.seq, a.rec, a.i
}

// valid reports whether the cursor is at a record.
func (c *bodyCursor) valid() bool {
	if c.it != nil {
		return c.it.Valid()
	}
	return c.rec != nil
}

// next moves the cursor to the following record; it reports valid.
func (c *bodyCursor) next() bool {
	if c.it != nil {
		c.atBody(c.it.Next())
		return c.it.Valid()
	}
	switch {
	case c.rec == nil:
	case c.ahd < len(c.ahead) || !c.more:
		c.step()
	default:
		c.seek(c.at+1, c.i+1)
	}
	return c.rec != nil
}

// seq is the seq of the record the cursor is at.
func (c *bodyCursor) seq() uint64 {
	if c.it != nil {
		_, seq, _, _ := parseMsgKey(c.it.Key())
		return seq
	}
	return c.at
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
