package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// A node analyzes by itself the tables that grew past their statistics:
// messages, vacuumed empty and then filled with 2,000 rows, has them in
// pg_class soon after (autovacuum is off for it, so only the node does).
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
	reltuples := func() float64 {
		var n float64
		if err := s.pool.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = 'messages_0'::regclass").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := reltuples(); n != 0 {
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
	testwait.Eventually(t, "messages analyzed", func() bool { return reltuples() == 2000 })
}
