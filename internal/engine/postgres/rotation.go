package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ferrymq/ferry/internal/engine"
)

// Rotation of the message tables. A transaction that stays open (a long
// REPEATABLE READ report of another application, a forgotten session, a
// prepared transaction) keeps vacuum from removing any row deleted after
// its snapshot: every message consumed then leaves its rows behind, and the
// receives walk their index entries. TRUNCATE frees a table whatever
// snapshot is held, so messages and message_bodies are kept in two slots
// (list partitions, migration 0009): inserts go to the current one; a
// rotation moves what is left in the other into the current one (an update
// of slot, which keeps every key, so receipt handles stay good), empties
// the other by TRUNCATE and makes it current. Under a held snapshot the dead
// rows are then bounded by what two rotations leave, not by the age of the
// snapshot.
//
// A rotation rewrites every message still waiting, so it runs only when it
// pays: when vacuum has been held back for a period, or the dead rows are
// beyond what vacuum keeps up with, and there are more dead rows than rows
// to move. Every node samples the database's oldest snapshot and the dead
// rows (for /metrics and the health endpoint); the node holding the
// "rotation" lease rotates.

// rotationOptions tune rotation; the zero value takes the defaults.
type rotationOptions struct {
	// every is how often a node samples, and the holder of the lease may
	// rotate.
	every time.Duration
	// period is the least time between two rotations, and how long vacuum
	// must have been held back for one.
	period time.Duration
	// minDead: fewer dead rows than this never pay for a rotation.
	minDead int64
	// deadLimit: this many dead rows call for a rotation even when no
	// snapshot is seen held (a replication slot's, or vacuum behind).
	deadLimit int64
	// warnAfter is how long vacuum may be held back before the health
	// endpoint says so.
	warnAfter time.Duration
	// batch is the most rows one statement moves.
	batch int
}

const (
	defaultRotateEvery  = 15 * time.Second
	defaultRotatePeriod = time.Minute
	defaultMinDead      = 10_000
	defaultDeadLimit    = 200_000
	defaultWarnAfter    = 5 * time.Minute
	defaultSlotBatch    = 1000
	// truncateLockTimeout bounds the wait for the lock TRUNCATE needs:
	// every statement on the messages queues behind a waiting TRUNCATE.
	truncateLockTimeout = 100 * time.Millisecond
	// truncateTries is how often a rotation moves and tries to truncate
	// before it leaves it to its next turn, truncateRetry apart.
	truncateTries = 3
	truncateRetry = time.Second
	// movedRetries bounds how often a statement that raced a move runs
	// again.
	movedRetries = 5
)

func (o rotationOptions) withDefaults() rotationOptions {
	if o.every <= 0 {
		o.every = defaultRotateEvery
	}
	if o.period <= 0 {
		o.period = defaultRotatePeriod
	}
	if o.minDead <= 0 {
		o.minDead = defaultMinDead
	}
	if o.deadLimit <= 0 {
		o.deadLimit = defaultDeadLimit
	}
	if o.warnAfter <= 0 {
		o.warnAfter = defaultWarnAfter
	}
	if o.batch <= 0 {
		o.batch = defaultSlotBatch
	}
	return o
}

// slots are the partitions of messages and message_bodies.
const slots = 2

// currentSlot is the slot the statements insert into (the columns'
// default, current_slot(), costs a function call per row).
const currentSlot = `(SELECT slot FROM message_slots)`

// vacuumState is what a node last sampled of the database.
type vacuumState struct {
	at time.Time // zero: never sampled
	// heldFor is the age of the oldest transaction of the database that
	// holds back vacuum (a snapshot or a transaction id), or of its
	// oldest prepared transaction; holder says whose.
	heldFor time.Duration
	holder  string
	// heldXids is the age in transaction ids of the oldest snapshot, also
	// counting replication slots.
	heldXids int64
	// dead and live are the statistics' row counts of each slot's
	// partitions of messages and message_bodies together.
	dead, live [slots]int64
	// slot is the current slot; rotations counts the rotations done by
	// every node, sinceRotation the time since the last.
	slot          int
	rotations     int64
	sinceRotation time.Duration
}

