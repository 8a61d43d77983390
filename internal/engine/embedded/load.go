package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
)

// load rebuilds every queue's index from the store: queues first, then one
// forward scan over all messages (in seq order per queue, each body followed
// by its state), so FIFO groups are rebuilt in their order, then the FIFO
// deduplication entries. Messages and entries past their time, records of
// queues that no longer exist and states without a body are deleted.
func (e *Engine) load(ctx context.Context) error {
	byID := make(map[uint64]*queue)
	err := e.scan([]byte{prefixQueue}, []byte{prefixQueue + 1}, func(it *pebble.Iterator) (bool, error) {
		k := it.Key()
		if len(k) != 9 {
			return false, fmt.Errorf("embedded: queue key %x: %w", k, errCorrupt)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("embedded: read queue: %w", err)
		}
		d, err := decodeQueue(v)
		if err != nil {
			return false, fmt.Errorf("embedded: queue key %x: %w", k, err)
		}
		q := newQueue(e, binary.BigEndian.Uint64(k[1:]), d, e.firstID)
		byID[q.id] = q
		e.queues[qname{d.Account, d.Name}] = q
		if d.ARN != "" {
			e.arns[d.ARN] = q
		}
		return false, nil
	})
	if err != nil {
		return err
	}

	cleanup := e.db.NewBatch()
	defer cleanup.Close()
	loaded := make(map[*queue]*loadedMsgs, len(byID))
	var last *message
	var lastQ *queue
	var lastL *loadedMsgs
	n := 0
	err = e.scan([]byte{prefixMsg}, []byte{prefixMsg + 1}, func(it *pebble.Iterator) (bool, error) {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		qid, seq, kind, ok := parseMsgKey(it.Key())
		if !ok {
			return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), errCorrupt)
		}
		q := lastQ
		if q == nil || q.id != qid {
			q = byID[qid]
		}
		if q == nil {
			// Written by a send that raced the queue's delete.
			lo, hi := queueMsgSpan(qid)
			_ = cleanup.DeleteRange(lo, hi, nil)
			it.SeekGE(hi)
			return true, nil
		}
		if kind == kindHistory {
			// Its value is read only when asked for (history.go).
			if last == nil || lastQ != q || last.seq != seq {
				_ = cleanup.Delete(it.Key(), nil)
			} else {
				last.history = true
			}
			return false, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("embedded: read message: %w", err)
		}
		switch kind {
		case kindBody:
			sentAt, visibleAt, in, err := decodeMessageHead(v)
			if err != nil {
				return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), err)
			}
			if q != lastQ {
				if lastL = loaded[q]; lastL == nil {
					lastL = &loadedMsgs{fifo: q.fifo}
					loaded[q] = lastL
				}
			}
			var gid string
			if q.fifo {
				if gid, err = decodeMessageGroup(v); err != nil {
					return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), err)
				}
			}
			last = lastL.add(gid)
			*last = message{seq: seq, sentAt: sentAt, deadline: visibleAt, timerSlot: -1, ageSlot: -1, oldSlot: -1}
			q.setMovedLocked(last, in) // no one else sees q yet
			lastQ = q
		case kindState:
			if last == nil || lastQ != q || last.seq != seq {
				_ = cleanup.Delete(it.Key(), nil)
				return false, nil
			}
			s, err := decodeState(v)
			if err != nil {
				return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), err)
			}
			last.receiveCount = uint32(min(s.receiveCount, math.MaxUint32))
			last.gen = s.gen
			last.firstReceiveAt = s.firstReceiveAt
			last.receivedAt = s.receivedAt
			last.deadline = s.visibleAt
			last.pending = s.pending
		default:
			return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), errCorrupt)
		}
		return false, nil
	})
	if err != nil {
		return err
	}

	now := e.now()
	for q, l := range loaded {
		ret := q.desc.Settings.Retention
		q.mu.Lock()
		q.growIndexLocked(l.n)
		for c, chunk := range l.chunks {
			for i := range chunk {
				m := &chunk[i]
				if ret > 0 && after(m.sentAt, ret) <= now {
					q.deleteMsgKeys(cleanup, m)
					delete(q.movedIn, m.seq)
					continue
				}
				if q.fifo && m.receiveCount == 0 {
					// The FIFO queue delay is retroactive: it may have changed
					// since the record was written.
					m.deadline = after(m.sentAt, max0(q.desc.Settings.Delay))
				}
				var gid string
				if q.fifo {
					gid = l.gids[c][i]
				}
				q.insertLocked(m, gid, now)
			}
		}
		q.mu.Unlock()
	}
	if err := e.loadDedup(byID, cleanup, now); err != nil {
		return err
	}
	if err := e.loadTasks(byID, cleanup); err != nil {
		return err
	}
	if err := e.loadDeleted(cleanup); err != nil {
		return err
	}
	if !cleanup.Empty() {
		if err := cleanup.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("embedded: clean up store: %w", err)
		}
	}
	for _, q := range byID {
		q.mu.Lock()
		q.rearmLocked(now)
		q.mu.Unlock()
	}
	e.log.Info("store loaded", "queues", len(byID), "records", n)
	return nil
}

