package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/uuidv4"
)

// Move tasks (the dead-letter redrive API). A task is a row of move_tasks;
// the node holding its lease runs it in a goroutine. Each step is one
// transaction that locks the task row, checks that the task still runs and
// is still this node's, takes up to moveBatch visible messages out of the
// source (oldest first; on a FIFO source only from groups with nothing in
// flight, so each group leaves in order), writes each as a new message in
// its destination and adds them to Moved: a message is moved once, whatever
// node runs the step, and Moved is exact. Leases live on the database's
// clock, since they are about nodes being alive; rates, the task's maximum
// duration and sent times on the store's clock.
const (
	moveBatch = 10
	// keepTasks is how many tasks a source keeps at least; older ended
	// ones are pruned when a new task starts.
	keepTasks = 10
	// defaultLeaseFor is how long a node holds a task without renewing it;
	// every defaultLeaseRenew the runner renews its leases and takes over
	// the tasks whose lease has run out.
	defaultLeaseFor   = 30 * time.Second
	defaultLeaseRenew = 10 * time.Second
	// stepRetry paces the retries of a step that failed on the database.
	stepRetry = time.Second
	// releaseWait bounds how long a closing node tries to give its
	// leases up, stepTimeout how long one step may take.
	releaseWait = 5 * time.Second
	stepTimeout = 30 * time.Second
)

const taskColumns = `id, source_queue_id, source_account, source_name, source_arn, destination_arn,
	max_per_second, status, to_move, moved, started_ns, failure, refs`

// runTask is a task as its runner knows it.
type runTask struct {
	engine.MoveTask
	sourceID int64
}

func scanTask(row pgx.Row) (runTask, error) {
	var (
		t       runTask
		status  string
		failure string
		started int64
	)
	err := row.Scan(&t.ID, &t.sourceID, &t.SourceAccount, &t.SourceName, &t.SourceARN, &t.DestinationARN,
		&t.MaxPerSecond, &status, &t.ToMove, &t.Moved, &started, &failure, &t.Refs)
	t.Status, t.FailureReason, t.Started = engine.MoveTaskStatus(status), engine.MoveTaskFailure(failure), fromNS(started)
	return t, err
}

// scanFirst is row with its first columns read into dst, for a scanner of
// the columns after them.
func scanFirst(row pgx.Row, dst ...any) pgx.Row { return prefixRow{row, dst} }

type prefixRow struct {
	row pgx.Row
	dst []any
}

func (p prefixRow) Scan(dest ...any) error { return p.row.Scan(append(p.dst, dest...)...) }

// runner runs the move tasks this node holds.
type runner struct {
	s      *Store
	node   string // this node's lease owner name (Store.node)
	leases leaseTimes
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	held    bool // Options.HoldMoveTasks until OnMovedByTask
	running map[string]bool
	onMoved func(account, queue string, m *engine.NewMessage)
}

// leaseTimes are a runner's lease and renewal intervals; zero fields are
// the defaults.
type leaseTimes struct{ hold, renew time.Duration }

func startRunner(s *Store, hold bool, leases leaseTimes) *runner {
	if leases.hold <= 0 {
		leases.hold = defaultLeaseFor
	}
	if leases.renew <= 0 {
		leases.renew = defaultLeaseRenew
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{s: s, node: s.node, leases: leases, log: s.log, ctx: ctx, cancel: cancel,
		kick: make(chan struct{}, 1), held: hold, running: map[string]bool{}}
	r.wg.Add(1)
	go r.loop()
	return r
}

// stop stops the runner and, if release, gives its tasks' leases up, so
// that another node takes them over at once.
func (r *runner) stop(release bool) {
	r.cancel()
	r.wg.Wait()
	if !release {
		return
	}
	// A database that does not answer must not hold the close up: the
	// leases then run out by themselves.
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	_, err := r.s.pool.Exec(ctx, `UPDATE move_tasks SET lease_owner = '', lease_until = NULL
		WHERE lease_owner = $1 AND status = 'RUNNING'`, r.node)
	if err != nil {
		r.log.Warn("postgres: move tasks: release leases", "err", err)
	}
}

func (r *runner) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// loop renews this node's leases and takes over orphaned tasks, at once
// and every leaseRenew (real time: leases are about nodes being alive).
func (r *runner) loop() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		held := r.held
		r.mu.Unlock()
		if !held {
			if err := r.claim(); err != nil && r.ctx.Err() == nil && !errors.Is(err, engine.ErrUnavailable) {
				r.log.Warn("postgres: move tasks: claim", "err", err)
			}
		}
		select {
		case <-r.ctx.Done():
			return
		case <-r.kick:
		case <-time.After(r.leases.renew):
		}
	}
}

