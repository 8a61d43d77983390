package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/internal/engine"
)

// picked is the condition of ResetQueues on a row whose account is in
// column: $1 the account, or with $1 empty every account but $2 (none
// when $2 is empty).
func picked(column string) string {
	return `(` + column + ` = $1 OR ($1 = '' AND ($2 = '' OR ` + column + ` <> $2)))`
}

// ResetQueues implements engine.Backend: each live queue goes as
// DeleteQueue removes it (its long polls on every node end, every node
// drops its view), then the rows of the deleted queues, which reserve
// their names, and the move tasks of the queues are deleted.
func (s *Store) ResetQueues(ctx context.Context, account, spare string) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, `SELECT account, name FROM queues WHERE deleted_ns IS NULL AND `+picked("account"), account, spare)
	if err != nil {
		return 0, fmt.Errorf("postgres: reset queues: %w", err)
	}
	type qname struct{ account, name string }
	var names []qname
	for rows.Next() {
		var q qname
		if err := rows.Scan(&q.account, &q.name); err != nil {
			rows.Close()
			return 0, fmt.Errorf("postgres: reset queues: %w", err)
		}
		names = append(names, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("postgres: reset queues: %w", err)
	}
	removed := 0
	for _, q := range names {
		err := s.DeleteQueue(ctx, q.account, q.name)
		switch {
		case err == nil:
			removed++
		case !errors.Is(err, engine.ErrQueueNotFound):
			return removed, err
		}
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM queues WHERE deleted_ns IS NOT NULL AND `+picked("account"), account, spare); err != nil {
		return removed, fmt.Errorf("postgres: reset queues: forget deleted names: %w", err)
	}
	// A runner whose task is gone stops (movetask.go); the tasks no longer
	// count towards the account's active ones.
	if _, err := s.pool.Exec(ctx, `DELETE FROM move_tasks t WHERE `+picked("source_account")+`
		AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = t.source_queue_id AND q.deleted_ns IS NULL)`, account, spare); err != nil {
		return removed, fmt.Errorf("postgres: reset queues: remove move tasks: %w", err)
	}
	return removed, nil
}
