package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// ResetQueues implements engine.Backend: each live queue goes as
// DeleteQueue removes it (its long polls on every node end, every node
// drops its view), then the rows of the deleted queues, which reserve
// their names, and the move tasks of the queues are deleted.
func (s *Store) ResetQueues(ctx context.Context, pick func(account string) bool) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	accounts, err := s.pickAccounts(ctx, "queues", pick)
	if err != nil {
		return 0, fmt.Errorf("postgres: reset queues: %w", err)
	}
	if len(accounts) == 0 {
		return 0, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT account, name FROM queues WHERE deleted_ns IS NULL AND account = ANY($1)`, accounts)
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
	if _, err := s.pool.Exec(ctx, `DELETE FROM queues WHERE deleted_ns IS NOT NULL AND account = ANY($1)`, accounts); err != nil {
		return removed, fmt.Errorf("postgres: reset queues: forget deleted names: %w", err)
	}
	// A runner whose task is gone stops (movetask.go); the tasks no longer
	// count towards the account's active ones.
	if _, err := s.pool.Exec(ctx, `DELETE FROM move_tasks t WHERE source_account = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = t.source_queue_id AND q.deleted_ns IS NULL)`, accounts); err != nil {
		return removed, fmt.Errorf("postgres: reset queues: remove move tasks: %w", err)
	}
	return removed, nil
}

// pickAccounts returns the accounts of table's rows that pick picks. The
// accounts are few beside their rows: they are picked here, the rows
// then by the database.
func (s *Store) pickAccounts(ctx context.Context, table string, pick func(account string) bool) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT account FROM `+pgx.Identifier{table}.Sanitize())
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var picked []string
	for _, a := range all {
		if pick(a) {
			picked = append(picked, a)
		}
	}
	return picked, nil
}
