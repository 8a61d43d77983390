package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/engine"
)

// queueColumns are the columns scanQueue reads, in its order.
const queueColumns = `id, account, name, arn, attributes, tags, created_ns, modified_ns, last_purge_ns,
	visibility_ns, delay_ns, retention_ns, receive_wait_ns, maximum_size, fifo, dedup_scope,
	redrive_account, redrive_name, redrive_max`

func scanQueue(row pgx.Row) (int64, engine.Queue, error) {
	var (
		id                          int64
		q                           engine.Queue
		attrs, tags                 []byte
		created, modified, purged   int64
		vis, delay, retention, wait int64
		redriveAccount, redriveName string
		redriveMax                  int
		s                           = &q.Settings
	)
	err := row.Scan(&id, &q.Account, &q.Name, &q.ARN, &attrs, &tags, &created, &modified, &purged,
		&vis, &delay, &retention, &wait, &s.MaximumSize, &s.FIFO, &s.DeduplicationScope,
		&redriveAccount, &redriveName, &redriveMax)
	if err != nil {
		return 0, q, err
	}
	if err := json.Unmarshal(attrs, &q.Attributes); err != nil {
		return 0, q, fmt.Errorf("queue %s attributes: %w", q.Name, err)
	}
	if err := json.Unmarshal(tags, &q.Tags); err != nil {
		return 0, q, fmt.Errorf("queue %s tags: %w", q.Name, err)
	}
	q.Created, q.Modified, q.LastPurge = fromNS(created), fromNS(modified), fromNS(purged)
	s.VisibilityTimeout, s.Delay = time.Duration(vis), time.Duration(delay)
	s.Retention, s.ReceiveWait = time.Duration(retention), time.Duration(wait)
	if redriveMax > 0 {
		s.Redrive = &engine.Redrive{TargetAccount: redriveAccount, TargetName: redriveName, MaxReceiveCount: redriveMax}
	}
	return id, q, nil
}

// queueArgs are the values of q's settable columns, for insertQueue and
// updateQueue: $3 on, after account and name.
func queueArgs(q *engine.Queue) ([]any, error) {
	attrs, err := json.Marshal(nonNil(q.Attributes))
	if err != nil {
		return nil, err
	}
	tags, err := json.Marshal(nonNil(q.Tags))
	if err != nil {
		return nil, err
	}
	s := q.Settings
	var r engine.Redrive
	if s.Redrive != nil {
		r = *s.Redrive
	}
	return []any{q.ARN, attrs, tags, toNS(q.Created), toNS(q.Modified),
		int64(s.VisibilityTimeout), int64(s.Delay), int64(s.Retention), int64(s.ReceiveWait),
		s.MaximumSize, s.FIFO, s.DeduplicationScope, r.TargetAccount, r.TargetName, r.MaxReceiveCount}, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// CreateQueue implements engine.Backend. Creates of one name take a
// transaction-scoped advisory lock, so that the recreate delay and the
// existing queue are judged by one of them at a time.
func (s *Store) CreateQueue(ctx context.Context, q engine.Queue) (engine.Queue, bool, error) {
	if err := s.enter(); err != nil {
		return engine.Queue{}, false, err
	}
	defer s.leave()
	args, err := queueArgs(&q)
	if err != nil {
		return engine.Queue{}, false, fmt.Errorf("postgres: create queue %s: %w", q.Name, err)
	}
	now := s.now()
	var (
		existing engine.Queue
		created  bool
	)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
			"ferry queue "+q.Account+"/"+q.Name); err != nil {
			return err
		}
		_, got, err := scanQueue(tx.QueryRow(ctx, "SELECT "+queueColumns+
			" FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL", q.Account, q.Name))
		if err == nil {
			existing = got
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var recent bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queues
			WHERE account = $1 AND name = $2 AND deleted_ns > $3)`,
			q.Account, q.Name, now-int64(s.waits.RecreateDelay())).Scan(&recent); err != nil {
			return err
		}
		if recent {
			return engine.ErrQueueDeletedRecently
		}
		_, err = tx.Exec(ctx, `INSERT INTO queues (account, name, arn, attributes, tags, created_ns, modified_ns,
			visibility_ns, delay_ns, retention_ns, receive_wait_ns, maximum_size, fifo, dedup_scope,
			redrive_account, redrive_name, redrive_max)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
			append([]any{q.Account, q.Name}, args...)...)
		if err != nil {
			return err
		}
		created = true
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.channel, viewNote(viewKey(q.Account, q.Name))); err != nil {
			return err
		}
		// Tombstones past the recreate delay are of no more use.
		_, err = tx.Exec(ctx, `DELETE FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NOT NULL`,
			q.Account, q.Name)
		return err
	})
	if err != nil {
		if errors.Is(err, engine.ErrQueueDeletedRecently) {
			return engine.Queue{}, false, err
		}
		return engine.Queue{}, false, fmt.Errorf("postgres: create queue %s: %w", q.Name, err)
	}
	if !created {
		return existing, false, nil
	}
	s.views.drop(viewKey(q.Account, q.Name))
	q.Attributes, q.Tags = maps.Clone(q.Attributes), maps.Clone(q.Tags)
	if q.Settings.Redrive != nil {
		r := *q.Settings.Redrive
		q.Settings.Redrive = &r
	}
	return q, true, nil
}

