package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	// They are in both slots, as rotations leave them.
	_, err := s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
			SELECT n, 'x', '', CASE WHEN q = $3 THEN 'g' || (i % $4::int8) ELSE '' END, '', '', '', '', n % 2
			FROM (SELECT nextval('message_seq') AS n, * FROM (SELECT $3::int8 AS q, i FROM generate_series(0, $4::int8 * $5::int8 - 1) i
				UNION ALL SELECT $6::int8, i FROM generate_series(0, 40000) i ORDER BY 1, 2) g) g
			RETURNING id, group_id, slot
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, group_id, dedup_id, slot)
		SELECT CASE WHEN group_id = '' THEN $6 ELSE $3 END, id, id, 'm' || id, $1::int8, $2::int8, $1::int8, group_id, 'd' || id, slot FROM b`,
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
		{"take", fifoTakeSQL, []any{acct, name, now, 10, vis, "", s.channel, nil, false}},
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
// one of tables whole. It returns the plans, in the order of the steps.
func checkPlans(t *testing.T, s *Store, steps []planStep, tables ...string) []string {
	t.Helper()
	ctx := context.Background()
	var plans []string
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
			plans = append(plans, plan)
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
	return plans
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
	// 40,000 fresh ones of "other", in both slots.
	_, err := s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
			SELECT n, 'x', '', '', '', '', '', '', (n / 7) % 2 FROM (SELECT nextval('message_seq') AS n FROM generate_series(1, 50000)) g
			RETURNING id, slot
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, slot)
		SELECT CASE WHEN id % 5 = 0 THEN $1::int8 ELSE $2::int8 END, id, id, 'm' || id,
			CASE WHEN id % 5 = 0 THEN $3::int8 - 5 * 86400000000000 ELSE $3::int8 END, $3::int8, $3::int8, slot FROM b`,
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
		{"receive where retention expired 10,000", receiveSQL, []any{enginetest.Account, "old", now, 10, nil, s.channel, int64(maxLongPoll), nil, false}},
		{"change visibility on a FIFO queue", changeSQL, []any{enginetest.Account, "q.fifo", []int64{ids["q.fifo"]}, []int64{1}, []int32{1},
			[]int64{0}, now, int64(engine.MaxVisibility), s.channel, int64(maxLongPoll), []*string{nil}}},
	}, "messages", "message_bodies", "fifo_attempts")
}

