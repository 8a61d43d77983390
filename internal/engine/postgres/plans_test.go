package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// The statements of a FIFO send, receive and delete walk indexes, on a
// FIFO queue of 20,000 groups of 2 messages (beside another queue's 40,000
// messages) whose 500 oldest groups have a message in flight, and whose
// messages' deduplication keys are held (100 of them expired). The send
// is of 10 messages, 5 of them duplicates. The plans
// are logged (go test -v -run TestFIFOPlans) for docs/postgres.md. (The
// queues table of two rows is read whole, as PostgreSQL should.)
func TestFIFOPlans(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	createQueue(t, s, "other")
	createFIFOQueue(t, s, "q.fifo")
	now := s.now()
	var other, qid int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT id FROM queues WHERE name = 'other'), (SELECT id FROM queues WHERE name = 'q.fifo')`).
		Scan(&other, &qid); err != nil {
		t.Fatal(err)
	}
	const groups, per, busy = 20000, 2, 500
	// Messages in send order: message i is the (i / groups)th of group i % groups.
	_, err := s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys)
			SELECT nextval('message_seq'), 'x', '', CASE WHEN q = $3 THEN 'g' || (i % $4::int8) ELSE '' END, '', '', '', ''
			FROM (SELECT $3::int8 AS q, i FROM generate_series(0, $4::int8 * $5::int8 - 1) i
				UNION ALL SELECT $6::int8, i FROM generate_series(0, 40000) i ORDER BY 1, 2) g
			RETURNING id, group_id
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, group_id, dedup_id)
		SELECT CASE WHEN group_id = '' THEN $6 ELSE $3 END, id, id, 'm' || id, $1::int8, $2::int8, $1::int8, group_id, 'd' || id FROM b`,
		now, now, qid, groups, per, other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE messages m SET gen = 1, receive_count = 1, visible_ns = $1::int8 + 30000000000, received_ns = $1
		FROM (SELECT DISTINCT ON (group_id) seq FROM messages WHERE queue_id = $2 ORDER BY group_id, seq) h
		WHERE m.queue_id = $2 AND m.seq = h.seq AND m.group_id IN (SELECT 'g' || i FROM generate_series(0, $3 - 1) i)`, now, qid, busy)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO fifo_groups (queue_id, group_id, head_seq, ready_ns)
		SELECT queue_id, group_id, min(seq), greatest(min(visible_ns), max(visible_ns) FILTER (WHERE gen > 0))
		FROM messages WHERE queue_id = $1 GROUP BY queue_id, group_id`, qid)
	if err != nil {
		t.Fatal(err)
	}
	// Deduplication keys: each message's, 100 of them expired.
	_, err = s.pool.Exec(ctx, `
		INSERT INTO fifo_dedup (queue_id, key, message_id, seq, sent_ns)
		SELECT queue_id, 'q:' || dedup_id, message_id, seq,
			CASE WHEN seq % 400 = 0 THEN $2::int8 - $3::int8 ELSE $2::int8 END
		FROM messages WHERE queue_id = $1`, qid, now, int64(engine.DeduplicationWindow))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}

	acct, name := enginetest.Account, "q.fifo"
	// A send of 10: 5 fresh keys, 5 held by messages in the queue.
	var dups []string
	if err := s.pool.QueryRow(ctx, `SELECT array_agg(dedup_id) FROM (SELECT dedup_id FROM messages
		WHERE queue_id = $1 AND seq % 400 <> 0 ORDER BY seq LIMIT 5) d`, qid).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	var msgs []engine.NewMessage
	for i := range 10 {
		m := engine.NewMessage{Body: "x", MessageGroupID: "g" + strconv.Itoa(i), DeduplicationID: "fresh" + strconv.Itoa(i)}
		if i%2 == 1 {
			m.DeduplicationID = dups[i/2]
		}
		msgs = append(msgs, m)
	}
	p, err := s.prepareSend(acct, name, msgs, now)
	if err != nil {
		t.Fatal(err)
	}
	sendSQL, sendArgs := p.statement(true)
	var handle []int64
	if err := s.pool.QueryRow(ctx, `SELECT array[$1::int8, min(seq)] FROM messages WHERE queue_id = $1 AND gen = 1`, qid).
		Scan(&handle); err != nil {
		t.Fatal(err)
	}
	var vis *int64
	steps := []planStep{
		{"send", sendSQL, sendArgs},
		{"lock the ready groups", lockReadySQL, []any{acct, name, now, 10}},
		{"take", fifoTakeSQL, []any{acct, name, now, 10, vis, "", s.channel}},
		{"refresh the groups", refreshSQL, s.refreshArgs(acct, name, now)},
		{"lock a delete's groups", lockHandledSQL, []any{acct, name, []int64{handle[0]}, []int64{handle[1]}}},
		{"delete", deleteSQL, []any{acct, name, []int64{handle[0]}, []int64{handle[1]}, []int32{1}, now}},
		{"refresh the delete's groups", refreshSQL, s.refreshArgs(acct, name, now)},
	}
	checkPlans(t, s, steps, "messages", "fifo_groups", "fifo_dedup")

	// The real receive takes the oldest ready groups' runs.
	got, err := s.Receive(ctx, acct, name, engine.ReceiveRequest{Max: 10})
	if err != nil || len(got) != 10 || got[0].MessageGroupID != "g500" || got[1].MessageGroupID != "g500" ||
		got[9].MessageGroupID != "g504" {
		t.Fatalf("receive = %d messages of %v, %v", len(got), groupsOf(got), err)
	}
}

