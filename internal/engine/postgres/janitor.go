package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ferrymq/ferry/internal/engine"
)

// The janitor removes what no call will remove: messages past their
// retention in queues nobody receives from (a receive removes those of its
// queue), queues deleted more than RecreateDelay ago with whatever was
// left of them, expired FIFO deduplication keys (of queues and of SNS
// topics) and receive attempts, the
// rows of FIFO groups that have no message left, and the ended move tasks
// of deleted queues; and it folds each queue's message counts. One node
// at a time does it for all, holding the "janitor" lease (leased).
const (
	defaultJanitorEvery = time.Minute
	// defaultFoldEvery paces foldCounts: a queue taking thousands of sends
	// a second adds as many count rows, which Stats sums until a fold.
	defaultFoldEvery = 5 * time.Second
	// janitorBatch bounds the rows one statement deletes, so that no
	// transaction of the janitor runs long.
	janitorBatch = 1000
)

// leased runs work every every while the store is open, on one node at a
// time: the one that holds the named lease. Every node tries to take the
// lease every every, for twice that, so another carries on when the
// holder dies.
func (s *Store) leased(ctx context.Context, name string, every time.Duration, work func(context.Context) error) {
	defer s.background.Done()
	for {
		select {
		case <-ctx.Done():
			return
		// The wall clock, on purpose: the sweeps cut at the store's clock
		// (a controlled clock moved by days is swept within a minute),
		// while stepping a moved clock through each minute would cost a
		// lease and a transaction per minute moved.
		case <-time.After(every):
		}
		held, err := s.takeLease(ctx, name, 2*every)
		if err == nil && held {
			err = work(ctx)
		}
		// An unreachable database is logged once, by the outage.
		if err != nil && ctx.Err() == nil && !errors.Is(err, engine.ErrUnavailable) {
			s.log.Warn("postgres: "+name, "err", err)
		}
	}
}

// takeLease takes or renews the named lease for d, if no other node holds
// it; it reports whether this node holds it now.
func (s *Store) takeLease(ctx context.Context, name string, d time.Duration) (bool, error) {
	var held bool
	err := s.pool.QueryRow(ctx, `
		WITH l AS (
			INSERT INTO leases (name, owner, until) VALUES ($1, $2, clock_timestamp() + $3)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
			WHERE leases.owner = excluded.owner OR leases.until < clock_timestamp()
			RETURNING owner
		)
		SELECT EXISTS (SELECT 1 FROM l)`, name, s.node, d).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", name, err)
	}
	return held, nil
}

// sweepStatement is one of the janitor's statements (sweeps).
type sweepStatement struct {
	what  string
	timed bool
	lock  string
	sql   string
}