func (r *runner) claim() error {
	r.mu.Lock()
	mine := []string{} // not nil: a nil slice is NULL, and NOT (id = ANY(NULL)) no row
	for id := range r.running {
		mine = append(mine, id)
	}
	r.mu.Unlock()
	_, err := r.s.pool.Exec(r.ctx, `UPDATE move_tasks SET lease_until = clock_timestamp() + $3
		WHERE lease_owner = $1 AND id = ANY($2) AND status = 'RUNNING'`, r.node, mine, r.leases.hold)
	if err != nil {
		return err
	}
	rows, err := r.s.pool.Query(r.ctx, `UPDATE move_tasks SET lease_owner = $1, lease_until = clock_timestamp() + $3
		WHERE status = 'RUNNING' AND NOT (id = ANY($2))
			AND (lease_owner IN ('', $1) OR lease_until < clock_timestamp())
		RETURNING `+taskColumns, r.node, mine, r.leases.hold)
	if err != nil {
		return err
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runTask, error) { return scanTask(row) })
	if err != nil {
		return err
	}
	for _, t := range tasks {
		r.start(t)
	}
	return nil
}

// start runs t unless this node runs it already.
func (r *runner) start(t runTask) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[t.ID] || r.held || r.ctx.Err() != nil {
		return
	}
	r.running[t.ID] = true
	r.wg.Add(1)
	go r.run(t)
}

// run moves t's messages until the task ends, this node loses it, or the
// store closes. With a rate, time is cut into one-second slots from the
// runner's start and each slot moves at most MaxPerSecond messages, so N
// seconds after the start at most (N+1)×MaxPerSecond have moved.
func (r *runner) run(t runTask) {
	defer func() {
		r.mu.Lock()
		delete(r.running, t.ID)
		r.mu.Unlock()
		r.wg.Done()
	}()
	rate := t.MaxPerSecond
	const second = int64(time.Second)
	slot := r.s.now()
	used := 0
	// holds keep a controlled clock's step from moving on before the step
	// this wake-up is for has moved its slot's messages.
	var holds clock.Holds
	defer holds.Release()
	ctx := clock.WithHolds(r.ctx, &holds)
	for r.ctx.Err() == nil {
		limit := moveBatch
		var until int64 // the end of a full slot: wait for it after the step
		if rate > 0 {
			now := r.s.now()
			if d := now - slot; d >= second {
				slot += d - d%second
				used = 0
			} else if d < 0 {
				slot = now
			}
			if used >= rate {
				limit, until = 0, slot+second
			} else {
				limit = min(limit, rate-used)
			}
		}
		n, done, err := r.step(ctx, t, limit)
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			if !errors.Is(err, engine.ErrUnavailable) {
				r.log.Warn("postgres: move task step", "task", t.ID, "err", err)
			}
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(stepRetry): // the wall clock: a retry of I/O
			}
			continue
		}
		if done {
			return
		}
		used += n
		if until > 0 && !r.waitUntil(ctx, until) {
			return
		}
	}
}

// waitUntil waits until the store's clock reads until; false if closing.
// The holds ctx carries are released while it waits (clock.Sleep).
func (r *runner) waitUntil(ctx context.Context, until int64) bool {
	return clock.Sleep(ctx, r.s.clock, time.Duration(until-r.s.now()))
}

// moved is one message a step moved, for OnMovedByTask.
type moved struct {
	account, queue string
	msg            engine.NewMessage
}