// The standard statements walk indexes of both slots, on 10 queues of
// 5,000 messages spread over the two slots as rotations leave them (10 of
// queue q07's in flight): the receive a Merge Append of the slots'
// messages_next, the delete and the visibility change a probe of each
// slot's primary key. The plans are logged (go test -v -run
// TestStandardPlans) for docs/postgres.md.
func TestStandardPlans(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	for i := range 10 {
		createQueue(t, s, fmt.Sprintf("q%02d", i))
	}
	now := s.now()
	_, err := s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
			SELECT n, convert_to(repeat('x', 200), 'UTF8'), '', '', '', '', '', '', (n / 100) % 2
			FROM (SELECT nextval('message_seq') AS n FROM generate_series(1, 50000)) g
			RETURNING id, slot
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, slot)
		SELECT q.id, b.id, b.id, 'm' || b.id, $1::int8, $1::int8, $1::int8, b.slot
		FROM b JOIN queues q ON q.name = 'q' || lpad((b.id % 10)::text, 2, '0')`, now)
	if err != nil {
		t.Fatal(err)
	}
	var qid int64
	var seqs []int64
	err = s.pool.QueryRow(ctx, `
		WITH f AS (
			UPDATE messages m SET gen = 1, receive_count = 1, visible_ns = $1::int8 + 30000000000, received_ns = $1
			WHERE (m.queue_id, m.seq) IN (SELECT queue_id, seq FROM messages
				WHERE queue_id = (SELECT id FROM queues WHERE name = 'q07') ORDER BY seq DESC LIMIT 10)
			RETURNING m.queue_id, m.seq
		)
		SELECT min(queue_id), array_agg(seq) FROM f`, now).Scan(&qid, &seqs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	qids := make([]int64, len(seqs))
	gens := make([]int32, len(seqs))
	timeouts := make([]int64, len(seqs))
	for i := range seqs {
		qids[i], gens[i], timeouts[i] = qid, 1, int64(time.Minute)
	}
	msgs := make([]engine.NewMessage, 10)
	for i := range msgs {
		msgs[i].Body = strings.Repeat("y", 200)
	}
	sendArgs, _, err := s.sendArgs(enginetest.Account, "q07", msgs, now)
	if err != nil {
		t.Fatal(err)
	}
	acct := enginetest.Account
	checkPlans(t, s, []planStep{
		{"send", sendSQL, sendArgs},
		{"receive", receiveSQL, []any{acct, "q07", now, 10, nil, s.channel, int64(maxLongPoll), nil, false}},
		{"change visibility", changeSQL, []any{acct, "q07", qids, seqs, gens, timeouts, now, int64(engine.MaxVisibility), s.channel, int64(maxLongPoll), make([]*string, len(seqs))}},
		{"delete", deleteSQL, []any{acct, "q07", qids, seqs, gens, now}},
	}, "messages", "message_bodies")
}

// A publish to an SNS FIFO topic takes its numbers and claims its keys by
// key, and the janitor sweeps expired keys along their index: neither
// scans the keys of 50 topics (50,000 keys, a tenth of them expired) nor
// the 50 topics' sequences whole.
func TestSequencePlans(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	now := clk.Now()
	_, err := s.pool.Exec(ctx, `
		INSERT INTO sequences (name, last) SELECT 'topic' || t, $1::int8 * 1000000::numeric FROM generate_series(0, 49) t;
	`, now.UnixMicro())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO sequence_keys (name, key, message_id, number, expires_ns)
		SELECT 'topic' || (i % 50), 'key' || i, 'm' || i, i, CASE WHEN i % 10 = 0 THEN $1::int8 - 1 ELSE $1::int8 + 60000000000 END
		FROM generate_series(0, 49999) i`, now.UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	keys, ids := []string{"key7", "key10", "new"}, []string{"a", "b", "c"}
	checkPlans(t, s, []planStep{
		{"sequence", sequenceSQL, []any{"topic7", keys, ids, now.UnixMicro(), len(keys),
			now.Add(engine.DeduplicationWindow).UnixNano(), now.UnixNano()}},
		{"sweep expired keys", sweepSequenceKeysSQL, []any{janitorBatch, now.UnixNano()}},
	}, "sequence_keys", "sequences")
}

