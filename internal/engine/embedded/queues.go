package embedded

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ferrymq/ferry/internal/engine"
)

// CreateQueue implements engine.Backend.
func (e *Engine) CreateQueue(ctx context.Context, q engine.Queue) (engine.Queue, bool, error) {
	if err := e.begin(ctx, opAdmin); err != nil {
		return engine.Queue{}, false, err
	}
	defer e.end(opAdmin)

	key := qname{q.Account, q.Name}
	if ex, err := e.lookup(q.Account, q.Name); err == nil {
		ex.mu.Lock()
		defer ex.mu.Unlock()
		return cloneQueue(&ex.desc), false, nil
	}
	now := e.clock.Now()
	b := e.db.NewBatch()
	defer b.Close()
	for k, at := range e.deleted {
		if now.Sub(at) >= e.waits.RecreateDelay() {
			delete(e.deleted, k)
			// Written with the create; if it fails, Open drops them.
			_ = b.Delete(deletedKey(k.account, k.name), nil)
		}
	}
	if _, ok := e.deleted[key]; ok {
		return engine.Queue{}, false, engine.ErrQueueDeletedRecently
	}

	desc := cloneQueue(&q)
	if desc.Created.IsZero() {
		desc.Created = normTime(now)
	}
	if desc.Modified.IsZero() {
		desc.Modified = desc.Created
	}
	id := e.nextQueueID
	e.nextQueueID++
	_ = b.Set(queueKey(id), encodeQueue(nil, &desc), nil)
	if err := b.Commit(e.writeOptions()); err != nil {
		return engine.Queue{}, false, fmt.Errorf("embedded: create queue: %w", err)
	}
	nq := newQueue(e, id, desc, e.firstID)
	e.mu.Lock()
	e.queues[key] = nq
	if desc.ARN != "" {
		e.arns[desc.ARN] = nq
	}
	e.mu.Unlock()
	return cloneQueue(&desc), true, nil
}

// GetQueue implements engine.Backend.
func (e *Engine) GetQueue(ctx context.Context, account, name string) (engine.Queue, error) {
	q, err := e.ViewQueue(ctx, account, name)
	if err != nil {
		return engine.Queue{}, err
	}
	return cloneQueue(&q), nil
}

// ViewQueue implements engine.Backend. q.desc's maps and Redrive are
// never changed in place (UpdateQueue installs fresh copies), so they can
// be shared with readers.
func (e *Engine) ViewQueue(ctx context.Context, account, name string) (engine.Queue, error) {
	var desc engine.Queue
	err := e.withQueue(ctx, account, name, opRead, func(q *queue) (commit, error) {
		desc = q.desc
		return commit{}, nil
	})
	return desc, err
}

