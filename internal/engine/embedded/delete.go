package embedded

import (
	"context"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// Delete implements engine.Backend. A handle deletes its message if it is
// from the message's latest receive, even after its visibility expired; a
// superseded handle, or one whose message is gone, succeeds and deletes
// nothing. On a FIFO queue a handle whose visibility has expired (or that
// was superseded, which implies it) fails with ErrReceiptHandleExpired; a
// deleted message keeps blocking its group until the delete is durable, so
// that a crash cannot bring it back after the message behind it went out.
func (e *Engine) Delete(ctx context.Context, account, name string, handles []string) ([]error, error) {
	rs, errs := e.parseHandles(len(handles), func(i int) string { return handles[i] })
	err := e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		var d deletion
		now := e.now()
		q.advanceLocked(now)
		for i, r := range rs {
			if !q.ownReceipt(rs, errs, i) {
				continue
			}
			m := q.msgs[r.Seq]
			if m != nil && m.status == statusDeleting && m.gen == r.Gen {
				d.stale = true // a retry of a delete still under way
				continue
			}
			if q.fifo && m != nil && (m.gen != r.Gen || m.status != statusInflight) {
				errs[i] = engine.ErrReceiptHandleExpired
				continue
			}
			if m == nil || m.gen != r.Gen {
				d.stale = true
				continue
			}
			d.take(q, m)
		}
		return d.commit(q, now)
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// deletion is what a delete (by handles, or by refs) does under the
// queue lock: the batch that deletes the messages' records, the FIFO
// messages being deleted, and whether it relies on deletes other calls
// have ordered.
type deletion struct {
	b      *pebble.Batch
	doomed []*message // FIFO: deleting, to drop once durable
	// stale: a message was being deleted by a call still waiting for its
	// sync: the answer waits until that one is durable.
	stale bool
}

// take deletes m from q's index (on a FIFO queue, marks it deleting) and
// its records in the batch.
func (d *deletion) take(q *queue, m *message) {
	if q.fifo {
		q.markDeletingLocked(m)
		d.doomed = append(d.doomed, m)
	} else {
		q.dropLocked(m)
	}
	if d.b == nil {
		d.b = q.e.db.NewBatch()
	}
	q.deleteMsgKeys(d.b, m)
}

// commit orders the batch and hands withQueue what to wait for.
func (d *deletion) commit(q *queue, now int64) (commit, error) {
	var c commit
	var err error
	if d.b != nil {
		c, err = q.e.order(d.b)
	}
	q.rearmLocked(now)
	c.barrier = d.stale
	c.deleting = d.doomed
	c.beforeSync = q.e.beforeDeleteSync
	return c, err
}