// loadDeleted reserves again the names of the queues deleted less than
// RecreateDelay ago.
func (e *Engine) loadDeleted(cleanup *pebble.Batch) error {
	now := e.clock.Now()
	return e.scan([]byte{prefixDeleted}, []byte{prefixDeleted + 1}, func(it *pebble.Iterator) (bool, error) {
		key, ok := parseDeletedKey(it.Key())
		if !ok {
			return false, fmt.Errorf("embedded: deleted queue key %x: %w", it.Key(), errCorrupt)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("embedded: read deleted queue: %w", err)
		}
		at, err := decodeDeleted(v)
		if err != nil {
			return false, fmt.Errorf("embedded: deleted queue key %x: %w", it.Key(), err)
		}
		if _, exists := e.queues[key]; exists || now.Sub(at) >= e.waits.RecreateDelay() {
			_ = cleanup.Delete(it.Key(), nil)
			return false, nil
		}
		e.deleted[key] = at
		return false, nil
	})
}

// loadDedup rebuilds the FIFO queues' deduplication windows. Records are
// in seq order per queue, which is their send order.
func (e *Engine) loadDedup(byID map[uint64]*queue, cleanup *pebble.Batch, now int64) error {
	return e.scan([]byte{prefixDedup}, []byte{prefixDedup + 1}, func(it *pebble.Iterator) (bool, error) {
		k := it.Key()
		if len(k) != 17 {
			return false, fmt.Errorf("embedded: deduplication key %x: %w", k, errCorrupt)
		}
		qid, seq := binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:])
		q := byID[qid]
		if q == nil || !q.fifo {
			// Written by a send that raced the queue's delete.
			lo, hi := queueDedupSpan(qid)
			_ = cleanup.DeleteRange(lo, hi, nil)
			it.SeekGE(hi)
			return true, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("embedded: read deduplication entry: %w", err)
		}
		d, err := decodeDedup(v)
		if err != nil {
			return false, fmt.Errorf("embedded: deduplication key %x: %w", k, err)
		}
		if expired(d.sentAt, now) {
			_ = cleanup.SingleDelete(k, nil)
			return false, nil
		}
		q.dedup.add(&dedupEntry{
			key:       dedupKey{group: d.group, id: d.dedupID},
			messageID: d.messageID,
			seq:       seq,
			sentAt:    d.sentAt,
		})
		return false, nil
	})
}

// loadedMsgs collects one queue's messages during the scan, in chunks that
// become the index entries themselves: one allocation per chunk, and
// pointers into a chunk stay valid as more are added. A chunk lives as long
// as any of its messages is in the index, so chunks are kept small.
type loadedMsgs struct {
	fifo   bool
	chunks [][]message
	gids   [][]string // FIFO queues: each message's group id, by chunk
	n      int
}

// loadChunk messages fill a 32 KiB allocation, the largest size class.
const loadChunk = 32 << 10 / int(unsafe.Sizeof(message{}))

// add returns the place of the next message, whose group is gid.
func (l *loadedMsgs) add(gid string) *message {
	c := len(l.chunks) - 1
	if c < 0 || len(l.chunks[c]) == loadChunk {
		l.chunks = append(l.chunks, make([]message, 0, loadChunk))
		if l.fifo {
			l.gids = append(l.gids, make([]string, 0, loadChunk))
		}
		c++
	}
	if l.fifo {
		l.gids[c] = append(l.gids[c], gid)
	}
	l.chunks[c] = l.chunks[c][:len(l.chunks[c])+1]
	l.n++
	return &l.chunks[c][len(l.chunks[c])-1]
}

// scan calls fn on every key in [lo, hi); fn reports whether it has moved
// the iterator itself.
func (e *Engine) scan(lo, hi []byte, fn func(*pebble.Iterator) (moved bool, err error)) error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("embedded: scan: %w", err)
	}
	for valid := it.First(); valid; {
		moved, err := fn(it)
		if err != nil {
			_ = it.Close()
			return err
		}
		if moved {
			valid = it.Valid()
		} else {
			valid = it.Next()
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return fmt.Errorf("embedded: scan: %w", err)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("embedded: scan: %w", err)
	}
	return nil
}