// GetQueue implements engine.Backend.
func (s *Store) GetQueue(ctx context.Context, account, name string) (engine.Queue, error) {
	if err := s.enter(); err != nil {
		return engine.Queue{}, err
	}
	defer s.leave()
	_, q, err := scanQueue(s.pool.QueryRow(ctx, "SELECT "+queueColumns+
		" FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL", account, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.Queue{}, engine.ErrQueueNotFound
	}
	if err != nil {
		return engine.Queue{}, fmt.Errorf("postgres: get queue %s: %w", name, err)
	}
	return q, nil
}

// ListQueues implements engine.Backend.
func (s *Store) ListQueues(ctx context.Context, account, prefix string) ([]engine.Queue, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	// starts_with is exact (no LIKE wildcards); the order is bytewise, as
	// the embedded store's.
	rows, err := s.pool.Query(ctx, "SELECT "+queueColumns+` FROM queues
		WHERE account = $1 AND deleted_ns IS NULL AND starts_with(name, $2)
		ORDER BY name COLLATE "C"`, account, prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres: list queues: %w", err)
	}
	defer rows.Close()
	var qs []engine.Queue
	for rows.Next() {
		_, q, err := scanQueue(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list queues: %w", err)
		}
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list queues: %w", err)
	}
	return qs, nil
}

// Accounts implements engine.Backend.
func (s *Store) Accounts(ctx context.Context) ([]string, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	// The order is bytewise, as the embedded store's.
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT account COLLATE "C" FROM queues
		WHERE deleted_ns IS NULL ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list accounts: %w", err)
	}
	accounts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: list accounts: %w", err)
	}
	return accounts, nil
}

