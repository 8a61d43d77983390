package embedded

import (
	"context"
	"encoding/binary"
	"fmt"

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
	type loadedMsg struct {
		m   *message
		gid string // FIFO queues only
	}
	loaded := make(map[*queue][]loadedMsg, len(byID))
	var last *message
	var lastQ *queue
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
		q := byID[qid]
		if q == nil {
			// Written by a send that raced the queue's delete.
			lo, hi := queueMsgSpan(qid)
			_ = cleanup.DeleteRange(lo, hi, nil)
			it.SeekGE(hi)
			return true, nil
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
			last = &message{seq: seq, sentAt: sentAt, deadline: visibleAt, timerSlot: -1, ageSlot: -1,
				movedAt: in.movedAt, movedReceives: in.movedReceives}
			lastQ = q
			var gid string
			if q.fifo {
				if gid, err = decodeMessageGroup(v); err != nil {
					return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), err)
				}
			}
			loaded[q] = append(loaded[q], loadedMsg{last, gid})
		case kindState:
			if last == nil || lastQ != q || last.seq != seq {
				_ = cleanup.Delete(it.Key(), nil)
				return false, nil
			}
			s, err := decodeState(v)
			if err != nil {
				return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), err)
			}
			last.receiveCount = s.receiveCount
			last.gen = s.gen
			last.firstReceiveAt = s.firstReceiveAt
			last.receivedAt = s.receivedAt
			last.deadline = s.visibleAt
		default:
			return false, fmt.Errorf("embedded: message key %x: %w", it.Key(), errCorrupt)
		}
		return false, nil
	})
	if err != nil {
		return err
	}

	now := e.now()
	for q, ms := range loaded {
		ret := q.desc.Settings.Retention
		q.mu.Lock()
		for _, lm := range ms {
			m := lm.m
			if ret > 0 && after(m.sentAt, ret) <= now {
				deleteMsgKeys(cleanup, q.id, m)
				continue
			}
			if q.fifo && m.receiveCount == 0 {
				// The FIFO queue delay is retroactive: it may have changed
				// since the record was written.
				m.deadline = after(m.sentAt, max0(q.desc.Settings.Delay))
			}
			q.insertLocked(m, lm.gid, now)
		}
		q.mu.Unlock()
	}
	if err := e.loadDedup(byID, cleanup, now); err != nil {
		return err
	}
	if err := e.loadTasks(byID, cleanup); err != nil {
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
