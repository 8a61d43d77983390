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
		var b *pebble.Batch
		var doomed []*message // FIFO: deleting, to drop once durable
		stale := false
		now := e.now()
		q.advanceLocked(now)
		for i, r := range rs {
			if !q.ownReceipt(rs, errs, i) {
				continue
			}
			m := q.msgs[r.Seq]
			if m != nil && m.status == statusDeleting && m.gen == r.Gen {
				stale = true // a retry of a delete still under way
				continue
			}
			if q.fifo && m != nil && (m.gen != r.Gen || m.status != statusInflight) {
				errs[i] = engine.ErrReceiptHandleExpired
				continue
			}
			if m == nil || m.gen != r.Gen {
				stale = true
				continue
			}
			if q.fifo {
				q.markDeletingLocked(m)
				doomed = append(doomed, m)
			} else {
				q.dropLocked(m)
			}
			if b == nil {
				b = e.db.NewBatch()
			}
			deleteMsgKeys(b, q.id, m)
		}
		var c commit
		var err error
		if b != nil {
			c, err = e.order(b)
		}
		q.rearmLocked(now)
		// The message may have been deleted by a call still waiting for
		// its sync (a retried delete): do not acknowledge before that one is.
		c.barrier = stale
		c.deleting = doomed
		c.beforeSync = e.beforeDeleteSync
		return c, err
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}