// sweeps are the janitor's statements, each deleting at most janitorBatch
// rows: $1 is the batch, and $2 now for those that are timed. A sweep
// with a lock statement runs it first, in the same transaction, with the
// arguments; the statement then takes none.
var sweeps = []sweepStatement{
	{what: "expired messages", timed: true, sql: `
		WITH gone AS (
			DELETE FROM messages m WHERE (m.queue_id, m.seq) IN (
				SELECT m.queue_id, m.seq FROM queues q JOIN messages m ON m.queue_id = q.id
				WHERE q.deleted_ns IS NULL AND m.sent_ns <= $2::int8 - q.retention_ns LIMIT $1)
			RETURNING m.body_id
		)
		DELETE FROM message_bodies b USING gone WHERE b.id = gone.body_id`},
	// A send that raced its queue's delete may have left messages behind.
	{what: "messages of deleted queues", timed: false, sql: `
		WITH gone AS (
			DELETE FROM messages m WHERE (m.queue_id, m.seq) IN (
				SELECT m.queue_id, m.seq FROM queues q JOIN messages m ON m.queue_id = q.id
				WHERE q.deleted_ns IS NOT NULL LIMIT $1)
			RETURNING m.body_id
		)
		DELETE FROM message_bodies b USING gone WHERE b.id = gone.body_id`},
	{what: "deleted queues", timed: true, sql: `
		DELETE FROM queues q WHERE q.id IN (
			SELECT id FROM queues WHERE deleted_ns <= $2::int8 - ` + fmt.Sprint(int64(engine.RecreateDelay)) + ` LIMIT $1)
			AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.queue_id = q.id)`},
	{what: "deduplication keys", timed: true, sql: `
		DELETE FROM fifo_dedup WHERE (queue_id, key) IN (
			SELECT queue_id, key FROM fifo_dedup WHERE sent_ns <= $2::int8 - ` + fmt.Sprint(int64(engine.DeduplicationWindow)) + ` LIMIT $1)`},
	{what: "sequence keys", timed: true, sql: sweepSequenceKeysSQL},
	{what: "receive attempts", timed: true, sql: `
		DELETE FROM fifo_attempts WHERE (queue_id, attempt_id) IN (
			SELECT queue_id, attempt_id FROM fifo_attempts
			WHERE created_ns <= $2::int8 - ` + fmt.Sprint(int64(engine.DeduplicationWindow)) + ` LIMIT $1)`},
	// Groups whose messages left without them (retention): their rows
	// are locked first, and deleted by a statement whose snapshot sees
	// what a send that held one committed.
	{what: "empty groups", lock: `
		SELECT set_config('ferry.empty', coalesce((SELECT json_agg(json_build_array(l.queue_id, l.group_id))::text FROM (
			SELECT g.queue_id, g.group_id FROM fifo_groups g
			WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.queue_id = g.queue_id AND m.group_id = g.group_id AND m.group_id <> '')
			LIMIT $1 FOR UPDATE SKIP LOCKED) l), '[]'), true)`, sql: `
		DELETE FROM fifo_groups g USING json_array_elements(current_setting('ferry.empty')::json) e
		WHERE g.queue_id = (e->>0)::int8 AND g.group_id = e->>1
			AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.queue_id = g.queue_id AND m.group_id = g.group_id AND m.group_id <> '')`},
	foldSweep,
	// Long-poll registrations of nodes that died (waiters.go).
	{what: "lapsed long-poll registrations", sql: `
		DELETE FROM waiters WHERE (queue_id, node) IN (
			SELECT queue_id, node FROM waiters WHERE until < now() LIMIT $1)`},
	{what: "tasks of deleted queues", timed: false, sql: `
		DELETE FROM move_tasks t WHERE t.n IN (
			SELECT t.n FROM move_tasks t WHERE NOT EXISTS (
				SELECT 1 FROM queues q WHERE q.id = t.source_queue_id AND q.deleted_ns IS NULL)
			LIMIT $1)`},
}

// foldSweep folds each queue's message counts into one row (none when
// they sum to zero: a deleted queue's), in one statement, so that a reader
// sees the rows before or after, never a part. Statements that add deltas
// meanwhile only insert, and the rows they add are not deleted. The
// janitor folds, and so does foldCounts, more often.
var foldSweep = sweepStatement{what: "message counts", sql: `
		WITH f AS (
			DELETE FROM message_counts c WHERE c.queue_id IN (
				SELECT queue_id FROM message_counts GROUP BY queue_id HAVING count(*) > 1 LIMIT $1)
			RETURNING c.queue_id, c.delta
		)
		INSERT INTO message_counts (queue_id, delta)
		SELECT queue_id, sum(delta) FROM f GROUP BY queue_id HAVING sum(delta) <> 0`}

// sweepSequenceKeysSQL deletes expired keys of SNS FIFO topics
// (sequence.go), from the oldest, along their index, by row address (a
// join on the key would read the table whole). A key a publish took over
// meanwhile has a new address, and is not deleted.
const sweepSequenceKeysSQL = `
		DELETE FROM sequence_keys WHERE ctid = ANY (ARRAY (
			SELECT ctid FROM sequence_keys WHERE expires_ns <= $2::int8 ORDER BY expires_ns LIMIT $1))
			AND expires_ns <= $2::int8`

// foldCounts folds the message counts of every queue (foldSweep).
func (s *Store) foldCounts(ctx context.Context) error {
	return s.sweepAll(ctx, []sweepStatement{foldSweep})
}

// sweep runs every sweep until it finds nothing more to delete.
func (s *Store) sweep(ctx context.Context) error { return s.sweepAll(ctx, sweeps) }

// sweepAll runs each of sws until it finds nothing more to delete.
func (s *Store) sweepAll(ctx context.Context, sws []sweepStatement) error {
	for _, sw := range sws {
		for {
			args := []any{janitorBatch}
			if sw.timed {
				args = append(args, s.now())
			}
			var (
				tag pgconn.CommandTag
				err error
			)
			err = retryMoved(ctx, func() (err error) {
				if sw.lock == "" {
					tag, err = s.pool.Exec(ctx, sw.sql, args...)
					return err
				}
				return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, sw.lock, args...); err != nil {
						return err
					}
					tag, err = tx.Exec(ctx, sw.sql)
					return err
				})
			})
			if err != nil {
				return fmt.Errorf("sweep %s: %w", sw.what, err)
			}
			if tag.RowsAffected() < janitorBatch {
				break
			}
		}
	}
	return nil
}