func createFIFOQueue(t *testing.T, s *Store, name string) {
	t.Helper()
	q := engine.Queue{Account: enginetest.Account, Name: name, ARN: enginetest.ARN(name), Settings: enginetest.Settings()}
	enginetest.FIFO(&q.Settings)
	if _, _, err := s.CreateQueue(context.Background(), q); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
}

// errRollback ends a transaction that only looked.
var errRollback = errors.New("roll back")

func groupsOf(ms []engine.Message) []string {
	var gs []string
	for _, m := range ms {
		gs = append(gs, m.MessageGroupID)
	}
	return gs
}

// planStep is a statement whose plan a test checks, with its arguments.
type planStep struct {
	what string
	sql  string
	args []any
}

// checkPlans runs each step under EXPLAIN ANALYZE in one transaction that
// it rolls back, logs the plans, and fails the test for a plan that scans
// one of tables whole.
func checkPlans(t *testing.T, s *Store, steps []planStep, tables ...string) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, st := range steps {
			rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+st.sql, st.args...)
			if err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
			plan := strings.Join(lines, "\n")
			t.Logf("%s:\n%s", st.what, plan)
			for _, table := range tables {
				if strings.Contains(plan, "Seq Scan on "+table) {
					t.Errorf("%s scans %s:\n%s", st.what, table, plan)
				}
			}
		}
		return errRollback
	})
	if err != errRollback {
		t.Fatal(err)
	}
}