// ListQueues implements engine.Backend.
func (e *Engine) ListQueues(ctx context.Context, account, prefix string) ([]engine.Queue, error) {
	if err := e.begin(ctx, opRead); err != nil {
		return nil, err
	}
	defer e.end(opRead)
	var qs []*queue
	e.mu.RLock()
	for k, q := range e.queues {
		if k.account == account && strings.HasPrefix(k.name, prefix) {
			qs = append(qs, q)
		}
	}
	e.mu.RUnlock()
	out := make([]engine.Queue, 0, len(qs))
	for _, q := range qs {
		q.mu.Lock()
		if !q.deleted {
			out = append(out, cloneQueue(&q.desc))
		}
		q.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b engine.Queue) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Accounts implements engine.Backend.
func (e *Engine) Accounts(ctx context.Context) ([]string, error) {
	if err := e.begin(ctx, opRead); err != nil {
		return nil, err
	}
	defer e.end(opRead)
	var qs []*queue
	e.mu.RLock()
	for _, q := range e.queues {
		qs = append(qs, q)
	}
	e.mu.RUnlock()
	seen := map[string]bool{}
	for _, q := range qs {
		q.mu.Lock()
		if !q.deleted {
			seen[q.desc.Account] = true
		}
		q.mu.Unlock()
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out, nil
}

// UpdateQueue implements engine.Backend. fn runs under the queue's lock and
// must not call back into the engine for the same queue. The account, name
// and FIFO flag cannot be changed. New settings apply at once: retention to
// every stored message, visibility to the next receives, delay to the next
// sends (on a FIFO queue also to the messages still delayed, as on SQS),
// the deduplication scope to the next sends.
func (e *Engine) UpdateQueue(ctx context.Context, account, name string, fn func(*engine.Queue) error) error {
	return e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		d := cloneQueue(&q.desc)
		if err := fn(&d); err != nil {
			return commit{}, err
		}
		d = cloneQueue(&d) // detach maps fn may have kept
		d.Account, d.Name = q.desc.Account, q.desc.Name
		d.Settings.FIFO = q.fifo
		b := e.db.NewBatch()
		_ = b.Set(queueKey(q.id), encodeQueue(nil, &d), nil)
		c, err := e.order(b)
		if err != nil {
			return c, err
		}
		if d.ARN != q.desc.ARN {
			e.mu.Lock()
			if e.arns[q.desc.ARN] == q {
				delete(e.arns, q.desc.ARN)
			}
			if d.ARN != "" {
				e.arns[d.ARN] = q
			}
			e.mu.Unlock()
		}
		redelay := q.fifo && d.Settings.Delay != q.desc.Settings.Delay
		q.desc = d
		if redelay {
			q.redelayLocked(d.Settings.Delay)
		}
		now := e.now()
		q.advanceLocked(now)
		q.rearmLocked(now)
		return c, nil
	})
}

// DeleteQueue implements engine.Backend. Waiting receives return empty; the
// name stays reserved for engine.RecreateDelay (in memory only). The
// queue's move tasks go with it: their records are deleted in the same
// batch, and their runners end them FAILED.
func (e *Engine) DeleteQueue(ctx context.Context, account, name string) error {
	// Only a delete marks a queue deleted, and it takes it out of the maps
	// (under the queue lock: queue.mu → Engine.mu) before adminMu is free.
	return e.withQueue(ctx, account, name, opAdmin, func(q *queue) (commit, error) {
		b := e.db.NewBatch()
		lo, hi := queueMsgSpan(q.id)
		_ = b.DeleteRange(lo, hi, nil)
		lo, hi = queueTaskSpan(q.id)
		_ = b.DeleteRange(lo, hi, nil)
		lo, hi = queueDedupSpan(q.id)
		_ = b.DeleteRange(lo, hi, nil)
		_ = b.Delete(queueKey(q.id), nil)
		// The name stays reserved for RecreateDelay, across restarts too.
		at := e.clock.Now()
		_ = b.Set(deletedKey(account, name), encodeDeleted(at), nil)
		q.dropBodiesBelow(0)
		q.deleted = true
		q.stopTimerLocked()
		q.wakeAllLocked()
		q.resetIndexLocked()
		for _, tk := range q.tasks {
			tk.wake()
		}
		c, err := e.order(b)

		key := qname{account, name}
		e.mu.Lock()
		delete(e.queues, key)
		if e.arns[q.desc.ARN] == q {
			delete(e.arns, q.desc.ARN)
		}
		e.mu.Unlock()
		e.deleted[key] = at
		return c, err
	})
}

func cloneQueue(q *engine.Queue) engine.Queue {
	c := *q
	c.Attributes = cloneMap(q.Attributes)
	c.Tags = cloneMap(q.Tags)
	if q.Settings.Redrive != nil {
		rd := *q.Settings.Redrive
		c.Settings.Redrive = &rd
	}
	c.Created = normTime(q.Created)
	c.Modified = normTime(q.Modified)
	c.LastPurge = normTime(q.LastPurge)
	return c
}

// cloneMap copies m; an empty map becomes nil, as it reads back from the
// store.
func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