// stepTaskSQL locks task $1 for a step and reads it with its source queue
// (source false when that is deleted): the refs the step reaches, up to
// $2 of them, and how many are left. It marks them reached at once when
// the task goes on as node $3's, since the step passes them moved or not.
const stepTaskSQL = `
WITH task AS (
	SELECT t.status, t.lease_owner, t.to_move, t.moved, t.ref_seqs IS NOT NULL AS refs,
		coalesce(t.ref_seqs[t.refs_reached + 1 : t.refs_reached + $2], '{}') AS reach,
		coalesce(cardinality(t.ref_seqs) - t.refs_reached, 0) AS refs_left,
		q.id IS NOT NULL AS source, coalesce(q.fifo, false) AS fifo, coalesce(q.retention_ns, 0) AS retention
	FROM move_tasks t LEFT JOIN queues q ON q.id = t.source_queue_id AND q.deleted_ns IS NULL
	WHERE t.id = $1 FOR UPDATE OF t
), r AS (
	UPDATE move_tasks SET refs_reached = refs_reached + cardinality(task.reach) FROM task
	WHERE id = $1 AND cardinality(task.reach) > 0 AND task.status = 'RUNNING' AND task.lease_owner = $3
		AND task.source AND task.to_move > task.moved
)
SELECT status, lease_owner, to_move, moved, refs, reach, refs_left, source, fifo, retention FROM task`

// stepMoveSQL moves the messages $2 of source $1 to the queues $3 (as new
// messages $4, in order, $5 being now), adds them to task $6's Moved, and
// tells the destinations' waiters. It answers what it moved, each row with
// the notes.
var stepMoveSQL = `
WITH k AS (
	SELECT * FROM unnest($2::int8[], $3::int8[], $4::text[]) WITH ORDINALITY AS k(seq, dest, new_id, i)
), mv AS (
	DELETE FROM messages m USING k WHERE m.queue_id = $1 AND m.seq = k.seq
	RETURNING m.body_id, m.dedup_id, m.group_id, k.dest, k.new_id, k.i, m.history, m.receive_count, m.message_id
), ins AS (
	INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, dedup_id, group_id, slot, history)
	SELECT d.id, mv.new_seq, mv.body_id, mv.new_id, $5, $5, $5 + d.delay_ns,
		CASE WHEN d.fifo THEN mv.dedup_id ELSE '' END, CASE WHEN d.fifo THEN mv.group_id ELSE '' END, ` + currentSlot + `,
		-- The story moves with the message and tells of the move.
		history_add(mv.history, CASE WHEN mv.history IS NOT NULL THEN jsonb_build_object('kind', 'move',
			'at', $5::int8, 'count', mv.receive_count, 'from', (SELECT arn FROM queues WHERE id = $1),
			'to', d.arn, 'cause', 'move-task', 'prev', mv.message_id) END)
	-- Numbered in order before the join, which need not keep it.
	FROM (SELECT mv.*, nextval('message_seq') AS new_seq FROM (SELECT * FROM mv ORDER BY i) mv) mv
	JOIN queues d ON d.id = mv.dest
	RETURNING queue_id, group_id, seq, visible_ns
), counted AS (` + countInserted + `ins GROUP BY queue_id
), g AS (` + upsertGroups("ins") + `
), n AS (
	SELECT queue_id AS qid, min(visible_ns) AS at, notify_waiters($7, queue_id, min(visible_ns)) FROM ins
	WHERE (SELECT count(*) FROM g) >= 0
	GROUP BY queue_id HAVING min(visible_ns) < $5::int8 + $8::int8
), t AS (
	UPDATE move_tasks SET moved = moved + (SELECT count(*) FROM mv) WHERE id = $6
)
SELECT mv.i, mv.dedup_id, b.body, b.attributes, b.trace_header, b.group_id, b.sender_id,
	b.md5_body, b.md5_attrs, b.md5_sys, ` + notesSQL + `
FROM mv JOIN message_bodies b ON b.id = mv.body_id ORDER BY mv.i`

