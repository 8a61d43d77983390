package embedded

import (
	"context"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// Every call on a queue opens and closes the same way, in the lock order
// of engine.go; withQueue does it once for all. The opening (begin): the
// context, entering the engine, for a write the disk space guard, for a
// queue delete adminMu. Then the lookup, the queue lock and the deleted
// check, the call's own work under the lock, where it orders its batch
// (order), the unlock, and the wait for that batch to be durable, outside
// the lock so that concurrent calls share WAL syncs (finish).
//
// Some calls share only the opening: a send writes its batch outside the
// queue lock (its seqs are reserved under it), SendMany spans queues,
// CreateQueue has no queue yet and ListQueues reads them all. Receive has
// its own: a cancelled context is an empty poll, not an error, and a long
// poll leaves the engine and the queue lock while it waits.

// opKind is what a call needs on top of entering the engine.
type opKind uint8

const (
	opRead  opKind = iota
	opWrite        // refused with engine.ErrStoreFull while the disk is full
	opAdmin        // a write serialised with queue creates and deletes
)

// begin opens a call of the given kind; on success the caller must end it.
func (e *Engine) begin(ctx context.Context, kind opKind) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	if kind != opRead {
		if err := e.writable(); err != nil {
			e.leave()
			return err
		}
	}
	if kind == opAdmin {
		e.adminMu.Lock()
	}
	return nil
}

func (e *Engine) end(kind opKind) {
	if kind == opAdmin {
		e.adminMu.Unlock()
	}
	e.leave()
}

// commit is what a call's work under the queue lock leaves to withQueue
// once the lock is released.
type commit struct {
	// b is in the store's order (order) and is waited for, then closed.
	b *pebble.Batch
	// barrier: nothing written, but the answer relies on writes other
	// calls have ordered (a retried delete): wait until those are durable.
	barrier bool
	// deleting are FIFO messages whose delete b makes durable: they keep
	// their groups blocked until then, and are dropped from the index after.
	deleting []*message
	// beforeSync, when set (tests only), runs between the unlock and the
	// wait for b.
	beforeSync func()
}

// withQueue runs fn on the named queue, opened as kind, under the queue's
// lock (see above). fn orders its batch, if any, with order where the
// store's order must follow the index's; an error from fn is returned once
// what it ordered is durable.
func (e *Engine) withQueue(ctx context.Context, account, name string, kind opKind, fn func(q *queue) (commit, error)) error {
	if err := e.begin(ctx, kind); err != nil {
		return err
	}
	defer e.end(kind)
	q, err := e.lookup(account, name)
	if err != nil {
		return err
	}
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return engine.ErrQueueNotFound
	}
	c, err := fn(q)
	q.mu.Unlock()
	return e.finish(q, &c, err)
}

// order enters b into the commit pipeline under the queue lock, fixing its
// place in the store's order, and hands it to withQueue to wait for. A
// batch that could not be ordered is closed.
func (e *Engine) order(b *pebble.Batch) (commit, error) {
	if err := e.applyOrdered(b); err != nil {
		b.Close()
		return commit{}, err
	}
	return commit{b: b}, nil
}

// finish waits, outside the queue lock, for what the call ordered.
func (e *Engine) finish(q *queue, c *commit, err error) error {
	switch {
	case c.b != nil:
		if c.beforeSync != nil {
			c.beforeSync()
		}
		if serr := e.awaitDurable(c.b); err == nil {
			err = serr
		}
	case c.barrier && err == nil:
		err = e.syncBarrier()
	}
	if len(c.deleting) > 0 {
		// Durable (or failed, which ends the process): let the groups go.
		q.mu.Lock()
		if !q.deleted {
			for _, m := range c.deleting {
				if q.msgs[m.seq] == m && m.status == statusDeleting {
					q.dropLocked(m)
				}
			}
			now := e.now()
			q.serveLocked(now)
			q.rearmLocked(now)
		}
		q.mu.Unlock()
	}
	return err
}
