package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/engine/handle"
	"github.com/ferrymq/ferry/internal/testwait"
)

func createQueue(t *testing.T, s *Store, name string) {
	t.Helper()
	q := engine.Queue{Account: enginetest.Account, Name: name, ARN: enginetest.ARN(name), Settings: enginetest.Settings()}
	if _, _, err := s.CreateQueue(context.Background(), q); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
}

// startLongPoll starts a long poll for one message on s and returns once
// it waits.
func startLongPoll(t *testing.T, s *Store, clk *clock.Fake, queue string) <-chan []engine.Message {
	t.Helper()
	ch := make(chan []engine.Message, 1)
	before := clk.Pending()
	go func() {
		msgs, err := s.Receive(context.Background(), enginetest.Account, queue, engine.ReceiveRequest{Max: 1, Wait: 20 * time.Second})
		if err != nil {
			t.Errorf("receive: %v", err)
		}
		ch <- msgs
	}()
	testwait.Pending(t, clk, before+1)
	return ch
}

// Nodes starting together on an empty schema migrate it once.
func TestMigrateConcurrently(t *testing.T) {
	ts := freshSchema(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(context.Background(), Options{URL: ts.url, Schema: ts.name, MaxConns: 2})
		}()
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		t.Cleanup(func() { _ = s.Close() })
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	rows, err := stores[0].pool.Query(context.Background(), "SELECT version FROM schema_version")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if last := ms[len(ms)-1].version; !slices.Equal(versions, []int{last}) {
		t.Fatalf("schema_version holds %v, want [%d]", versions, last)
	}
	// Every node signs with the one shared key.
	r := handle.Receipt{Queue: 1, Seq: 2, Gen: 3}
	if got, ok := stores[3].signer.Parse(stores[0].signer.Sign(r)); !ok || got != r {
		t.Fatal("the nodes have different receipt-handle keys")
	}
}

// A schema migrated by a newer Ferry is refused, saying why.
func TestSchemaTooNew(t *testing.T) {
	ts := freshSchema(t)
	s := ts.open(t, clock.Real{})
	if _, err := s.pool.Exec(context.Background(), "UPDATE schema_version SET version = 999"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{URL: ts.url, Schema: ts.name})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "version 999") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

func TestMigrationsNumbered(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].version != 1 {
		t.Fatalf("migrations: %+v", ms)
	}
}

// twoNodes opens two stores on a new schema, on one fake clock, with a
// queue "q" of Account.
func twoNodes(t *testing.T) (a, b *Store, clk *clock.Fake) {
	t.Helper()
	ts := freshSchema(t)
	clk = clock.NewFake(enginetest.Start)
	a, b = ts.open(t, clk), ts.open(t, clk)
	createQueue(t, a, "q")
	return a, b, clk
}

// Two stores on one schema are two nodes of one broker: a message sent
// through one is received through the other, a long poll on one is woken
// by a send through the other, and handles work on either.
func TestTwoNodes(t *testing.T) {
	a, b, clk := twoNodes(t)
	ctx := context.Background()

	ch := startLongPoll(t, b, clk, "q")
	res, err := a.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	got := testwait.Receive(t, "the long poll on b to be woken by the send on a", ch)
	if len(got) != 1 || got[0].MessageID != res[0].MessageID || got[0].Body != "hello" {
		t.Fatalf("b received %+v", got)
	}
	errs, err := a.Delete(ctx, enginetest.Account, "q", []string{got[0].ReceiptHandle})
	if err != nil || errs[0] != nil {
		t.Fatalf("delete on a with b's handle: %v %v", errs, err)
	}
	if st, err := b.Stats(ctx, enginetest.Account, "q"); err != nil || st != (engine.Stats{}) {
		t.Fatalf("stats on b: %+v, %v", st, err)
	}
}

// What a store wrote is there for the next store on the schema.
func TestReopen(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	s := ts.open(t, clk)
	ctx := context.Background()
	createQueue(t, s, "q")
	if _, err := s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: "kept"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRecord(ctx, "topic", "t1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = ts.open(t, clk)
	msgs, err := s.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 10})
	if err != nil || len(msgs) != 1 || msgs[0].Body != "kept" {
		t.Fatalf("after reopen: %+v, %v", msgs, err)
	}
	recs, err := s.Records(ctx, "topic")
	if err != nil || len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("records after reopen: %+v, %v", recs, err)
	}
}