// step is one transaction of a task: it ends the task, or moves up to
// limit messages (a limit of 0 only checks whether the task must end). It
// reports how many moved and whether the task has ended (for this node).
func (r *runner) step(ctx context.Context, t runTask, limit int) (int, bool, error) {
	// A step runs to its end even when the store closes meanwhile: a
	// commit cut short would leave it unknown whether the moves are
	// durable, and the hook must hear of every durable move.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout)
	defer cancel()
	var (
		done bool
		out  []moved
		told notes
	)
	// A step that raced a rotation's move runs again.
	step := func(tx pgx.Tx) error {
		done, out, told = false, nil, notes{}
		now := r.s.now()
		timedOut := now-toNS(t.Started) >= int64(engine.MoveTaskMaxDuration)
		reachFor := limit
		if timedOut {
			reachFor = 0 // the task ends: no ref is reached
		}
		var (
			status, owner  string
			toMove, nMoved int64
			// A task limited to refs: the refs' seqs it reaches in this
			// step, and how many it has yet to reach.
			refs      bool
			reach     []int64
			refsLeft  int64
			source    bool // the source queue is live
			fifo      bool
			retention int64
		)
		err := tx.QueryRow(ctx, stepTaskSQL, t.ID, max(reachFor, 0), r.node).
			Scan(&status, &owner, &toMove, &nMoved, &refs, &reach, &refsLeft, &source, &fifo, &retention)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (status != string(engine.MoveTaskRunning) || owner != r.node)) {
			done = true // ended, pruned, or another node's now
			return nil
		}
		if err != nil {
			return err
		}
		end := func(st engine.MoveTaskStatus, why engine.MoveTaskFailure) error {
			done = true
			_, err := tx.Exec(ctx, `UPDATE move_tasks SET status = $2, failure = $3, lease_owner = '', lease_until = NULL
				WHERE id = $1`, t.ID, string(st), string(why))
			return err
		}
		if timedOut {
			return end(engine.MoveTaskFailed, engine.MoveTaskFailureTimedOut)
		}
		if !source {
			return end(engine.MoveTaskFailed, engine.MoveTaskFailureNonExistentQueue)
		}
		left := toMove - nMoved
		if left <= 0 || (refs && refsLeft <= 0) {
			return end(engine.MoveTaskCompleted, "")
		}
		if limit <= 0 {
			return nil
		}
		var (
			seqs  []int64
			dests []destination
		)
		if refs {
			// The refs reached are passed, moved or not (stepTaskSQL
			// marked them): the task goes on after them.
			if seqs, dests, err = refCandidates(ctx, tx, t.sourceID, t.SourceAccount, t.SourceName, fifo, now, retention, reach, t.DestinationARN); err != nil {
				return err
			}
			if len(seqs) == 0 {
				return nil // none of them to move: the next step reaches the next
			}
		} else {
			seqs, dests, err = moveCandidates(ctx, tx, t.sourceID, t.SourceAccount, t.SourceName, fifo, now, retention, int(min(int64(limit), left)), t.DestinationARN)
			if err != nil {
				return err
			}
			if len(seqs) == 0 {
				return end(engine.MoveTaskCompleted, "")
			}
		}
		destIDs := make([]int64, len(seqs))
		newIDs := make([]string, len(seqs))
		rnd := make([]byte, 16*len(seqs))
		if _, err := rand.Read(rnd); err != nil {
			return err
		}
		for i, d := range dests {
			if d.id == 0 {
				// The messages of this step stay where they are.
				return end(engine.MoveTaskFailed, engine.MoveTaskFailureNonExistentQueue)
			}
			var id [uuidv4.Len]byte
			uuidv4.Encode(&id, [16]byte(rnd[16*i:]))
			destIDs[i], newIDs[i] = d.id, string(id[:])
		}
		rows, err := tx.Query(ctx, stepMoveSQL, t.sourceID, seqs, destIDs, newIDs, now, t.ID, r.s.channel, int64(maxLongPoll))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				i     int64
				m     engine.NewMessage
				dedup string
				body  []byte
				attrs []byte
			)
			if err := rows.Scan(&i, &dedup, &body, &attrs, &m.TraceHeader, &m.MessageGroupID, &m.SenderID,
				&m.MD5OfBody, &m.MD5OfAttrs, &m.MD5OfSysAttrs, &told.qids, &told.ats); err != nil {
				return err
			}
			m.Body, m.DeduplicationID = string(body), dedup
			if attrs != nil {
				if err := json.Unmarshal(attrs, &m.Attributes); err != nil {
					return fmt.Errorf("message attributes: %w", err)
				}
			}
			d := dests[i-1]
			out = append(out, moved{account: d.account, queue: d.name, msg: m})
		}
		rows.Close()
		if err := rows.Err(); err != nil || !fifo {
			return err
		}
		_, refreshTold, err := refreshed(tx.QueryRow(ctx, refreshSQL, r.s.refreshArgs(t.SourceAccount, t.SourceName, now)...))
		told.add(refreshTold)
		return err
	}
	err := retryMoved(ctx, func() error { return pgx.BeginFunc(ctx, r.s.pool, step) })
	if err != nil {
		return 0, false, err
	}
	r.s.tell(told)
	r.mu.Lock()
	fn := r.onMoved
	r.mu.Unlock()
	if fn != nil {
		for i := range out {
			fn(out[i].account, out[i].queue, &out[i].msg)
		}
	}
	return len(out), done, nil
}

