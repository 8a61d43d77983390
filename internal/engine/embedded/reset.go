package embedded

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/internal/engine"
)

// ResetQueues implements engine.Backend: each queue goes as DeleteQueue
// removes it, then the deleted names of the accounts are forgotten, in
// memory and in the store, so that a restart does not reserve them again.
func (e *Engine) ResetQueues(ctx context.Context, pick func(account string) bool) (int, error) {
	picked := func(k qname) bool { return pick(k.account) }
	var names []qname
	e.mu.RLock()
	for k := range e.queues {
		if picked(k) {
			names = append(names, k)
		}
	}
	e.mu.RUnlock()
	removed := 0
	for _, k := range names {
		err := e.DeleteQueue(ctx, k.account, k.name)
		switch {
		case err == nil:
			removed++
		case !errors.Is(err, engine.ErrQueueNotFound):
			return removed, err
		}
	}
	if err := e.begin(ctx, opAdmin); err != nil {
		return removed, err
	}
	defer e.end(opAdmin)
	b := e.db.NewBatch()
	defer b.Close()
	for k := range e.deleted {
		if picked(k) {
			delete(e.deleted, k)
			_ = b.Delete(deletedKey(k.account, k.name), nil)
		}
	}
	if err := b.Commit(e.writeOptions()); err != nil {
		return removed, fmt.Errorf("embedded: reset queues: %w", err)
	}
	return removed, nil
}