func (v vacuumState) deadRows() int64 { return v.dead[0] + v.dead[1] }

// due says whether a rotation is wanted now, and why.
func (o rotationOptions) due(v vacuumState) (bool, string) {
	if v.sinceRotation < o.period {
		return false, ""
	}
	// It pays when it frees more than it moves: the rows of the other
	// slot are moved, and the dead rows of both slots are freed by this
	// rotation and the next.
	dead := v.deadRows()
	if dead < max(o.minDead, v.live[1-v.slot]) {
		return false, ""
	}
	switch {
	case v.heldFor >= o.period:
		return true, fmt.Sprintf("vacuum held back for %s by %s", v.heldFor.Round(time.Second), v.holder)
	case dead >= o.deadLimit:
		return true, fmt.Sprintf("%d dead rows", dead)
	}
	return false, ""
}

// vacuumSQL samples the database: the oldest transaction holding back
// vacuum in it (autovacuum's own are ignored by vacuum, as is this
// session), the oldest snapshot's age in transactions, the dead and live
// rows of each slot, and the rotations.
const vacuumSQL = `
WITH h AS (
	SELECT now() - xact_start AS held, greatest(age(backend_xmin), age(backend_xid)) AS xids,
		format('pid %s (%s, %s)', pid, coalesce(nullif(application_name, ''), usename), state) AS who
	FROM pg_stat_activity
	WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type <> 'autovacuum worker'
		AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
	UNION ALL
	SELECT now() - prepared, age(transaction), format('prepared transaction %s', gid)
	FROM pg_prepared_xacts WHERE database = current_database()
	UNION ALL
	SELECT NULL, age(xmin), format('replication slot %s', slot_name)
	FROM pg_replication_slots WHERE xmin IS NOT NULL AND (database IS NULL OR database = current_database())
), o AS (
	SELECT held, who FROM h WHERE held IS NOT NULL ORDER BY held DESC LIMIT 1
), t AS (
	SELECT right(relname, 1)::int AS slot, n_dead_tup AS dead, n_live_tup AS live
	FROM pg_stat_user_tables
	WHERE schemaname = current_schema() AND relname IN ('messages_0', 'messages_1', 'message_bodies_0', 'message_bodies_1')
)
SELECT coalesce((SELECT extract(epoch FROM held) FROM o), 0)::float8, coalesce((SELECT who FROM o), ''),
	coalesce((SELECT max(xids) FROM h), 0)::int8,
	coalesce((SELECT sum(dead) FROM t WHERE slot = 0), 0)::int8, coalesce((SELECT sum(dead) FROM t WHERE slot = 1), 0)::int8,
	coalesce((SELECT sum(live) FROM t WHERE slot = 0), 0)::int8, coalesce((SELECT sum(live) FROM t WHERE slot = 1), 0)::int8,
	s.slot, s.rotations, extract(epoch FROM now() - s.rotated_at)::float8
FROM message_slots s`