// destination is a live queue a step moves messages to; id 0 when the
// queue is gone.
type destination struct {
	id            int64
	account, name string
}

// withDestinations makes a candidates statement, which locks messages of
// the source and answers each one's seq and dlq_source_arn, answer each
// one's destination instead: the task's, parameter dest, or else the queue
// the message came from. An empty ARN names no queue, so a message with
// no source and no destination given fails the task rather than matching
// a queue that has no ARN.
func withDestinations(candidates, dest string) string {
	return `SELECT c.seq, coalesce(d.id, 0), coalesce(d.account, ''), coalesce(d.name, '')
	FROM (` + candidates + `) c
	LEFT JOIN queues d ON d.arn = coalesce(nullif(` + dest + `::text, ''), nullif(c.dlq_source_arn, '')) AND d.deleted_ns IS NULL
	ORDER BY c.seq`
}

// moveCandidatesSQL locks up to $6 messages of source $1 for a step, the
// oldest first: the visible ones at $3 within the retention $4, or, when
// $2 (FIFO), the runs $5 that fifoRunCTEs chose; with their destinations
// ($7 the task's).
var moveCandidatesSQL = withDestinations(`SELECT m.seq, m.dlq_source_arn FROM messages m
	WHERE m.queue_id = $1 AND ($2 OR (m.visible_ns <= $3 AND m.sent_ns > $3::int8 - $4::int8))
		AND (NOT $2 OR m.seq = ANY($5))
	ORDER BY m.seq LIMIT $6 FOR UPDATE OF m SKIP LOCKED`, "$7")

// moveCandidates chooses up to n visible messages of source to move,
// oldest first, with the queue each goes to (dest, or its
// DeadLetterSourceARN). On a FIFO source it takes them as a receive would:
// it locks the ready groups first and takes each one's visible run from
// its head, so that a group leaves in order and a receive never takes
// from it meanwhile; the step sets the groups' rows again once they have
// moved.
func moveCandidates(ctx context.Context, tx pgx.Tx, source int64, account, name string, fifo bool, now, retention int64, n int, dest string) ([]int64, []destination, error) {
	var seqs []int64
	if fifo {
		if _, err := tx.Exec(ctx, lockReadySQL, account, name, now, n); err != nil {
			return nil, nil, fmt.Errorf("lock groups: %w", err)
		}
		rows, err := tx.Query(ctx, `WITH q AS (
				SELECT id, retention_ns, NULL::int8 AS dlq_id, 0 AS redrive_max
				FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
			), `+fifoRunCTEs+`
			SELECT seq FROM c ORDER BY g_head, group_id, seq`, account, name, now, n)
		if err != nil {
			return nil, nil, err
		}
		if seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil || len(seqs) == 0 {
			return nil, nil, err
		}
	}
	return candidates(tx.Query(ctx, moveCandidatesSQL, source, fifo, now, retention, seqs, n, dest))
}

// candidates reads the rows of a candidates statement: the messages' seqs
// and their destinations.
func candidates(rows pgx.Rows, err error) ([]int64, []destination, error) {
	if err != nil {
		return nil, nil, err
	}
	var (
		out   []int64
		dests []destination
		seq   int64
		d     destination
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &d.id, &d.account, &d.name}, func() error {
		out, dests = append(out, seq), append(dests, d)
		return nil
	})
	return out, dests, err
}