// A receive on a queue whose messages retention has expired deletes their
// bodies by key, however many there are, and a visibility change on a FIFO
// queue reads only that queue's receive attempts: neither scans a table
// whole (40,000 bodies of another queue, 5,000 attempts of 50 other FIFO
// queues).
func TestExpiryAndAttemptPlans(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	createQueue(t, s, "old")
	createQueue(t, s, "other")
	createFIFOQueue(t, s, "q.fifo")
	createFIFOQueue(t, s, "busy.fifo")
	now := s.now()
	ids := map[string]int64{}
	for _, name := range []string{"old", "other", "q.fifo", "busy.fifo"} {
		var id int64
		if err := s.pool.QueryRow(ctx, `SELECT id FROM queues WHERE name = $1`, name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	// 10,000 messages of "old" sent five days ago (its retention is four),
	// 40,000 fresh ones of "other".
	_, err := s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys)
			SELECT nextval('message_seq'), 'x', '', '', '', '', '', '' FROM generate_series(1, 50000)
			RETURNING id
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns)
		SELECT CASE WHEN id % 5 = 0 THEN $1::int8 ELSE $2::int8 END, id, id, 'm' || id,
			CASE WHEN id % 5 = 0 THEN $3::int8 - 5 * 86400000000000 ELSE $3::int8 END, $3::int8, $3::int8 FROM b`,
		ids["old"], ids["other"], now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO fifo_attempts (queue_id, attempt_id, created_ns, seqs, gens)
		SELECT $1::int8 + i % 50, 'a' || i, $2, ARRAY[i], ARRAY[1] FROM generate_series(1, 5000) i`, ids["busy.fifo"], now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, s, []planStep{
		{"receive where retention expired 10,000", receiveSQL, []any{enginetest.Account, "old", now, 10, nil, s.channel, int64(maxLongPoll)}},
		{"change visibility on a FIFO queue", changeSQL, []any{enginetest.Account, "q.fifo", []int64{ids["q.fifo"]}, []int64{1}, []int32{1},
			[]int64{0}, now, int64(engine.MaxVisibility), s.channel, int64(maxLongPoll)}},
	}, "messages", "message_bodies", "fifo_attempts")
}

// A statement's plan follows the size of the tables when it runs, not when
// the connection first ran it. Receives and deletes run six times on a
// queue whose tables were vacuumed empty (PostgreSQL then keeps a generic
// plan, made for empty tables, unless the connection plans each
// execution), then 20,000 messages arrive: the seventh receive and delete
// walk messages_next and read by key, as the plans made for them would.
func TestPlansFollowTheTablesSize(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	createQueue(t, s, "q")
	qid := queueID(t, s, "q")
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE messages, message_bodies"); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	simple := pgx.QueryExecModeSimpleProtocol
	for _, p := range []string{
		"PREPARE r (text, text, int8, int4, int8, text, int8) AS " + receiveSQL,
		"PREPARE d (text, text, int8[], int8[], int4[], int8) AS " + deleteSQL,
	} {
		if _, err := conn.Exec(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	now := s.now()
	receive := []any{simple, enginetest.Account, "q", now, 10, nil, s.channel, int64(maxLongPoll)}
	del := []any{simple, enginetest.Account, "q", []int64{qid}, []int64{1}, []int32{1}, now}
	for range 6 {
		if _, err := conn.Exec(ctx, "EXECUTE r ($1, $2, $3, $4, $5, $6, $7)", receive...); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "EXECUTE d ($1, $2, $3, $4, $5, $6)", del...); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys)
			SELECT nextval('message_seq'), 'x', '', '', '', '', '', '' FROM generate_series(1, 20000)
			RETURNING id
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns)
		SELECT $1, id, id, 'm' || id, $2::int8, $2::int8, $2::int8 FROM b`, qid, now)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := s.pool.QueryRow(ctx, "SELECT max(seq) FROM messages WHERE queue_id = $1", qid).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	del[4] = []int64{seq}
	for _, st := range []struct {
		what string
		sql  string
		args []any
	}{
		{"receive", "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE r ($1, $2, $3, $4, $5, $6, $7)", receive},
		{"delete", "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE d ($1, $2, $3, $4, $5, $6)", del},
	} {
		rows, err := conn.Query(ctx, st.sql, st.args...)
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		plan := strings.Join(lines, "\n")
		t.Logf("%s:\n%s", st.what, plan)
		for _, l := range lines {
			if strings.Contains(l, "Seq Scan on message") || removedMany(l) {
				t.Errorf("%s reads the table whole (%s):\n%s", st.what, strings.TrimSpace(l), plan)
			}
		}
	}
}

// removedMany reports a plan line of a filter that threw away 1,000 rows
// or more: an index walked end to end, or a join that read every row.
func removedMany(line string) bool {
	_, n, ok := strings.Cut(line, "Rows Removed by ")
	if !ok {
		return false
	}
	_, n, _ = strings.Cut(n, ": ")
	v, err := strconv.Atoi(strings.TrimSpace(n))
	return err == nil && v >= 1000
}