// sampleVacuum reads vacuumSQL.
func (s *Store) sampleVacuum(ctx context.Context) (vacuumState, error) {
	var (
		v           vacuumState
		held, since float64
		slot        int16
	)
	err := s.pool.QueryRow(ctx, vacuumSQL).Scan(&held, &v.holder, &v.heldXids, &v.dead[0], &v.dead[1],
		&v.live[0], &v.live[1], &slot, &v.rotations, &since)
	if err != nil {
		return v, fmt.Errorf("sample vacuum: %w", err)
	}
	v.at = time.Now() // the wall clock, as the database's vacuum
	v.heldFor, v.sinceRotation = seconds(held), seconds(since)
	v.slot = int(slot)
	return v, nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// vacuumWatch keeps a node's last sample, for /metrics and health.
type vacuumWatch struct {
	mu   sync.Mutex
	last vacuumState
}

func (w *vacuumWatch) set(v vacuumState) {
	w.mu.Lock()
	w.last = v
	w.mu.Unlock()
}

func (w *vacuumWatch) get() vacuumState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// rotator samples every s.rotation.every while the store is open and,
// holding the "rotation" lease, rotates when a rotation is due. The first
// sample is taken at once.
func (s *Store) rotator(ctx context.Context) {
	o := s.rotation
	defer s.background.Done()
	for wait := time.Duration(0); ; wait = o.every {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait): // the wall clock: the database's housekeeping, not broker time
		}
		err := s.rotateIfDue(ctx, o)
		// An unreachable database is logged once, by the outage.
		if err != nil && ctx.Err() == nil && !errors.Is(err, engine.ErrUnavailable) {
			s.log.Warn("postgres: rotation of the message tables", "err", err)
		}
	}
}

func (s *Store) rotateIfDue(ctx context.Context, o rotationOptions) error {
	v, err := s.sampleVacuum(ctx)
	if err != nil {
		return err
	}
	s.vacuum.set(v)
	ok, why := o.due(v)
	if !ok {
		return nil
	}
	held, err := s.takeLease(ctx, "rotation", 2*o.every)
	if err != nil || !held {
		return err
	}
	start := time.Now()
	r, err := s.rotate(ctx, o.batch)
	if err != nil {
		return err
	}
	if r.done {
		s.log.Info("postgres: rotated the message tables", "why", why, "moved", r.moved, "took", time.Since(start).Round(time.Millisecond))
	} else {
		s.log.Info("postgres: the message tables could not be rotated yet; trying again later", "why", why, "moved", r.moved, "left", r.left)
	}
	return nil
}

// rotated is what a rotation did.
type rotated struct {
	done  bool   // the other slot was emptied and made current
	moved int64  // rows moved
	left  string // why not done
}

// rotate moves the rows of the slot that is not current into the current
// one and empties it by TRUNCATE, then makes it current. Rows locked by a
// call in progress are skipped by a pass and moved by the next. When the
// slot cannot be locked at once, or rows are still left, it tries again
// after truncateRetry, a few times, then leaves it.
func (s *Store) rotate(ctx context.Context, batch int) (rotated, error) {
	var r rotated
	var cur int16
	if err := s.pool.QueryRow(ctx, `SELECT slot FROM message_slots`).Scan(&cur); err != nil {
		return r, fmt.Errorf("read the current slot: %w", err)
	}
	old := 1 - cur
	for try := 0; ; try++ {
		n, err := s.moveSlot(ctx, old, cur, batch)
		r.moved += n
		if err != nil {
			return r, err
		}
		r.done, r.left, err = s.truncateSlot(ctx, old, cur)
		if err != nil || r.done || try+1 == truncateTries {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(truncateRetry): // the wall clock: a retry of I/O
		}
	}
}

// slotMoves move up to $3 rows of a table from slot $1 to slot $2, in the
// order of its key from after the key $4 (, $5); each answers how many rows
// it locked, how many it moved, and the last key it locked (two columns;
// 0 for a key of one).
var slotMoves = []struct {
	table string
	keys  int
	sql   string
}{
	{"messages", 2, `
		WITH c AS (
			SELECT queue_id, seq FROM messages
			WHERE slot = $1 AND (queue_id, seq) > ($4, $5)
			ORDER BY queue_id, seq LIMIT $3
			FOR UPDATE SKIP LOCKED
		), u AS (
			UPDATE messages m SET slot = $2 FROM c WHERE m.slot = $1 AND m.queue_id = c.queue_id AND m.seq = c.seq
			RETURNING 1
		), l AS (
			SELECT queue_id, seq FROM c ORDER BY queue_id DESC, seq DESC LIMIT 1
		)
		SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM u),
			coalesce((SELECT queue_id FROM l), 0), coalesce((SELECT seq FROM l), 0)`},
	{"message_bodies", 1, `
		WITH c AS (
			SELECT id FROM message_bodies
			WHERE slot = $1 AND id > $4
			ORDER BY id LIMIT $3
			FOR UPDATE SKIP LOCKED
		), u AS (
			UPDATE message_bodies b SET slot = $2 FROM c WHERE b.slot = $1 AND b.id = c.id
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM u), coalesce((SELECT max(id) FROM c), 0), 0::int8`},
}

