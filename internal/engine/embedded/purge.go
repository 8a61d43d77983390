package embedded

import (
	"context"

	"github.com/ferrymq/ferry/internal/engine"
)

// Purge implements engine.Backend.
func (e *Engine) Purge(ctx context.Context, account, name string) error {
	return e.withQueue(ctx, account, name, opWrite, func(q *queue) (commit, error) {
		nowT := e.clock.Now()
		if last := q.desc.LastPurge; !last.IsZero() && nowT.Sub(last) < e.waits.PurgeInterval() {
			return commit{}, engine.ErrPurgeInProgress
		}
		d := cloneQueue(&q.desc)
		d.LastPurge = normTime(nowT)
		b := e.db.NewBatch()
		lo, hi := msgSpan(q.id, 0, q.nextSeq)
		_ = b.DeleteRange(lo, hi, nil)
		_ = b.Set(queueKey(q.id), encodeQueue(nil, &d), nil)
		c, err := e.order(b)
		if err != nil {
			return c, err
		}
		q.dropBodiesBelow(q.nextSeq)
		q.desc = d
		q.purgeFloor = q.nextSeq
		q.resetIndexLocked()
		return c, nil
	})
}
