package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

func arn(name string) string { return enginetest.ARN(name) }

func redriveTo(dlq string, max int) engine.QueueSettings {
	s := settings()
	s.Retention = 14 * 24 * time.Hour
	s.Redrive = &engine.Redrive{TargetAccount: acct, TargetName: dlq, MaxReceiveCount: max}
	return s
}

func sendBodies(t testing.TB, e *Engine, name string, n int) {
	t.Helper()
	for i := 0; i < n; i += 10 {
		msgs := make([]engine.NewMessage, 0, 10)
		for j := i; j < min(i+10, n); j++ {
			msgs = append(msgs, engine.NewMessage{Body: fmt.Sprint("m-", j)})
		}
		if _, err := e.Send(context.Background(), acct, name, msgs); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
}

func taskOf(t testing.TB, e *Engine, source, id string) engine.MoveTask {
	t.Helper()
	ts, err := e.ListMoveTasks(context.Background(), acct, source)
	if err != nil {
		t.Fatalf("ListMoveTasks: %v", err)
	}
	for _, mt := range ts {
		if mt.ID == id {
			return mt
		}
	}
	t.Fatalf("no task %s", id)
	return engine.MoveTask{}
}

func waitTask(t testing.TB, e *Engine, source, id string, cond func(engine.MoveTask) bool) engine.MoveTask {
	t.Helper()
	var mt engine.MoveTask
	testwait.Eventually(t, "task "+id, func() bool {
		mt = taskOf(t, e, source, id)
		return cond(mt)
	})
	return mt
}

// The account's place a RUNNING task holds is held again when it resumes
// after a restart, and given back when it ends. (The conformance suite
// checks the resumed task itself.)
func TestResumedTaskHoldsItsPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	for _, name := range []string{"dlq", "dst", "other"} {
		mustCreate(t, e, engine.Queue{Name: name, ARN: arn(name), Settings: settings()})
	}
	sendBodies(t, e, "dlq", 25)
	mustSend(t, e, "other", engine.NewMessage{Body: "x"})
	started, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: acct, SourceName: "dlq", DestinationARN: arn("dst"), MaxPerSecond: 10})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, e, "dlq", started.ID, func(mt engine.MoveTask) bool { return mt.Moved == 10 })
	e = reopen(t, e, dir, clk)
	e.maxActive = 1
	other := engine.MoveTask{SourceAccount: acct, SourceName: "other", DestinationARN: arn("dst")}
	if _, err := e.StartMoveTask(ctx, other); !errors.Is(err, engine.ErrMoveTaskLimit) {
		t.Fatalf("task beyond the limit after restart: %v", err)
	}
	// It resumes with a second of its own: ten more now, the last five a
	// second later.
	waitTask(t, e, "dlq", started.ID, func(mt engine.MoveTask) bool { return mt.Moved == 20 })
	clk.Advance(time.Second)
	waitTask(t, e, "dlq", started.ID, func(mt engine.MoveTask) bool { return mt.Status == engine.MoveTaskCompleted })
	if _, err := e.StartMoveTask(ctx, other); err != nil {
		t.Fatalf("task after the resumed one ended: %v", err)
	}
}

// rawUpdateTask rewrites the one task record of a closed store.
func rawUpdateTask(t *testing.T, dir string, fn func(*engine.MoveTask)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: newPebbleLogger(slog.New(slog.DiscardHandler), clock.Real{})})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTask}, UpperBound: []byte{prefixTask + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("no task record")
	}
	k := append([]byte(nil), it.Key()...)
	mt, err := decodeTask(it.Value())
	if err != nil {
		t.Fatal(err)
	}
	if it.Next() {
		t.Fatal("more than one task record")
	}
	_ = it.Close()
	fn(&mt)
	if err := db.Set(k, encodeTask(nil, &mt), pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// A task left CANCELLING by a stop between batches ends CANCELLED at the
// next open, with its count as it was.
func TestMoveTaskCancellingAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "dlq", ARN: arn("dlq"), Settings: settings()})
	mustCreate(t, e, engine.Queue{Name: "dst", ARN: arn("dst"), Settings: settings()})
	sendBodies(t, e, "dlq", 5)
	started, err := e.StartMoveTask(context.Background(), engine.MoveTask{SourceAccount: acct, SourceName: "dlq", DestinationARN: arn("dst"), MaxPerSecond: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, e, "dlq", started.ID, func(mt engine.MoveTask) bool { return mt.Moved == 1 })
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdateTask(t, dir, func(mt *engine.MoveTask) { mt.Status = engine.MoveTaskCancelling })
	e = openTest(t, Options{Dir: dir, Clock: clk})
	if mt := taskOf(t, e, "dlq", started.ID); mt.Status != engine.MoveTaskCancelled || mt.Moved != 1 {
		t.Fatalf("after restart: %+v", mt)
	}
	clk.Advance(10 * time.Second)
	if s := mustStats(t, e, "dlq"); s.Visible != 4 {
		t.Fatalf("source %+v", s)
	}
	e = reopen(t, e, dir, clk)
	if mt := taskOf(t, e, "dlq", started.ID); mt.Status != engine.MoveTaskCancelled {
		t.Fatalf("after a second restart: %+v", mt)
	}
	// The place it held is free again.
	if _, err := e.StartMoveTask(context.Background(), engine.MoveTask{SourceAccount: acct, SourceName: "dlq", DestinationARN: arn("dst")}); err != nil {
		t.Fatal(err)
	}
}