// refCandidatesSQL locks the messages of source $1 of seqs $2 that are
// visible at $3 within the retention $4, in the order of the queue,
// passing over those another transaction holds (a receive taking them);
// with their destinations ($5 the task's).
var refCandidatesSQL = withDestinations(`SELECT m.seq, m.dlq_source_arn FROM messages m
	WHERE m.queue_id = $1 AND m.seq = ANY($2::int8[]) AND m.visible_ns <= $3 AND m.sent_ns > $3::int8 - $4::int8
	ORDER BY m.seq FOR UPDATE OF m SKIP LOCKED`, "$5")

// refCandidates chooses, of the messages of source that seqs name, those
// visible now, in the order of the queue, with the queue each goes to.
// On a FIFO source it locks their groups first, as a delete does, so
// that no receive takes from them until the step has set their rows
// again.
func refCandidates(ctx context.Context, tx pgx.Tx, source int64, account, name string, fifo bool, now, retention int64, seqs []int64, dest string) ([]int64, []destination, error) {
	if fifo {
		if _, err := tx.Exec(ctx, lockRefsSQL, account, name, seqs); err != nil {
			return nil, nil, fmt.Errorf("lock groups: %w", err)
		}
	}
	return candidates(tx.Query(ctx, refCandidatesSQL, source, seqs, now, retention, dest))
}

// StartMoveTask implements engine.Backend. The checks and the insert are
// one transaction under an advisory lock on the account, so that nodes
// starting tasks at once count each other's.
func (s *Store) StartMoveTask(ctx context.Context, t engine.MoveTask) (engine.MoveTask, error) {
	if err := s.enter(); err != nil {
		return engine.MoveTask{}, err
	}
	defer s.leave()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return engine.MoveTask{}, fmt.Errorf("postgres: start move task: %w", err)
	}
	var text [uuidv4.Len]byte
	uuidv4.Encode(&text, id)
	now := s.now()
	t.ID, t.Status, t.Moved, t.Started, t.FailureReason = string(text[:]), engine.MoveTaskRunning, 0, fromNS(now), ""
	// A task limited to refs keeps them as given, and the seqs they name
	// in the order of the queue, which its steps walk; NULL otherwise.
	var (
		refs    []string
		inOrder []int64
	)
	if len(t.Refs) > 0 {
		refs, inOrder = t.Refs, queueOrder(t.Refs)
	}
	var started runTask
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "ferry move tasks "+t.SourceAccount); err != nil {
			return err
		}
		var (
			qid       int64
			arn       string
			retention int64
		)
		err := tx.QueryRow(ctx, `SELECT id, arn, retention_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL`,
			t.SourceAccount, t.SourceName).Scan(&qid, &arn, &retention)
		if errors.Is(err, pgx.ErrNoRows) {
			return engine.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		if t.SourceARN == "" {
			t.SourceARN = arn
		}
		var onSource, inAccount int64
		err = tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE source_queue_id = $2), count(*) FROM move_tasks
			WHERE source_account = $1 AND status IN ('RUNNING', 'CANCELLING')`, t.SourceAccount, qid).Scan(&onSource, &inAccount)
		switch {
		case err != nil:
			return err
		case onSource > 0:
			return engine.ErrMoveTaskActive
		case inAccount >= engine.MaxActiveMoveTasks:
			return engine.ErrMoveTaskLimit
		}
		if len(t.Refs) > 0 {
			t.ToMove = int64(len(t.Refs))
		} else {
			err = tx.QueryRow(ctx, `SELECT count(*) FROM messages WHERE queue_id = $1 AND visible_ns <= $2 AND sent_ns > $2::int8 - $3::int8`,
				qid, now, retention).Scan(&t.ToMove)
			if err != nil {
				return err
			}
		}
		started, err = scanTask(tx.QueryRow(ctx, `INSERT INTO move_tasks (id, source_queue_id, source_account, source_name,
				source_arn, destination_arn, max_per_second, status, to_move, started_ns, lease_owner, lease_until, refs, ref_seqs)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, clock_timestamp() + $12, $13, $14)
			RETURNING `+taskColumns,
			t.ID, qid, t.SourceAccount, t.SourceName, t.SourceARN, t.DestinationARN, t.MaxPerSecond,
			string(t.Status), t.ToMove, now, s.tasks.node, s.tasks.leases.hold, refs, inOrder))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM move_tasks WHERE source_queue_id = $1 AND status NOT IN ('RUNNING', 'CANCELLING')
			AND n NOT IN (SELECT n FROM move_tasks WHERE source_queue_id = $1 ORDER BY n DESC LIMIT $2)`, qid, keepTasks)
		return err
	})
	switch {
	case errors.Is(err, engine.ErrQueueNotFound), errors.Is(err, engine.ErrMoveTaskActive), errors.Is(err, engine.ErrMoveTaskLimit):
		return engine.MoveTask{}, err
	case err != nil:
		return engine.MoveTask{}, fmt.Errorf("postgres: start move task on %s: %w", t.SourceName, err)
	}
	s.tasks.start(started)
	return started.MoveTask, nil
}

