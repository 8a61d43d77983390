package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

func TestRotationDue(t *testing.T) {
	o := rotationOptions{}.withDefaults()
	long := vacuumState{sinceRotation: time.Hour}
	with := func(v vacuumState, f func(*vacuumState)) vacuumState { f(&v); return v }
	for _, tc := range []struct {
		what string
		v    vacuumState
		want bool
	}{
		{"nothing held, few dead rows", with(long, func(v *vacuumState) { v.dead = [2]int64{500, 500} }), false},
		{"held, few dead rows", with(long, func(v *vacuumState) { v.heldFor, v.dead = time.Hour, [2]int64{500, 500} }), false},
		{"held, dead rows", with(long, func(v *vacuumState) { v.heldFor, v.dead = 2*time.Minute, [2]int64{20000, 0} }), true},
		{"held briefly", with(long, func(v *vacuumState) { v.heldFor, v.dead = 30*time.Second, [2]int64{20000, 0} }), false},
		{"rotated just now", vacuumState{sinceRotation: time.Second, heldFor: time.Hour, dead: [2]int64{1e6, 0}}, false},
		{"held, more rows to move than dead", with(long, func(v *vacuumState) {
			v.heldFor, v.dead, v.slot, v.live = time.Hour, [2]int64{20000, 20000}, 0, [2]int64{0, 50000}
		}), false},
		{"held, the current slot's rows do not count", with(long, func(v *vacuumState) {
			v.heldFor, v.dead, v.slot, v.live = time.Hour, [2]int64{20000, 20000}, 1, [2]int64{50000, 0}
		}), false},
		{"nothing held, dead rows beyond the limit", with(long, func(v *vacuumState) { v.dead = [2]int64{150000, 60000} }), true},
		{"nothing held, dead rows under the limit", with(long, func(v *vacuumState) { v.dead = [2]int64{150000, 0} }), false},
	} {
		if got, why := o.due(tc.v); got != tc.want {
			t.Errorf("%s: due = %v (%q), want %v", tc.what, got, why, tc.want)
		}
	}
}

// holdSnapshot opens a REPEATABLE READ transaction on a connection of its
// own and takes its snapshot, reading only queues (as another
// application's report would read its own tables); it ends with the test.
func holdSnapshot(t *testing.T, ts testSchema) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ts.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	var n int
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{ts.name, "queues"}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
}