// UpdateQueue implements engine.Backend: fn runs while the queue's row is
// locked, and its account and name cannot change.
func (s *Store) UpdateQueue(ctx context.Context, account, name string, fn func(*engine.Queue) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var (
		fnErr error
		told  notes // of the groups a retroactive delay changed
	)
	// An update that raced a rotation's move runs again.
	update := func(tx pgx.Tx) error {
		// A FIFO queue's groups are locked before its row, as a delete of
		// the queue locks them.
		if _, err := tx.Exec(ctx, lockAllSQL, account, name); err != nil {
			return err
		}
		id, q, err := scanQueue(tx.QueryRow(ctx, "SELECT "+queueColumns+
			" FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL FOR UPDATE", account, name))
		if err != nil {
			return err
		}
		fifo := q.Settings.FIFO
		if fnErr = fn(&q); fnErr != nil {
			return fnErr
		}
		q.Settings.FIFO = fifo // fixed at creation
		args, err := queueArgs(&q)
		if err != nil {
			return err
		}
		// What the old retention has expired is gone for good, even if the
		// new one is longer.
		_, err = tx.Exec(ctx, `
			WITH gone AS (
				DELETE FROM messages m USING queues q
				WHERE q.id = $1 AND m.queue_id = q.id AND m.sent_ns <= $2::int8 - q.retention_ns
				RETURNING m.body_id
			)
			DELETE FROM message_bodies b USING gone WHERE b.id = gone.body_id`, id, s.now())
		if err != nil {
			return err
		}
		if q.Settings.FIFO {
			// A FIFO queue's delay is retroactive: the messages still
			// delayed are visible at their send plus the new delay; their
			// groups' rows follow, and tell the waiters.
			now := s.now()
			_, err = tx.Exec(ctx, `UPDATE messages SET visible_ns = sent_ns + $2
				WHERE queue_id = $1 AND gen = 0 AND visible_ns > $3`, id, durationNS(q.Settings.Delay), now)
			if err != nil {
				return err
			}
			if _, told, err = refreshed(tx.QueryRow(ctx, refreshSQL, s.refreshArgs(account, name, now)...)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.channel, viewNote(viewKey(account, name))); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE queues SET arn = $2, attributes = $3, tags = $4, created_ns = $5, modified_ns = $6,
			visibility_ns = $7, delay_ns = $8, retention_ns = $9, receive_wait_ns = $10, maximum_size = $11,
			fifo = $12, dedup_scope = $13, redrive_account = $14, redrive_name = $15, redrive_max = $16
			WHERE id = $1`, append([]any{id}, args...)...)
		return err
	}
	err := retryMoved(ctx, func() error { told = notes{}; return pgx.BeginFunc(ctx, s.pool, update) })
	if err == nil {
		s.tell(told)
	}
	switch {
	case fnErr != nil:
		return fnErr
	case errors.Is(err, pgx.ErrNoRows):
		return engine.ErrQueueNotFound
	case err != nil:
		return fmt.Errorf("postgres: update queue %s: %w", name, err)
	}
	s.views.drop(viewKey(account, name))
	return nil
}

// DeleteQueue implements engine.Backend: the queue's messages go with it,
// its row stays for RecreateDelay, and its long polls are woken to end.
func (s *Store) DeleteQueue(ctx context.Context, account, name string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var id int64
	now := s.now()
	err := s.withGroups(ctx, account, name, lockAllSQL, []any{account, name}, now, `
		WITH q AS (
			UPDATE queues SET deleted_ns = $3 WHERE account = $1 AND name = $2 AND deleted_ns IS NULL RETURNING id
		), gone AS (
			DELETE FROM messages m USING q WHERE m.queue_id = q.id RETURNING m.body_id
		), bodies AS (
			DELETE FROM message_bodies b USING gone WHERE b.id = gone.body_id
		), groups AS (
			DELETE FROM fifo_groups g USING q WHERE g.queue_id = q.id
		), dedup AS (
			DELETE FROM fifo_dedup d USING q WHERE d.queue_id = q.id
		), attempts AS (
			DELETE FROM fifo_attempts a USING q WHERE a.queue_id = q.id
		), n AS (
			SELECT q.id AS qid, $3::int8 AS at, notify_waiters($4, q.id, $3) FROM q
		), v AS (
			SELECT pg_notify($4, $5) FROM q
		)
		SELECT q.id, `+notesSQL+` FROM q, (SELECT count(*) FROM v) v`,
		[]any{account, name, now, s.channel, viewNote(viewKey(account, name))}, true, &id)
	s.views.drop(viewKey(account, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.ErrQueueNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: delete queue %s: %w", name, err)
	}
	return nil
}