func TestRecords(t *testing.T) {
	s := openFresh(t, clock.Real{})
	ctx := context.Background()
	for _, op := range []struct {
		kind, key, value string
		del              bool
	}{
		{kind: "topic", key: "b", value: "1"},
		{kind: "topic", key: "a", value: "2"},
		{kind: "topic", key: "B", value: "3"},
		{kind: "sub", key: "a", value: "4"},
		{kind: "topic", key: "b", value: "5"},
		{kind: "topic", key: "a", del: true},
		{kind: "topic", key: "missing", del: true},
	} {
		var err error
		if op.del {
			err = s.DeleteRecord(ctx, op.kind, op.key)
		} else {
			err = s.PutRecord(ctx, op.kind, op.key, []byte(op.value))
		}
		if err != nil {
			t.Fatalf("%+v: %v", op, err)
		}
	}
	for kind, want := range map[string][]string{"topic": {"B=3", "b=5"}, "sub": {"a=4"}, "none": nil} {
		recs, err := s.Records(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Key+"="+string(r.Value))
		}
		if !slices.Equal(got, want) {
			t.Errorf("Records(%s) = %v, want %v", kind, got, want)
		}
	}
}

func TestMetricPoints(t *testing.T) {
	s := openFresh(t, clock.Real{})
	ctx := context.Background()
	p := func(minute int64, queue string, sum float64) engine.MetricPoint {
		return engine.MetricPoint{Namespace: "AWS/SQS", Metric: "NumberOfMessagesSent", DimName: "QueueName",
			DimValue: queue, Minute: minute, Sum: sum, Count: 1, Min: sum, Max: sum}
	}
	// A later point of a series' minute replaces the earlier, within a
	// batch too.
	if err := s.PutMetricPoints(ctx, []engine.MetricPoint{p(10, "a", 1), p(11, "a", 2), p(10, "b", 3), p(10, "a", 4)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMetricPoints(ctx, []engine.MetricPoint{p(12, "a", 5), p(11, "a", 6)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, deleteBefore int64
		want               []engine.MetricPoint
	}{
		{from: 0, want: []engine.MetricPoint{p(10, "a", 4), p(10, "b", 3), p(11, "a", 6), p(12, "a", 5)}},
		{from: 11, want: []engine.MetricPoint{p(11, "a", 6), p(12, "a", 5)}},
		{from: 0, deleteBefore: 12, want: []engine.MetricPoint{p(12, "a", 5)}},
	} {
		if tc.deleteBefore > 0 {
			if err := s.DeleteMetricPointsBefore(ctx, tc.deleteBefore); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.MetricPoints(ctx, tc.from)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("MetricPoints(%d) after deleting before %d = %+v, want %+v", tc.from, tc.deleteBefore, got, tc.want)
		}
	}
}

func TestMonitor(t *testing.T) {
	s := openFresh(t, clock.Real{})
	if r := s.Refusing(); r != "" {
		t.Errorf("Refusing() = %q", r)
	}
	if r := s.Unreachable(context.Background()); r != "" {
		t.Errorf("Unreachable() = %q", r)
	}
	if !s.Durable() {
		t.Error("not durable")
	}
	ch := make(chan prometheus.Metric, 16)
	s.Collector().Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		if !strings.HasPrefix(m.Desc().String(), `Desc{fqName: "ferry_store_`) {
			t.Errorf("metric %s", m.Desc())
		}
		n++
	}
	if n == 0 {
		t.Error("the collector collected nothing")
	}
}

// A long poll outlives the loss of the node's listening connection: the
// hub reconnects and wakes its waiters, whose receive finds what was sent
// meanwhile.
func TestListenerReconnects(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	ctx := context.Background()
	createQueue(t, s, "q")
	ch := startLongPoll(t, s, clk, "q")
	var killed bool
	err := s.pool.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query = 'LISTEN ' || quote_ident($1)`, s.channel).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminate the listening connection: %v, %v", killed, err)
	}
	if _, err := s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: "a"}}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Receive(t, "the long poll to be woken after the listening connection was lost", ch); len(got) != 1 || got[0].Body != "a" {
		t.Fatalf("received %+v", got)
	}
	testwait.Eventually(t, "the store to listen again", func() bool { return s.Unreachable(ctx) == "" })
}

// A move task carries on on another node when the node running it stops:
// at once after a Close, which gives its leases up, and once its lease has
// run out when it stops without a word. Every message moves exactly once,
// and the hook of the node that moved it hears of it.
func TestMoveTaskTakeover(t *testing.T) {
	for _, tc := range []struct{ crash, refs bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		crash := tc.crash
		t.Run(fmt.Sprintf("crash=%v,refs=%v", tc.crash, tc.refs), func(t *testing.T) {
			ts := freshSchema(t)
			clk := clock.NewFake(enginetest.Start)
			short := leaseTimes{hold: 300 * time.Millisecond, renew: 20 * time.Millisecond}
			a := ts.openWith(t, Options{Clock: clk, leases: short})
			b := ts.openWith(t, Options{Clock: clk, leases: short})
			var (
				mu   sync.Mutex
				told = map[string]int{}
			)
			hook := func(_, queue string, m *engine.NewMessage) {
				mu.Lock()
				defer mu.Unlock()
				told[queue+"/"+m.Body]++
			}
			a.OnMovedByTask(hook)
			b.OnMovedByTask(hook)
			ctx := context.Background()
			createQueue(t, a, "dlq")
			createQueue(t, a, "dst")
			const n = 5
			for i := range n {
				if _, err := a.Send(ctx, enginetest.Account, "dlq", []engine.NewMessage{{Body: fmt.Sprint(i)}}); err != nil {
					t.Fatal(err)
				}
			}
			// A task limited to refs moves the even ones, which b must
			// know of when it takes the task over.
			want := []string{"0", "1", "2", "3", "4"}
			var refs []string
			if tc.refs {
				page, err := a.Peek(ctx, enginetest.Account, "dlq", engine.PeekRequest{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range page.Messages {
					if m.Body == "0" || m.Body == "2" || m.Body == "4" {
						refs = append(refs, m.Ref)
					}
				}
				want = []string{"0", "2", "4"}
			}
			task, err := a.StartMoveTask(ctx, engine.MoveTask{SourceAccount: enginetest.Account, SourceName: "dlq",
				DestinationARN: enginetest.ARN("dst"), MaxPerSecond: 1, Refs: refs})
			if err != nil {
				t.Fatal(err)
			}
			state := func() engine.MoveTask {
				ts, err := b.ListMoveTasks(ctx, enginetest.Account, "dlq")
				if err != nil || len(ts) != 1 {
					t.Fatalf("ListMoveTasks: %+v, %v", ts, err)
				}
				return ts[0]
			}
			testwait.Eventually(t, "a to move the first message", func() bool { return state().Moved == 1 })
			if crash {
				a.tasks.stop(false)
			} else if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			// b takes over; every look lets one more second pass.
			testwait.Eventually(t, "b to finish the task", func() bool {
				clk.Advance(time.Second)
				return state().Status == engine.MoveTaskCompleted
			})
			if got := state(); got.ID != task.ID || got.Moved != int64(len(want)) || !slices.Equal(got.Refs, refs) {
				t.Fatalf("task ended %+v", got)
			}
			msgs, err := b.Receive(ctx, enginetest.Account, "dst", engine.ReceiveRequest{Max: 10})
			if err != nil {
				t.Fatal(err)
			}
			var bodies []string
			for _, m := range msgs {
				bodies = append(bodies, m.Body)
			}
			slices.Sort(bodies)
			if !slices.Equal(bodies, want) {
				t.Fatalf("dst holds %v, want %v once each", bodies, want)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, body := range bodies {
				if told["dst/"+body] != 1 {
					t.Errorf("the hooks heard of %s %d times", body, told["dst/"+body])
				}
			}
		})
	}
}

// The janitor's lease is one node's at a time, and a sweep leaves nothing
// behind that no call would remove, and nothing a call still needs.
func TestJanitor(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	a, b := ts.open(t, clk), ts.open(t, clk)
	ctx := context.Background()
	for i, s := range []*Store{a, b, a} {
		held, err := s.takeLease(ctx, "janitor", time.Minute)
		if err != nil || held != (s == a) {
			t.Fatalf("take %d: held %v, %v", i, held, err)
		}
	}

	short := engine.Queue{Account: enginetest.Account, Name: "short", Settings: enginetest.Settings()}
	short.Settings.Retention = time.Minute
	fifo := engine.Queue{Account: enginetest.Account, Name: "q.fifo", Settings: enginetest.Settings()}
	fifo.Settings.FIFO = true
	for _, q := range []engine.Queue{short, fifo} {
		if _, _, err := a.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	createQueue(t, a, "gone")
	send := func(queue string, msgs ...engine.NewMessage) {
		t.Helper()
		if _, err := a.Send(ctx, enginetest.Account, queue, msgs); err != nil {
			t.Fatal(err)
		}
	}
	send("short", engine.NewMessage{Body: "old"})
	send("gone", engine.NewMessage{Body: "x"})
	send("q.fifo", enginetest.Msg("g", "a"))
	got, err := a.Receive(ctx, enginetest.Account, "q.fifo", engine.ReceiveRequest{Max: 1, AttemptID: "att"})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %v, %v", got, err)
	}
	if errs, err := a.Delete(ctx, enginetest.Account, "q.fifo", []string{got[0].ReceiptHandle}); err != nil || errs[0] != nil {
		t.Fatalf("delete: %v %v", errs, err)
	}
	if _, err := a.StartMoveTask(ctx, engine.MoveTask{SourceAccount: enginetest.Account, SourceName: "gone",
		DestinationARN: enginetest.ARN("short")}); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteQueue(ctx, enginetest.Account, "gone"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Minute)
	send("short", engine.NewMessage{Body: "fresh"})
	if err := a.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{
		"messages": 1, "message_bodies": 1, "queues": 2, "fifo_dedup": 0, "fifo_attempts": 0, "fifo_groups": 0, "move_tasks": 0,
	} {
		var n int
		if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s has %d rows after the sweep, want %d", table, n, want)
		}
	}
	if m, err := b.Receive(ctx, enginetest.Account, "short", engine.ReceiveRequest{Max: 10}); err != nil || len(m) != 1 || m[0].Body != "fresh" {
		t.Fatalf("after the sweep: %+v, %v", m, err)
	}
}

// A node's views of a queue follow changes made through any node: at once
// through itself, once the notification arrives through another.
func TestViewsFollowChanges(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	visibility := func(s *Store) time.Duration {
		q, err := s.ViewQueue(ctx, enginetest.Account, "q")
		if err != nil {
			t.Fatal(err)
		}
		return q.Settings.VisibilityTimeout
	}
	if v := visibility(a); v != 30*time.Second {
		t.Fatalf("visibility %v", v)
	}
	// The create's own notification may reach b after b's first look and
	// drop what that look kept.
	testwait.Eventually(t, "b to keep a view of the queue", func() bool {
		if v := visibility(b); v != 30*time.Second {
			t.Fatalf("visibility %v", v)
		}
		_, _, kept := b.views.get(viewKey(enginetest.Account, "q"))
		return kept
	})
	if err := a.UpdateQueue(ctx, enginetest.Account, "q", func(q *engine.Queue) error {
		q.Settings.VisibilityTimeout = time.Minute
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v := visibility(a); v != time.Minute {
		t.Fatalf("a's view after a's update: %v", v)
	}
	testwait.Eventually(t, "b's view to follow a's update", func() bool { return visibility(b) == time.Minute })
	if err := a.Purge(ctx, enginetest.Account, "q"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "b's view to follow a's purge", func() bool {
		q, err := b.ViewQueue(ctx, enginetest.Account, "q")
		return err == nil && q.LastPurge.Equal(enginetest.Start)
	})
	if err := a.DeleteQueue(ctx, enginetest.Account, "q"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "b's view to follow a's delete", func() bool {
		_, err := b.ViewQueue(ctx, enginetest.Account, "q")
		return errors.Is(err, engine.ErrQueueNotFound)
	})
}

// SendMany answers each part as Send would: standard and FIFO queues in
// one call, a missing queue failing its part only.
func TestSendMany(t *testing.T) {
	s := openFresh(t, clock.NewFake(enginetest.Start))
	ctx := context.Background()
	createQueue(t, s, "std")
	fifo := engine.Queue{Account: enginetest.Account, Name: "q.fifo", Settings: enginetest.Settings()}
	fifo.Settings.FIFO = true
	if _, _, err := s.CreateQueue(ctx, fifo); err != nil {
		t.Fatal(err)
	}
	out, err := s.SendMany(ctx, []engine.QueueSend{
		{Account: enginetest.Account, Name: "std", Msgs: []engine.NewMessage{{Body: "a"}, {Body: "b"}}},
		{Account: enginetest.Account, Name: "missing", Msgs: []engine.NewMessage{{Body: "x"}}},
		{Account: enginetest.Account, Name: "q.fifo", Msgs: []engine.NewMessage{enginetest.Msg("g", "f"), enginetest.Msg("g", "f")}},
	})
	if err != nil || len(out) != 3 {
		t.Fatalf("SendMany: %+v, %v", out, err)
	}
	if out[0].Err != nil || len(out[0].Results) != 2 || out[0].Results[0].SequenceNumber != "" {
		t.Errorf("standard part: %+v", out[0])
	}
	if !errors.Is(out[1].Err, engine.ErrQueueNotFound) {
		t.Errorf("missing part: %+v", out[1])
	}
	if r := out[2].Results; out[2].Err != nil || len(r) != 2 || r[0].Duplicate || !r[1].Duplicate || r[1].MessageID != r[0].MessageID {
		t.Errorf("FIFO part: %+v", out[2])
	}
	for queue, want := range map[string]int64{"std": 2, "q.fifo": 1} {
		st, err := s.Stats(ctx, enginetest.Account, queue)
		if err != nil || st.Visible != want {
			t.Errorf("%s: %+v, %v; want %d visible", queue, st, err, want)
		}
	}
}
