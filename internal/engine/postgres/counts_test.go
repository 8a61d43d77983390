package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// countedStats is what Stats answers, counted over the queue's messages.
func countedStats(t *testing.T, s *Store, queue string) engine.Stats {
	t.Helper()
	var st engine.Stats
	err := s.pool.QueryRow(context.Background(), `
		SELECT
			count(m.seq) FILTER (WHERE m.visible_ns <= $3),
			count(m.seq) FILTER (WHERE m.visible_ns > $3 AND m.gen > 0),
			count(m.seq) FILTER (WHERE m.visible_ns > $3 AND m.gen = 0),
			count(DISTINCT m.group_id) FILTER (WHERE m.visible_ns > $3 AND m.gen > 0 AND m.group_id <> '')
		FROM queues q LEFT JOIN messages m ON m.queue_id = q.id AND m.sent_ns > $3 - q.retention_ns
		WHERE q.account = $1 AND q.name = $2 AND q.deleted_ns IS NULL
		GROUP BY q.id`, enginetest.Account, queue, s.now()).
		Scan(&st.Visible, &st.NotVisible, &st.Delayed, &st.GroupsInFlight)
	if err != nil {
		t.Fatalf("count %s: %v", queue, err)
	}
	return st
}

func checkStats(t *testing.T, s *Store, step string, queues ...string) {
	t.Helper()
	for _, q := range queues {
		st, err := s.Stats(context.Background(), enginetest.Account, q)
		if err != nil {
			t.Fatalf("%s: stats of %s: %v", step, q, err)
		}
		st.OldestAt = time.Time{}
		if want := countedStats(t, s, q); st != want {
			t.Fatalf("%s: stats of %s %+v, counted %+v", step, q, st, want)
		}
	}
}

// Stats follows every way messages come and go: sends (delayed or not),
// receives, visibility changes, deletes, redrives, purges, expiry.
func TestStatsAgreeWithCount(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	create := func(name string, mod func(*engine.QueueSettings)) {
		st := enginetest.Settings()
		st.Retention = time.Hour
		if mod != nil {
			mod(&st)
		}
		if _, _, err := s.CreateQueue(ctx, engine.Queue{Account: enginetest.Account, Name: name, ARN: enginetest.ARN(name), Settings: st}); err != nil {
			t.Fatal(err)
		}
	}
	create("dlq", nil)
	create("src", func(st *engine.QueueSettings) {
		st.Redrive = &engine.Redrive{TargetAccount: enginetest.Account, TargetName: "dlq", MaxReceiveCount: 2}
	})
	create("q.fifo", func(st *engine.QueueSettings) { st.FIFO = true })
	queues := []string{"src", "dlq", "q.fifo"}
	rng := rand.New(rand.NewPCG(1, 2))
	var held []engine.Message // received from src, not deleted
	receiveMaybeDelete := func(queue string) {
		got := receive(t, s, queue, 1+rng.IntN(10))
		if rng.IntN(2) == 0 {
			deleteAll(t, s, queue, got)
		}
	}
	for step := 0; step < 300; step++ {
		var what string
		switch op := rng.IntN(10); op {
		case 0, 1:
			what = "send"
			ms := bodies("m", 1+rng.IntN(10), func(i int, m *engine.NewMessage) {
				if rng.IntN(3) == 0 {
					d := time.Duration(rng.IntN(60)) * time.Second
					m.Delay = &d
				}
			})
			sendBodies(t, s, "src", ms...)
		case 2:
			what = "send fifo"
			ms := bodies("f", 1+rng.IntN(5), func(i int, m *engine.NewMessage) {
				*m = enginetest.Msg("g"+strconv.Itoa(rng.IntN(3)), m.Body+strconv.Itoa(step))
			})
			if _, err := s.Send(ctx, enginetest.Account, "q.fifo", ms); err != nil {
				t.Fatal(err)
			}
		case 3, 4:
			what = "receive"
			held = append(held, receive(t, s, "src", 1+rng.IntN(10))...)
		case 5:
			what = "receive fifo"
			receiveMaybeDelete("q.fifo")
		case 6:
			what = "delete"
			n := rng.IntN(len(held) + 1)
			hs := make([]string, n)
			for i := range hs {
				hs[i] = held[i].ReceiptHandle
			}
			// Some handles are stale (their message received again or
			// moved): those fail and delete nothing.
			if _, err := s.Delete(ctx, enginetest.Account, "src", hs); err != nil {
				t.Fatal(err)
			}
			held = held[n:]
		case 7:
			what = "receive dlq"
			receiveMaybeDelete("dlq")
		case 8:
			what = "clock"
			clk.Advance(time.Duration(rng.IntN(20)) * time.Minute)
		case 9:
			what = "purge"
			if rng.IntN(4) == 0 {
				q := queues[rng.IntN(len(queues))]
				if err := s.Purge(ctx, enginetest.Account, q); err != nil && !errors.Is(err, engine.ErrPurgeInProgress) {
					t.Fatal(err)
				}
			}
		}
		checkStats(t, s, "step "+strconv.Itoa(step)+" ("+what+")", queues...)
	}
	// A move task takes what the dead-letter queue holds back to src;
	// peeked messages deleted by ref leave too.
	clk.Advance(time.Hour - time.Minute)
	sendBodies(t, s, "src", bodies("last", 20, nil)...)
	for i := 0; i < 10; i++ {
		receive(t, s, "src", 10)
		clk.Advance(time.Minute)
	}
	page, err := s.Peek(ctx, enginetest.Account, "dlq", engine.PeekRequest{Limit: 3})
	if err != nil || len(page.Messages) == 0 {
		t.Fatalf("peek dlq: %+v, %v", page, err)
	}
	if _, err := s.DeleteRefs(ctx, enginetest.Account, "dlq", []string{page.Messages[0].Ref}); err != nil {
		t.Fatal(err)
	}
	checkStats(t, s, "delete by ref", queues...)
	if _, err := s.StartMoveTask(ctx, engine.MoveTask{SourceAccount: enginetest.Account, SourceName: "dlq"}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the move task to end", func() bool {
		ts, err := s.ListMoveTasks(ctx, enginetest.Account, "dlq")
		return err == nil && len(ts) == 1 && ts[0].Status == engine.MoveTaskCompleted
	})
	if st := countedStats(t, s, "dlq"); st.Visible != 0 {
		t.Fatalf("dlq after the move: %+v", st)
	}
	checkStats(t, s, "after the move task", queues...)
}