// A generic plan does not outlive the size of the tables it was made for.
// The hot statements run six times on one connection while the tables are
// vacuumed empty, so that PostgreSQL keeps generic plans made for empty
// tables; then each of three queues (standard, FIFO of 5,000 groups, and a
// dead-letter queue a move task redrives) gets 10,000 messages. The plans
// kept then scan the tables (the test fails if none does: it would show
// nothing). Once analyzeGrown has run, the generic plan of every
// statement, made again, walks the indexes and reads no table whole (go
// test -v logs the plans). Autovacuum is off for the tables, so that only
// analyzeGrown changes their statistics.
func TestPlansFollowTheTablesSize(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := freshSchema(t).openWith(t, Options{Clock: clk, statsEvery: -1})
	ctx := context.Background()
	createQueue(t, s, "q")
	createQueue(t, s, "dlq")
	createFIFOQueue(t, s, "q.fifo")
	qid, dlq, fid := queueID(t, s, "q"), queueID(t, s, "dlq"), queueID(t, s, "q.fifo")
	// The message tables' leaves, where the rows are: slot 0 is current
	// in a new schema, and slot 1 stays empty.
	hot := []string{"fifo_dedup", "fifo_groups", "message_bodies_0", "messages_0"}
	for _, table := range hot {
		if _, err := s.pool.Exec(ctx, "ALTER TABLE "+table+" SET (autovacuum_enabled = off)"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE "+strings.Join(hot, ", ")+", messages_1, message_bodies_1"); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	acct, now := enginetest.Account, s.now()
	fifoMsgs := make([]engine.NewMessage, 10)
	for i := range fifoMsgs {
		fifoMsgs[i] = engine.NewMessage{Body: "x", MessageGroupID: "g" + strconv.Itoa(i), DeduplicationID: "fresh" + strconv.Itoa(i)}
	}
	// A send to no queue writes nothing, so the tables stay empty.
	p, err := s.prepareSend(acct, "none.fifo", fifoMsgs, now)
	if err != nil {
		t.Fatal(err)
	}
	fifoSend, fifoSendArgs := p.statement(true)
	var vis *int64
	// The handles name messages the fill writes: the last of each queue.
	hq, hs := []int64{qid}, []int64{10000}
	fq, fs := []int64{fid}, []int64{20000}
	ds := []int64{30000}
	steps := []planStep{
		{"receive", receiveSQL, []any{acct, "q", now, 10, vis, s.channel, int64(maxLongPoll), nil, false}},
		{"delete", deleteSQL, []any{acct, "q", hq, hs, []int32{0}, now}},
		{"change visibility", changeSQL, []any{acct, "q", hq, hs, []int32{0}, []int64{0}, now,
			int64(engine.MaxVisibility), s.channel, int64(maxLongPoll), make([]*string, len(hs))}},
		{"FIFO send", fifoSend, fifoSendArgs},
		{"FIFO: lock the ready groups", lockReadySQL, []any{acct, "q.fifo", now, 10}},
		{"FIFO: take", fifoTakeSQL, []any{acct, "q.fifo", now, 10, vis, "", s.channel, nil, false}},
		{"FIFO: refresh the groups", refreshSQL, s.refreshArgs(acct, "q.fifo", now)},
		{"FIFO: lock a delete's groups", lockHandledSQL, []any{acct, "q.fifo", fq, fs}},
		{"FIFO: delete", deleteSQL, []any{acct, "q.fifo", fq, fs, []int32{0}, now}},
		{"redrive: the messages to move", moveCandidatesSQL, []any{dlq, false, now, int64(4 * 24 * time.Hour), []int64(nil), 10, ""}},
		{"redrive: move", stepMoveSQL, []any{dlq, ds, []int64{qid}, []string{"new"}, now, "no task", s.channel, int64(maxLongPoll)}},
	}
	for i, st := range steps {
		if _, err := conn.Conn().Prepare(ctx, "p"+strconv.Itoa(i), st.sql); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
	}
	// Six executions on the empty tables: PostgreSQL keeps a generic plan
	// after five when it costs no more than theirs. (A round is one
	// transaction, as a FIFO receive's statements are.)
	for range 6 {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for i, st := range steps {
				if _, err := tx.Exec(ctx, "p"+strconv.Itoa(i), st.args...); err != nil {
					return fmt.Errorf("%s: %w", st.what, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// 10,000 messages in each queue, in that order (the handles' seqs);
	// the FIFO queue's in 5,000 groups of 2, with their rows and keys.
	_, err = conn.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys)
			SELECT i, 'x', '', CASE WHEN i > 10000 AND i <= 20000 THEN 'g' || i % 5000 ELSE '' END, '', '', '', ''
			FROM generate_series(1, 30000) i
			RETURNING id, group_id
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, group_id, dedup_id, dlq_source_arn)
		SELECT CASE WHEN id <= 10000 THEN $1::int8 WHEN id <= 20000 THEN $2::int8 ELSE $3::int8 END, id, id, 'm' || id, $4::int8, $4::int8, $4::int8,
			group_id, CASE WHEN group_id <> '' THEN 'd' || id ELSE '' END, CASE WHEN id > 20000 THEN $5 ELSE '' END
		FROM b`, qid, fid, dlq, now, enginetest.ARN("q"))
	if err == nil {
		_, err = conn.Exec(ctx, `SELECT setval('message_seq', 30000)`)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `
			INSERT INTO fifo_groups (queue_id, group_id, head_seq, ready_ns)
			SELECT queue_id, group_id, min(seq), min(visible_ns) FROM messages WHERE queue_id = $1 GROUP BY queue_id, group_id`, fid)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `
			INSERT INTO fifo_dedup (queue_id, key, message_id, seq, sent_ns)
			SELECT queue_id, 'q:' || dedup_id, message_id, seq, $2::int8 FROM messages WHERE queue_id = $1`, fid, now)
	}
	if err == nil {
		// This connection reports what it wrote to the statistics now, not
		// within the second or so it otherwise may take.
		_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	}
	if err != nil {
		t.Fatal(err)
	}

	// explain answers the plan lines of the statements that read a table
	// whole, with plan_cache_mode set to mode; run, if analyze, in a
	// transaction it rolls back.
	explain := func(mode string, analyze bool) (whole []string) {
		t.Helper()
		options := "COSTS OFF"
		if analyze {
			options += ", ANALYZE, TIMING OFF, SUMMARY OFF"
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
				return err
			}
			for i, st := range steps {
				params := make([]string, len(st.args))
				for k := range params {
					params[k] = "$" + strconv.Itoa(k+1)
				}
				sql := "EXPLAIN (" + options + ") EXECUTE p" + strconv.Itoa(i) + " (" + strings.Join(params, ", ") + ")"
				rows, err := tx.Query(ctx, sql, append([]any{pgx.QueryExecModeSimpleProtocol}, st.args...)...)
				if err != nil {
					return fmt.Errorf("%s: %w", st.what, err)
				}
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return fmt.Errorf("%s: %w", st.what, err)
				}
				t.Logf("%s (%s):\n%s", st.what, mode, strings.Join(lines, "\n"))
				for _, l := range lines {
					if readsWhole(l) {
						whole = append(whole, st.what+": "+strings.TrimSpace(l))
					}
				}
			}
			return errRollback
		})
		if err != errRollback {
			t.Fatal(err)
		}
		return whole
	}
	// The plans kept, not run: they would read the tables whole, many
	// times over.
	if stale := explain("auto", false); len(stale) == 0 {
		t.Fatal("the plans made for the empty tables scan none of them once filled: the test shows nothing")
	} else {
		t.Logf("before analyzeGrown, the plans kept scan tables:\n%s", strings.Join(stale, "\n"))
	}

	analyzed, err := s.analyzeGrown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The leaves' partitioned parents are analyzed, which analyzes them.
	want := make([]string, len(hot))
	for i, table := range hot {
		want[i] = s.schema + "." + strings.TrimSuffix(table, "_0")
	}
	if !slices.Equal(analyzed, want) {
		t.Errorf("analyzed %v, want %v", analyzed, want)
	}
	if again, err := s.analyzeGrown(ctx); err != nil || len(again) > 0 {
		t.Errorf("a second look analyzed %v, %v; want nothing", again, err)
	}
	// The generic plans, made again, are what any later execution may use.
	if whole := explain("force_generic_plan", true); len(whole) > 0 {
		t.Errorf("after analyzeGrown the plans still read tables whole:\n%s", strings.Join(whole, "\n"))
	}
}

// readsWhole reports a plan line that reads one of the message tables
// whole, or a filter that threw away 1,000 rows or more: an index walked
// end to end, or a join that read every row.
func readsWhole(line string) bool {
	for _, table := range []string{"messages", "message_bodies", "fifo_groups", "fifo_dedup"} {
		if strings.Contains(line, "Seq Scan on "+table+" ") || strings.HasSuffix(line, "Seq Scan on "+table) {
			return true
		}
	}
	return removedMany(line)
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