// messageBytes is the size of the message tables with their indexes.
func messageBytes(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	err := s.pool.QueryRow(context.Background(), `SELECT sum(pg_total_relation_size(c.oid))::int8 FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace
			AND c.relname IN ('messages_0', 'messages_1', 'message_bodies_0', 'message_bodies_1')`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sendBodies(t *testing.T, s *Store, queue string, msgs ...engine.NewMessage) {
	t.Helper()
	for len(msgs) > 0 {
		n := min(len(msgs), 10)
		if _, err := s.Send(context.Background(), enginetest.Account, queue, msgs[:n]); err != nil {
			t.Fatalf("send to %s: %v", queue, err)
		}
		msgs = msgs[n:]
	}
}

func bodies(prefix string, n int, f func(i int, m *engine.NewMessage)) []engine.NewMessage {
	ms := make([]engine.NewMessage, n)
	for i := range ms {
		ms[i].Body = prefix + strconv.Itoa(i)
		if f != nil {
			f(i, &ms[i])
		}
	}
	return ms
}

func receive(t *testing.T, s *Store, queue string, max int) []engine.Message {
	t.Helper()
	got, err := s.Receive(context.Background(), enginetest.Account, queue, engine.ReceiveRequest{Max: max})
	if err != nil {
		t.Fatalf("receive from %s: %v", queue, err)
	}
	return got
}

func deleteAll(t *testing.T, s *Store, queue string, ms []engine.Message) {
	t.Helper()
	hs := make([]string, len(ms))
	for i, m := range ms {
		hs[i] = m.ReceiptHandle
	}
	errs, err := s.Delete(context.Background(), enginetest.Account, queue, hs)
	if err != nil {
		t.Fatalf("delete from %s: %v", queue, err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("delete %s from %s: %v", ms[i].Body, queue, e)
		}
	}
}

func bodiesOf(ms []engine.Message) []string {
	var bs []string
	for _, m := range ms {
		bs = append(bs, m.Body)
	}
	return bs
}

// Under a snapshot held all along, a steady send, receive and delete load
// grows the message tables by what it consumes until rotations start; from
// then on they stay within what two rotations leave, while a backlog,
// messages in flight (whose receipt handles keep working), delayed
// messages and FIFO groups move from slot to slot and all survive.
func TestRotationUnderHeldSnapshot(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	s := ts.open(t, clk)
	ctx := context.Background()
	for _, q := range []string{"load", "backlog", "flight", "delayed"} {
		createQueue(t, s, q)
	}
	createFIFOQueue(t, s, "q.fifo")

	sendBodies(t, s, "backlog", bodies("b", 300, nil)...)
	sendBodies(t, s, "flight", bodies("f", 30, nil)...)
	var flight []engine.Message
	for len(flight) < 30 {
		flight = append(flight, receive(t, s, "flight", 10)...)
	}
	delay := 10 * time.Minute
	sendBodies(t, s, "delayed", bodies("d", 20, func(_ int, m *engine.NewMessage) { m.Delay = &delay })...)
	sendBodies(t, s, "q.fifo", bodies("g", 40, func(i int, m *engine.NewMessage) {
		m.MessageGroupID, m.DeduplicationID = "g"+strconv.Itoa(i%4), m.Body
	})...)
	// The head of each group is in flight.
	fifoFlight := receive(t, s, "q.fifo", 4)
	if len(fifoFlight) == 0 {
		t.Fatal("no FIFO message received")
	}

	holdSnapshot(t, ts)
	const perRound = 200
	round := func(r int) {
		sendBodies(t, s, "load", bodies(fmt.Sprintf("r%d-", r), perRound, nil)...)
		got := 0
		for got < perRound {
			ms := receive(t, s, "load", 10)
			if len(ms) == 0 {
				t.Fatalf("round %d: %d of %d received, then nothing", r, got, perRound)
			}
			deleteAll(t, s, "load", ms)
			got += len(ms)
		}
	}
	var sizes []int64
	const before, rotating = 4, 10
	for r := range before {
		round(r)
		sizes = append(sizes, messageBytes(t, s))
	}
	if sizes[before-1] <= sizes[0] {
		t.Fatalf("the message tables did not grow under the held snapshot: %v", sizes)
	}
	grown := sizes[before-1]
	for r := before; r < before+rotating; r++ {
		round(r)
		res, err := s.rotate(ctx, 50)
		if err != nil || !res.done {
			t.Fatalf("rotation %d: %+v, %v", r-before+1, res, err)
		}
		sizes = append(sizes, messageBytes(t, s))
	}
	t.Logf("sizes of the message tables, bytes, round by round (rotations from round %d): %v", before+1, sizes)
	// Bounded: the last rounds hold no more than the rounds before the
	// rotations had made, nor more than the first rounds of rotation.
	late := slices.Max(sizes[len(sizes)-4:])
	if early := slices.Max(sizes[before+1 : before+4]); late > grown || late > early+early/4 {
		t.Errorf("the message tables grew under rotation: %d bytes at the end, %d before rotating, %d early on", late, grown, early)
	}
	var rotations int64
	if err := s.pool.QueryRow(ctx, `SELECT rotations FROM message_slots`).Scan(&rotations); err != nil || rotations != rotating {
		t.Errorf("message_slots counts %d rotations (%v), want %d", rotations, err, rotating)
	}

	// Everything survived, once.
	var backlog []string
	for {
		ms := receive(t, s, "backlog", 10)
		if len(ms) == 0 {
			break
		}
		backlog = append(backlog, bodiesOf(ms)...)
	}
	if want := bodiesOf(messagesOf(bodies("b", 300, nil))); !slices.Equal(backlog, want) {
		t.Errorf("backlog received %d messages: %v", len(backlog), backlog)
	}
	// The in-flight messages' handles still work.
	changes := make([]engine.VisibilityChange, 10)
	for i := range changes {
		changes[i] = engine.VisibilityChange{ReceiptHandle: flight[i].ReceiptHandle, Timeout: time.Hour}
	}
	if errs, err := s.ChangeVisibility(ctx, enginetest.Account, "flight", changes); err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("change visibility with handles from before the rotations: %v %v", errs, err)
	}
	deleteAll(t, s, "flight", flight)
	if st, err := s.Stats(ctx, enginetest.Account, "flight"); err != nil || st.Visible+st.NotVisible+st.Delayed != 0 {
		t.Fatalf("flight after its deletes: %+v %v", st, err)
	}
	deleteAll(t, s, "q.fifo", fifoFlight)
	clk.Advance(delay)
	var delayed []string
	for {
		ms := receive(t, s, "delayed", 10)
		if len(ms) == 0 {
			break
		}
		delayed = append(delayed, bodiesOf(ms)...)
	}
	if len(delayed) != 20 {
		t.Errorf("delayed: %d received: %v", len(delayed), delayed)
	}
	seen := map[string][]string{}
	for _, m := range fifoFlight {
		seen[m.MessageGroupID] = append(seen[m.MessageGroupID], m.Body)
	}
	for {
		ms := receive(t, s, "q.fifo", 10)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			seen[m.MessageGroupID] = append(seen[m.MessageGroupID], m.Body)
		}
		deleteAll(t, s, "q.fifo", ms)
	}
	for g := range 4 {
		var want []string
		for i := g; i < 40; i += 4 {
			want = append(want, "g"+strconv.Itoa(i))
		}
		if got := seen["g"+strconv.Itoa(g)]; !slices.Equal(got, want) {
			t.Errorf("FIFO group g%d: %v, want %v", g, got, want)
		}
	}
}