// Senders, receivers and deleters at once leave counts that agree.
func TestCountsUnderConcurrency(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	createQueue(t, s, "q")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := s.Send(ctx, enginetest.Account, "q", bodies("c", 5, nil)); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				got, err := s.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 7})
				if err != nil {
					errs <- err
					return
				}
				hs := make([]string, len(got))
				for j, m := range got {
					hs[j] = m.ReceiptHandle
				}
				if _, err := s.Delete(ctx, enginetest.Account, "q", hs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkStats(t, s, "after the workers", "q")
}

// A queue's many expired messages are not counted, before retention
// deletes them and after.
func TestStatsManyExpired(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	st := enginetest.Settings()
	st.Retention = time.Minute
	if _, _, err := s.CreateQueue(ctx, engine.Queue{Account: enginetest.Account, Name: "q", Settings: st}); err != nil {
		t.Fatal(err)
	}
	sendBodies(t, s, "q", bodies("old", 200, nil)...)
	clk.Advance(30 * time.Second)
	sendBodies(t, s, "q", bodies("new", 3, nil)...)
	checkStats(t, s, "before expiry", "q")
	clk.Advance(45 * time.Second)
	if got, err := s.Stats(ctx, enginetest.Account, "q"); err != nil || got.Visible != 3 {
		t.Fatalf("stats with 200 expired: %+v, %v; want 3 visible", got, err)
	}
	checkStats(t, s, "expired, not deleted", "q")
	receive(t, s, "q", 1) // deletes what retention expired
	checkStats(t, s, "expired, deleted", "q")
}

// The janitor, and the more frequent fold, fold each queue's count rows
// into one, keeping their sum, and drop those of a deleted queue.
func TestCountsFold(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := freshSchema(t).openWith(t, Options{Clock: clk, foldEvery: -1})
	ctx := context.Background()
	createQueue(t, s, "a")
	createQueue(t, s, "b")
	for i := 0; i < 5; i++ {
		sendBodies(t, s, "a", bodies("a", 3, nil)...)
		sendBodies(t, s, "b", bodies("b", 2, nil)...)
	}
	deleteAll(t, s, "a", receive(t, s, "a", 4))
	rows := func() (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM message_counts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 11 {
		t.Fatalf("%d count rows before the fold, want 11", n)
	}
	if err := s.foldCounts(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d count rows after the fold, want 2", n)
	}
	checkStats(t, s, "after the fold", "a", "b")
	for q, want := range map[string]int64{"a": 11, "b": 10} {
		if st, err := s.Stats(ctx, enginetest.Account, q); err != nil || st.Visible+st.NotVisible != want {
			t.Fatalf("%s after the fold: %+v, %v; want %d", q, st, err, want)
		}
	}
	if err := s.DeleteQueue(ctx, enginetest.Account, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Fatalf("%d count rows after b's deletion and a fold, want 1", n)
	}
}
