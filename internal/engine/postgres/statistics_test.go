package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// A node analyzes by itself the tables that grew past their statistics:
// messages_0, vacuumed empty and then filled with 2,000 rows, has them in
// pg_class soon after (autovacuum is off for it, so only the node does),
// and so has its partitioned parent messages, which autovacuum never
// analyzes and the planner reads for every statement on messages.
func TestStatisticsFollowGrowth(t *testing.T) {
	ts := freshSchema(t)
	s := ts.openWith(t, Options{Clock: clock.NewFake(enginetest.Start), statsEvery: 10 * time.Millisecond})
	ctx := context.Background()
	createQueue(t, s, "q")
	qid := queueID(t, s, "q")
	for _, sql := range []string{
		// messages_0: the current slot's leaf, where the rows go.
		"ALTER TABLE messages_0 SET (autovacuum_enabled = off)",
		"VACUUM ANALYZE messages_0",
	} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	reltuples := func(table string) float64 {
		var n float64
		if err := s.pool.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = $1::regclass", table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := reltuples("messages"); n >= 1000 {
		t.Fatalf("reltuples of messages = %v before the fill", n)
	}
	if n := reltuples("messages_0"); n != 0 {
		t.Fatalf("reltuples = %v after VACUUM of the empty table", n)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	_, err = conn.Exec(ctx, `
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns)
		SELECT $1, i, i, 'm' || i, 0, 0, 0 FROM generate_series(1, 2000) i`, qid)
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	}
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "messages analyzed", func() bool { return reltuples("messages_0") == 2000 && reltuples("messages") == 2000 })
}

// A move task's step over a source of 50,000 messages, once the statistics
// pass has run, is one transaction of 5 statements (begin, the task, the
// candidates with their destinations, the move, commit), and its move is
// planned for the tables as they are and never JIT compiled: a compile
// costs tens of milliseconds at every execution, a hundred times the
// statement itself.
func TestMoveStepCostFollowsTheStep(t *testing.T) {
	var count stepStatements
	s := freshSchema(t).openWith(t, Options{Clock: clock.NewFake(enginetest.Start), statsEvery: -1, HoldMoveTasks: true, trace: &count})
	ctx := context.Background()
	createQueue(t, s, "dlq")
	createQueue(t, s, "q")
	fillQueue(t, s, "dlq", 50000, false)
	if _, err := s.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	// The leaves' counts reach the cumulative statistics within a second.
	testwait.Eventually(t, "the statistics pass analyzes messages", func() bool {
		tables, err := s.analyzeGrown(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(tables, func(table string) bool { return strings.HasPrefix(table, s.schema+".messages") })
	})
	var seqs []int64
	if err := s.pool.QueryRow(ctx, `SELECT array_agg(seq) FROM (SELECT seq FROM messages WHERE queue_id = $1 ORDER BY seq LIMIT 10) m`,
		queueID(t, s, "dlq")).Scan(&seqs); err != nil {
		t.Fatal(err)
	}
	dests, ids := make([]int64, len(seqs)), make([]string, len(seqs))
	for i := range seqs {
		dests[i], ids[i] = queueID(t, s, "q"), "new"+strconv.Itoa(i)
	}
	// EXPLAIN runs on a transaction rolled back, as the step's would be.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var plan string
		err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+stepMoveSQL,
			queueID(t, s, "dlq"), seqs, dests, ids, s.now(), "no task", s.channel, int64(maxLongPoll)).Scan(&plan)
		if err != nil {
			return err
		}
		if strings.Contains(plan, `"JIT"`) {
			t.Errorf("the step's move is JIT compiled:\n%s", plan)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}

	// The node holds its tasks: the test runs the steps.
	task, err := s.StartMoveTask(ctx, engine.MoveTask{SourceAccount: enginetest.Account, SourceName: "dlq",
		DestinationARN: enginetest.ARN("q")})
	if err != nil {
		t.Fatal(err)
	}
	run := runTask{MoveTask: task, sourceID: queueID(t, s, "dlq")}
	for i := range 5 {
		before := count.n.Load()
		n, done, err := s.tasks.step(context.WithValue(ctx, stepStatements{}, true), run, moveBatch)
		if err != nil || done || n != moveBatch {
			t.Fatalf("step %d: %d moved, done %v, %v", i, n, done, err)
		}
		if got := count.n.Load() - before; got > 5 {
			t.Errorf("step %d: %d statements, want 5 at most", i, got)
		}
	}
}

// stepStatements counts the statements made with a context that carries
// it as a key.
type stepStatements struct{ n atomic.Int64 }

func (c *stepStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(stepStatements{}) != nil {
		c.n.Add(1)
	}
	return ctx
}

func (*stepStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