func messagesOf(ns []engine.NewMessage) []engine.Message {
	ms := make([]engine.Message, len(ns))
	for i, n := range ns {
		ms[i].Body = n.Body
	}
	return ms
}

// Receives, visibility changes and deletes on several goroutines while
// rotations move their messages from slot to slot: each message is handed
// out once (the clock stands still, so no visibility runs out), every
// delete succeeds, FIFO groups keep their order, and nothing is left.
func TestRotationRace(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	s := ts.open(t, clk)
	ctx := context.Background()
	createQueue(t, s, "std")
	createFIFOQueue(t, s, "q.fifo")
	const nStd, nFIFO, groups = 3000, 600, 20
	sendBodies(t, s, "std", bodies("s", nStd, nil)...)
	sendBodies(t, s, "q.fifo", bodies("f", nFIFO, func(i int, m *engine.NewMessage) {
		m.MessageGroupID, m.DeduplicationID = "g"+strconv.Itoa(i%groups), m.Body
	})...)

	var (
		mu     sync.Mutex
		got    = map[string]int{}
		order  = map[string][]int{}
		failed error
	)
	fail := func(err error) {
		mu.Lock()
		if failed == nil {
			failed = err
		}
		mu.Unlock()
	}
	worker := func(queue string, left func() bool) {
		for left() {
			ms, err := s.Receive(ctx, enginetest.Account, queue, engine.ReceiveRequest{Max: 10})
			if err != nil {
				fail(fmt.Errorf("receive from %s: %w", queue, err))
				return
			}
			if len(ms) == 0 {
				continue
			}
			// Noted before the delete, which lets the group's next
			// messages go to another worker.
			mu.Lock()
			for _, m := range ms {
				got[m.Body]++
				if m.MessageGroupID != "" {
					i, _ := strconv.Atoi(m.Body[1:])
					order[m.MessageGroupID] = append(order[m.MessageGroupID], i)
				}
			}
			mu.Unlock()
			hs := make([]string, len(ms))
			changes := make([]engine.VisibilityChange, len(ms))
			for i, m := range ms {
				hs[i] = m.ReceiptHandle
				changes[i] = engine.VisibilityChange{ReceiptHandle: m.ReceiptHandle, Timeout: time.Hour}
			}
			errs, err := s.ChangeVisibility(ctx, enginetest.Account, queue, changes)
			if err == nil {
				for _, e := range errs {
					err = cmpNil(err, e)
				}
			}
			if err != nil {
				fail(fmt.Errorf("change visibility in %s: %w", queue, err))
				return
			}
			errs, err = s.Delete(ctx, enginetest.Account, queue, hs)
			if err == nil {
				for _, e := range errs {
					err = cmpNil(err, e)
				}
			}
			if err != nil {
				fail(fmt.Errorf("delete from %s: %w", queue, err))
				return
			}
		}
	}
	left := func(prefix string, n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			if failed != nil {
				return false
			}
			c := 0
			for b := range got {
				if b[:1] == prefix {
					c++
				}
			}
			return c < n
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(2)
		go func() { defer wg.Done(); worker("std", left("s", nStd)) }()
		go func() { defer wg.Done(); worker("q.fifo", left("f", nFIFO)) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var (
		rotations int
		moved     int64
	)
rotating:
	for {
		select {
		case <-done:
			break rotating
		default:
		}
		r, err := s.rotate(ctx, 100)
		if err != nil {
			t.Fatalf("rotate: %v", err)
		}
		moved += r.moved
		if r.done {
			rotations++
		}
	}
	<-done
	if failed != nil {
		t.Fatal(failed)
	}
	t.Logf("%d rotations moved %d rows under the load", rotations, moved)
	if rotations < 2 || moved == 0 {
		t.Fatalf("%d rotations moved %d rows: the load did not race them", rotations, moved)
	}
	for b, n := range got {
		if n != 1 {
			t.Errorf("%s handed out %d times", b, n)
		}
	}
	if len(got) != nStd+nFIFO {
		t.Errorf("%d messages handed out, want %d", len(got), nStd+nFIFO)
	}
	for g, seqs := range order {
		if !slices.IsSorted(seqs) {
			t.Errorf("group %s out of order: %v", g, seqs)
		}
	}
	for _, q := range []string{"std", "q.fifo"} {
		if st, err := s.Stats(ctx, enginetest.Account, q); err != nil || st.Visible+st.NotVisible+st.Delayed != 0 {
			t.Errorf("%s after the load: %+v %v", q, st, err)
		}
	}
}

func cmpNil(err, e error) error {
	if err != nil {
		return err
	}
	return e
}

// Migration 0009 keeps the messages stored before it (slot 0), which are
// then received, deleted and rotated as any other.
func TestMigrationKeepsMessages(t *testing.T) {
	ts := freshSchema(t)
	ctx := context.Background()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return m.version == 9 })
	pool, err := pgxpool.New(ctx, ts.url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool, ts.name, ms[:i]); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(enginetest.Start)
	now := clk.Now().UnixNano()
	_, err = pool.Exec(ctx, `SET search_path TO `+pgx.Identifier{ts.name}.Sanitize()+`;
		INSERT INTO queues (account, name, arn, attributes, tags, created_ns, modified_ns, visibility_ns, delay_ns,
			retention_ns, receive_wait_ns, maximum_size, fifo, dedup_scope, redrive_account, redrive_name, redrive_max)
		VALUES ('`+enginetest.Account+`', 'old', '`+enginetest.ARN("old")+`', '{}', '{}', 0, 0, 30000000000, 0,
			345600000000000, 0, 262144, false, '', '', '', 0);
		INSERT INTO message_bodies (id, body, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys)
			SELECT nextval('message_seq'), convert_to('m' || i, 'UTF8'), '', '', '', '', '', '' FROM generate_series(1, 50) i;
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns)
			SELECT 1, id, id, 'id' || id, `+strconv.FormatInt(now, 10)+`, 0, 0 FROM message_bodies;
		RESET search_path`)
	if err != nil {
		t.Fatal(err)
	}
	s := ts.open(t, clk)
	// The migration counted the messages there were.
	if st, err := s.Stats(ctx, enginetest.Account, "old"); err != nil || st.Visible != 50 {
		t.Fatalf("stats after the migration: %+v, %v; want 50 visible", st, err)
	}
	var got []engine.Message
	for {
		m := receive(t, s, "old", 10)
		if len(m) == 0 {
			break
		}
		got = append(got, m...)
	}
	if want := bodiesOf(messagesOf(bodies("m", 51, nil)[1:])); !slices.Equal(bodiesOf(got), want) {
		t.Fatalf("received %v, want %v", bodiesOf(got), want)
	}
	// Handed out from slot 0, moved by a rotation to slot 1, deleted there.
	if r, err := s.rotate(ctx, 7); err != nil || !r.done || r.moved != 0 {
		t.Fatalf("first rotation: %+v %v", r, err)
	}
	if r, err := s.rotate(ctx, 7); err != nil || !r.done || r.moved != 100 {
		t.Fatalf("second rotation: %+v %v, want 100 rows moved", r, err)
	}
	// A rotation moves rows and counts none of them.
	if st, err := s.Stats(ctx, enginetest.Account, "old"); err != nil || st.NotVisible != 50 || st.Visible != 0 {
		t.Fatalf("stats after the rotations: %+v, %v; want 50 in flight", st, err)
	}
	deleteAll(t, s, "old", got)
	if st, err := s.Stats(ctx, enginetest.Account, "old"); err != nil || st != (engine.Stats{}) {
		t.Fatalf("stats after the deletes: %+v, %v; want none", st, err)
	}
	var left int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM message_bodies)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left (%v)", left, err)
	}
}

