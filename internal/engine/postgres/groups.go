package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// FIFO group heads. A FIFO queue's fifo_groups rows say, for each group
// that has messages, its oldest message (head_seq) and the time from which
// it can hand one out (ready_ns): the later of its head's visible time and
// the end of the visibility of what it has in flight. A receive walks
// fifo_groups_head (queue, head_seq, ready_ns) from the queue's oldest
// head and locks, with SKIP LOCKED, the first groups whose ready_ns has
// come: it passes over the groups with a message in flight, no more, and
// reads no message of the others.
//
// Whatever changes a group's messages other than appending to it locks the
// group's row first, in one statement, and sets the row again in a later
// one: in READ COMMITTED each statement takes a new snapshot, so the later
// statements see whatever the previous holder of the lock committed. The
// statements go out as one batch (one round trip, one implicit
// transaction); the first leaves the names of the groups it locked in the
// transaction's setting groupsSetting for the others. Sends append under
// the same lock (an upsert of the row), so that a group is never dropped
// while a send fills it. Group locks are taken before message locks, and
// several of them in the order of group_id (a receive skips, never waits).
//
// A row may lag behind when messages leave without it (retention, the
// janitor): its ready_ns is then too early, never too late, and the next
// receive that locks it sets it right, or drops it when the group is empty.

// groupsSetting is the transaction-local setting that carries the groups
// a batch's first statement locked to its later statements.
const groupsSetting = "ferry.groups"

// lockedGroups is the array of groups locked by the batch's first statement.
const lockedGroups = `coalesce(current_setting('` + groupsSetting + `', true), '{}')::text[]`

// keepLocked wraps a query answering group_id rows it locked: the statement
// stores them in groupsSetting.
func keepLocked(query string) string {
	return `SELECT set_config('` + groupsSetting + `', coalesce((SELECT array_agg(l.group_id)::text FROM (` + query + `) l), '{}'), true)`
}

// The queue of $1 (account) and $2 (name), as a scalar, so that the plans
// walk the indexes of that one queue.
const namedQueue = `(SELECT id FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL)`

// lockReadySQL locks up to $4 groups of the queue that can hand out a
// message at $3, oldest head first, skipping those another transaction
// holds.
var lockReadySQL = keepLocked(`
	SELECT f.group_id FROM fifo_groups f
	WHERE f.queue_id = ` + namedQueue + ` AND f.ready_ns <= $3
	ORDER BY f.head_seq LIMIT $4
	FOR UPDATE SKIP LOCKED`)

// lockHandledSQL locks the groups of the messages ($3 queue ids, $4 seqs)
// that a delete or a visibility change names, waiting for them.
var lockHandledSQL = keepLocked(`
	SELECT f.group_id FROM fifo_groups f
	WHERE f.queue_id = ` + namedQueue + ` AND f.group_id IN (
		SELECT m.group_id FROM unnest($3::int8[], $4::int8[]) AS u(qid, seq)
		JOIN messages m ON m.queue_id = u.qid AND m.seq = u.seq
		WHERE u.qid = ` + namedQueue + ` AND m.group_id <> '')
	ORDER BY f.group_id
	FOR UPDATE`)

// lockAllSQL locks every group of the queue, for the changes that touch
// them all (a purge, a retroactive delay, a delete of the queue).
var lockAllSQL = keepLocked(`
	SELECT f.group_id FROM fifo_groups f
	WHERE f.queue_id = ` + namedQueue + `
	ORDER BY f.group_id
	FOR UPDATE`)