// sourceQueue is the id of a live queue, for the task calls.
func (s *Store) sourceQueue(ctx context.Context, account, name string) (int64, error) {
	var qid int64
	err := s.pool.QueryRow(ctx, `SELECT id FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL`,
		account, name).Scan(&qid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, engine.ErrQueueNotFound
	}
	return qid, err
}

// ListMoveTasks implements engine.Backend.
func (s *Store) ListMoveTasks(ctx context.Context, account, name string) ([]engine.MoveTask, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	qid, err := s.sourceQueue(ctx, account, name)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: list move tasks of %s: %w", name, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+taskColumns+` FROM move_tasks WHERE source_queue_id = $1 ORDER BY n DESC`, qid)
	if err != nil {
		return nil, fmt.Errorf("postgres: list move tasks of %s: %w", name, err)
	}
	ts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (engine.MoveTask, error) {
		t, err := scanTask(row)
		return t.MoveTask, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list move tasks of %s: %w", name, err)
	}
	return ts, nil
}

// CancelMoveTask implements engine.Backend. The task is CANCELLED when it
// returns: its runner's steps lock the task's row and find it so.
func (s *Store) CancelMoveTask(ctx context.Context, account, name, id string) (engine.MoveTask, error) {
	if err := s.enter(); err != nil {
		return engine.MoveTask{}, err
	}
	defer s.leave()
	qid, err := s.sourceQueue(ctx, account, name)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return engine.MoveTask{}, err
	}
	if err != nil {
		return engine.MoveTask{}, fmt.Errorf("postgres: cancel move task: %w", err)
	}
	// One statement: the task's row after the cancel if it ran, as it was
	// otherwise (then the cancel changed nothing).
	var cancelled bool
	t, err := scanTask(scanFirst(s.pool.QueryRow(ctx, `
		WITH c AS (
			UPDATE move_tasks SET status = 'CANCELLED', lease_owner = '', lease_until = NULL
			WHERE id = $1 AND source_queue_id = $2 AND status = 'RUNNING'
			RETURNING `+taskColumns+`
		)
		SELECT true, * FROM c
		UNION ALL
		SELECT false, `+taskColumns+` FROM move_tasks
		WHERE id = $1 AND source_queue_id = $2 AND NOT EXISTS (SELECT 1 FROM c)`,
		id, qid), &cancelled))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return engine.MoveTask{}, engine.ErrMoveTaskNotFound
	case err != nil:
		return engine.MoveTask{}, fmt.Errorf("postgres: cancel move task: %w", err)
	case !cancelled:
		return t.MoveTask, engine.ErrMoveTaskNotRunning
	}
	return t.MoveTask, nil
}

// OnMovedByTask implements engine.Store; with Options.HoldMoveTasks the
// node takes no task until it is called.
func (s *Store) OnMovedByTask(fn func(account, queue string, m *engine.NewMessage)) {
	s.tasks.mu.Lock()
	s.tasks.onMoved, s.tasks.held = fn, false
	s.tasks.mu.Unlock()
	s.tasks.wake()
}