// moveSlot moves every row of slot from to slot to that no call holds,
// batch rows a statement, each statement committing on its own. It walks
// each table in the order of its key, so that no statement reads again
// what an earlier one left dead, then walks again from the start for the
// rows it skipped, until a pass finds none or truncateTries passes.
func (s *Store) moveSlot(ctx context.Context, from, to int16, batch int) (int64, error) {
	var total int64
	for _, mv := range slotMoves {
		for pass := 0; pass < truncateTries; pass++ {
			var after [2]int64 // keys are positive
			seen := int64(0)
			for {
				var found, moved int64
				args := []any{from, to, batch, after[0], after[1]}[:3+mv.keys]
				err := retryMoved(ctx, func() error {
					return s.pool.QueryRow(ctx, mv.sql, args...).Scan(&found, &moved, &after[0], &after[1])
				})
				if err != nil {
					return total, fmt.Errorf("move %s from slot %d: %w", mv.table, from, err)
				}
				total += moved
				seen += found
				if found < int64(batch) {
					break
				}
			}
			if seen == 0 {
				break
			}
		}
	}
	return total, nil
}

// truncateSlot empties slot old, which the moves left empty, and makes it
// current in place of cur, under a lock it waits for at most
// truncateLockTimeout. It checks, holding the lock, that the slot is empty
// (a statement that read the current slot before the last rotation may
// have inserted there since) and that no other rotation came first; when
// not, it does nothing and says why.
func (s *Store) truncateSlot(ctx context.Context, old, cur int16) (bool, string, error) {
	m, b := "messages_"+strconv.Itoa(int(old)), "message_bodies_"+strconv.Itoa(int(old))
	var left string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var now int16
		if err := tx.QueryRow(ctx, `SELECT slot FROM message_slots FOR UPDATE`).Scan(&now); err != nil {
			return err
		}
		if now != cur {
			left = "another rotation came first"
			return errRollback
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", truncateLockTimeout.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+m+", "+b+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			if isState(err, "55P03") {
				left = "its tables are in use"
				return errRollback
			}
			return err
		}
		var rows bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+m+") OR EXISTS (SELECT 1 FROM "+b+")").Scan(&rows); err != nil {
			return err
		}
		if rows {
			left = "rows were left"
			return errRollback
		}
		if _, err := tx.Exec(ctx, "TRUNCATE "+m+", "+b); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE message_slots SET slot = $1, rotations = rotations + 1, rotated_at = now()`, old)
		return err
	})
	switch {
	case errors.Is(err, errRollback):
		return false, left, nil
	case err != nil:
		return false, "", fmt.Errorf("truncate slot %d: %w", old, err)
	}
	return true, "", nil
}

// errRollback ends a transaction that changed nothing, or must not.
var errRollback = errors.New("roll back")

// isState reports an error of the database with that SQLSTATE.
func isState(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// retryMoved runs fn, which is one statement or one transaction, again
// while it fails because a rotation moved a row it was locking, updating
// or deleting to the other slot (SQLSTATE 40001, "already moved to another
// partition"): its failure rolled it back, and the next run finds the row
// in its new slot.
func retryMoved(ctx context.Context, fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		if err == nil || !isState(err, "40001") || i == movedRetries || ctx.Err() != nil {
			return err
		}
	}
}