// refreshSQL sets the locked groups' rows from their messages, drops the
// rows of those left empty, and tells the waiters of the queue when one of
// the groups it changed is ready within the longest long poll ($3 channel,
// $4 now, $5 maxLongPoll). It answers its notes and the next time a
// message of the queue becomes visible (0: none known), for a long poll's
// timer: a group's ready time is one of its messages' visible time.
var refreshSQL = `
WITH q AS (
	SELECT id FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
), s AS (
	SELECT q.id AS qid, g.group_id, h.seq AS head, greatest(h.visible_ns, i.vis) AS ready
	FROM q CROSS JOIN unnest(` + lockedGroups + `) AS g(group_id)
	LEFT JOIN LATERAL (
		SELECT m.seq, m.visible_ns FROM messages m
		WHERE m.queue_id = q.id AND m.group_id = g.group_id AND m.group_id <> ''
		ORDER BY m.seq LIMIT 1) h ON true
	LEFT JOIN LATERAL (
		SELECT max(m.visible_ns) AS vis FROM messages m
		WHERE m.queue_id = q.id AND m.group_id = g.group_id AND m.group_id <> '' AND m.gen > 0) i ON true
), u AS (
	UPDATE fifo_groups f SET head_seq = s.head, ready_ns = s.ready
	FROM s
	WHERE f.queue_id = s.qid AND f.group_id = s.group_id AND s.head IS NOT NULL
		AND (f.head_seq, f.ready_ns) IS DISTINCT FROM (s.head, s.ready)
	RETURNING f.ready_ns
), d AS (
	DELETE FROM fifo_groups f USING s
	WHERE f.queue_id = s.qid AND f.group_id = s.group_id AND s.head IS NULL
), n AS (
	SELECT q.id AS qid, min(u.ready_ns) AS at, notify_waiters($3, q.id, min(u.ready_ns)) FROM q, u
	GROUP BY q.id HAVING min(u.ready_ns) < $4::int8 + $5::int8
)
SELECT ` + notesSQL + `,
	coalesce((SELECT (SELECT min(m.visible_ns) FROM messages m WHERE m.queue_id = q.id AND m.visible_ns > $4) FROM q), 0)`

// upsertGroups gives the FIFO messages a statement inserted, the rows of
// its CTE src (queue_id, group_id, seq, visible_ns), their groups' rows:
// a new group's head is its first message; a group that has one keeps it,
// unless a send numbered before it commits after it. The rows are taken
// in order, so that concurrent sends to the same groups do not deadlock.
func upsertGroups(src string) string {
	return `INSERT INTO fifo_groups (queue_id, group_id, head_seq, ready_ns)
	SELECT queue_id, group_id, min(seq), min(visible_ns) FROM ` + src + ` WHERE group_id <> ''
	GROUP BY queue_id, group_id ORDER BY queue_id, group_id
	ON CONFLICT (queue_id, group_id) DO UPDATE SET head_seq = least(fifo_groups.head_seq, excluded.head_seq)
	RETURNING 1`
}

// refreshArgs are refreshSQL's arguments.
func (s *Store) refreshArgs(account, name string, now int64) []any {
	return []any{account, name, s.channel, now, int64(maxLongPoll)}
}

// refreshed reads refreshSQL's answer: the next time a group is ready,
// and the notes.
func refreshed(row pgx.Row) (int64, notes, error) {
	var (
		next int64
		told notes
	)
	err := row.Scan(append(told.dst(), &next)...)
	return next, told, err
}

// withGroups runs sql (args), whose one row it scans into dst, between
// lock (lockArgs) and refreshSQL, in one batch; a queue the node's view
// says is standard has no groups, and sql goes alone. When noted, sql's
// row ends with notesSQL's columns, which it tells this node's waiters once
// committed, with the refresh's. A batch that raced a rotation's move runs
// again.
func (s *Store) withGroups(ctx context.Context, account, name, lock string, lockArgs []any, now int64,
	sql string, args []any, noted bool, dst ...any) error {
	return retryMoved(ctx, func() error {
		return s.withGroupsOnce(ctx, account, name, lock, lockArgs, now, sql, args, noted, dst...)
	})
}

func (s *Store) withGroupsOnce(ctx context.Context, account, name, lock string, lockArgs []any, now int64,
	sql string, args []any, noted bool, dst ...any) error {
	var told notes
	if noted {
		dst = append(dst[:len(dst):len(dst)], told.dst()...)
	}
	if q, _, ok := s.views.get(viewKey(account, name)); ok && !q.Settings.FIFO {
		err := s.pool.QueryRow(ctx, sql, args...).Scan(dst...)
		if err == nil {
			s.tell(told)
		}
		return err
	}
	b := &pgx.Batch{}
	b.Queue(lock, lockArgs...)
	b.Queue(sql, args...)
	b.Queue(refreshSQL, s.refreshArgs(account, name, now)...)
	br := s.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(dst...)
	}
	var refreshTold notes
	if err == nil {
		_, refreshTold, err = refreshed(br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		told.add(refreshTold)
		s.tell(told)
	}
	return err
}