// A node samples what holds vacuum back: the held snapshot shows in
// /metrics and, once held long enough, in health; and the node holding the
// lease rotates by itself while it lasts, as dead rows come.
func TestVacuumWatch(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	s := ts.openWith(t, Options{Clock: clk, rotation: rotationOptions{
		every: 20 * time.Millisecond, period: 200 * time.Millisecond, warnAfter: 300 * time.Millisecond, minDead: 1,
	}})
	ctx := context.Background()
	createQueue(t, s, "q")
	holdSnapshot(t, ts)
	testwait.Eventually(t, "health to say vacuum is held back", func() bool {
		return strings.Contains(s.Degraded(), "vacuum held back for") && strings.Contains(s.Degraded(), "pid ")
	})
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "ferry_store_oldest_transaction_seconds" {
			found = true
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v < 0.3 {
				t.Errorf("oldest transaction %v s old, want at least 0.3", v)
			}
		}
	}
	if !found {
		t.Error("no ferry_store_oldest_transaction_seconds")
	}
	testwait.Eventually(t, "two rotations", func() bool {
		sendBodies(t, s, "q", bodies("m", 10, nil)...)
		deleteAll(t, s, "q", receive(t, s, "q", 10))
		var n int64
		if err := s.pool.QueryRow(ctx, `SELECT rotations FROM message_slots`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n >= 2 && s.vacuum.get().rotations >= 2
	})
}