func countTaskRecords(t *testing.T, e *Engine) int {
	t.Helper()
	n := 0
	if err := e.scan([]byte{prefixTask}, []byte{prefixTask + 1}, func(*pebble.Iterator) (bool, error) {
		n++
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A deleted source takes its task records along; stray records of unknown
// queues are removed at startup.
func TestMoveTaskRecordsGoWithTheQueue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "dlq", ARN: arn("dlq"), Settings: settings()})
	mustCreate(t, e, engine.Queue{Name: "dst", ARN: arn("dst"), Settings: settings()})
	sendBodies(t, e, "dlq", 3)
	started, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: acct, SourceName: "dlq", DestinationARN: arn("dst"), MaxPerSecond: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, e, "dlq", started.ID, func(mt engine.MoveTask) bool { return mt.Moved == 1 })
	if err := e.DeleteQueue(ctx, acct, "dlq"); err != nil {
		t.Fatal(err)
	}
	// The runner ends and gives the account's place back.
	testwait.Eventually(t, "the account's place back", func() bool {
		e.taskMu.Lock()
		defer e.taskMu.Unlock()
		return e.active[acct] == 0
	})
	if n := countTaskRecords(t, e); n != 0 {
		t.Fatalf("%d task records after the delete", n)
	}
	if err := e.db.Set(taskKey(1<<62, 1), encodeTask(nil, &engine.MoveTask{ID: "stray", Status: engine.MoveTaskRunning}), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	e = reopen(t, e, dir, clk)
	if n := countTaskRecords(t, e); n != 0 {
		t.Fatalf("%d task records after restart", n)
	}
	if s := mustStats(t, e, "dst"); s.Visible != 1 {
		t.Fatalf("destination %+v", s)
	}
}

// Dead-letter moves racing purges and deletes of either queue: the indexes
// and the store agree, no message is in two queues, and a restart changes
// nothing.
func TestRedriveRacingPurgeAndDelete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	zero := time.Duration(0)
	for round := range 30 {
		src, dlq := fmt.Sprint("src-", round), fmt.Sprint("dlq-", round)
		mustCreate(t, e, engine.Queue{Name: dlq, ARN: arn(dlq), Settings: settings()})
		mustCreate(t, e, engine.Queue{Name: src, ARN: arn(src), Settings: redriveTo(dlq, 1)})
		sendBodies(t, e, src, 40)
		// Each message received once: the next receive of it moves it.
		for range 4 {
			if got := mustReceive(t, e, src, engine.ReceiveRequest{Visibility: &zero}); len(got) != 10 {
				t.Fatalf("received %d", len(got))
			}
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					if _, err := e.Receive(ctx, acct, src, engine.ReceiveRequest{Max: 10}); err != nil && !errors.Is(err, engine.ErrQueueNotFound) {
						t.Errorf("receive: %v", err)
					}
				}
			}()
		}
		var err error
		switch round % 4 {
		case 0:
			err = e.Purge(ctx, acct, src)
		case 1:
			err = e.Purge(ctx, acct, dlq)
		case 2:
			err = e.DeleteQueue(ctx, acct, dlq)
		case 3:
			err = e.DeleteQueue(ctx, acct, src)
		}
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	check := func() map[string]int {
		checkIndexes(t, e)
		qs, err := e.ListQueues(ctx, acct, "")
		if err != nil {
			t.Fatal(err)
		}
		where := map[string]string{}
		counts := map[string]int{}
		for _, q := range qs {
			for id := range storedMessageIDs(t, e, q.Name) {
				if o, ok := where[id]; ok {
					t.Fatalf("message %s in %s and %s", id, o, q.Name)
				}
				where[id] = q.Name
				counts[q.Name]++
			}
		}
		return counts
	}
	before := check()
	e = reopen(t, e, dir, clk)
	after := check()
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("counts before restart %v, after %v", before, after)
	}
}

// BenchmarkMoveTask: one move task without a rate limit, on disk with
// fsync; each op is one message moved.
func BenchmarkMoveTask(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	fill := openTest(b, Options{Dir: dir, NoSync: true})
	for _, name := range []string{"dlq", "dst"} {
		if _, _, err := fill.CreateQueue(ctx, engine.Queue{Account: acct, Name: name, ARN: arn(name), Settings: settings()}); err != nil {
			b.Fatal(err)
		}
	}
	msgs := benchBatch()
	for i := 0; i < b.N; i += len(msgs) {
		if _, err := fill.Send(ctx, acct, "dlq", msgs[:min(len(msgs), b.N-i)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := fill.Close(); err != nil {
		b.Fatal(err)
	}
	e := openTest(b, Options{Dir: dir})
	// The last move is told as it is durable: the clock stops there.
	var moved atomic.Int64
	done := make(chan struct{})
	e.OnMovedByTask(func(string, string, *engine.NewMessage) {
		if moved.Add(1) == int64(b.N) {
			close(done)
		}
	})
	b.ResetTimer()
	mt, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: acct, SourceName: "dlq", DestinationARN: arn("dst")})
	if err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	end := waitTask(b, e, "dlq", mt.ID, func(t engine.MoveTask) bool { return !t.Status.Active() })
	if end.Status != engine.MoveTaskCompleted || end.Moved != int64(b.N) {
		b.Fatalf("ended %+v, want %d moved", end, b.N)
	}
	b.ReportMetric(float64(mt.ToMove)/b.Elapsed().Seconds(), "msgs/s")
}
