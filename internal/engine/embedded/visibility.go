package embedded

import (
	"context"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/engine"
)

// ChangeVisibility implements engine.Backend. Only the latest receive's
// handle works, while the message exists; a message whose visibility had
// expired but that nobody received since is hidden again. On a FIFO queue
// a handle whose visibility has expired fails with ErrReceiptHandleExpired.
func (e *Engine) ChangeVisibility(ctx context.Context, account, name string, changes []engine.VisibilityChange) ([]error, error) {
	rs, errs := e.parseHandles(len(changes), func(i int) string { return changes[i].ReceiptHandle })
	err := e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		var b *pebble.Batch
		var buf [256]byte // a state record with a receive's consumer
		now := e.now()
		q.advanceLocked(now)
		revealed := false
		for i, r := range rs {
			if !q.ownReceipt(rs, errs, i) {
				continue
			}
			m := q.msgs[r.Seq]
			if m != nil && m.status == statusDeleting {
				errs[i] = engine.ErrMessageNotInflight
				continue
			}
			if q.fifo && m != nil && (m.gen != r.Gen || m.status != statusInflight) {
				errs[i] = engine.ErrReceiptHandleExpired
				continue
			}
			if m == nil || m.gen != r.Gen {
				errs[i] = engine.ErrMessageNotInflight
				continue
			}
			timeout := max0(changes[i].Timeout)
			deadline := after(now, timeout)
			if deadline > after(m.receivedAt, engine.MaxVisibility) {
				errs[i] = engine.ErrVisibilityLimit
				continue
			}
			m.touched = true
			if timeout == 0 {
				m.deadline = now
				if m.status != statusReady {
					q.revealLocked(m)
					revealed = true
				}
			} else {
				q.hideLocked(m, deadline)
			}
			if b == nil {
				b = e.db.NewBatch()
			}
			ev := changes[i].Event
			settled := false
			if ev != nil {
				// The receive comes first in the story.
				settled = m.pending
				q.settleReceiveLocked(b, m)
			}
			q.putStateLocked(b, m, buf[:0], nil)
			switch {
			case ev == nil:
			case settled:
				// b holds the receive's event: appended after it.
				q.appendHistoryLocked(b, m, ev)
			default:
				// An SNS delivery attempt after a receive by no consumer:
				// the AWS-managed policy makes 100,015 of them.
				q.addEventLocked(b, m, ev, int(m.receiveCount))
			}
		}
		var c commit
		var err error
		if b != nil {
			c, err = e.order(b)
		}
		if revealed {
			q.serveLocked(now)
		}
		q.rearmLocked(now)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}
