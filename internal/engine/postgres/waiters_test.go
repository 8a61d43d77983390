package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// noteListener listens on a store's channel from a connection of its own.
type noteListener struct {
	t    *testing.T
	s    *Store
	conn *pgx.Conn
}

func listenNotes(t *testing.T, s *Store) *noteListener {
	t.Helper()
	conn, err := listen(context.Background(), s.pool.Config().ConnConfig, s.channel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return &noteListener{t: t, s: s, conn: conn}
}

// queueNotes sends a marker and returns the queue notes that arrived
// before it: notifications arrive in commit order, so every note of a
// statement committed before the marker is among them.
func (l *noteListener) queueNotes() []string {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(l.t.Context(), 30*time.Second)
	defer cancel()
	if _, err := l.s.pool.Exec(ctx, "SELECT pg_notify($1, 'marker')", l.s.channel); err != nil {
		l.t.Fatal(err)
	}
	var notes []string
	for {
		n, err := l.conn.WaitForNotification(ctx)
		if err != nil {
			l.t.Fatalf("waiting for the marker: %v", err)
		}
		switch {
		case n.Payload == "marker":
			return notes
		case strings.HasPrefix(n.Payload, "view:"), strings.HasPrefix(n.Payload, "rec:"):
		default:
			notes = append(notes, n.Payload)
		}
	}
}

func queueID(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	var id int64
	err := s.pool.QueryRow(context.Background(), "SELECT id FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL",
		enginetest.Account, name).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A send notifies only while some node has a long poll registered on the
// queue, and a registration that has lapsed (its node died) is not one.
func TestNotifyOnlyWaitedQueues(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	a, b := freshSchema(t), (*Store)(nil)
	sa := a.open(t, clk)
	b = a.open(t, clk)
	createQueue(t, sa, "q")
	createFIFOQueue(t, sa, "r.fifo")
	ctx := context.Background()
	l := listenNotes(t, sa)
	qid := queueID(t, sa, "q")
	send := func(queue string, body string) {
		t.Helper()
		m := engine.NewMessage{Body: body}
		if strings.HasSuffix(queue, ".fifo") {
			m.MessageGroupID, m.DeduplicationID = "g", body
		}
		if _, err := sa.Send(ctx, enginetest.Account, queue, []engine.NewMessage{m}); err != nil {
			t.Fatal(err)
		}
	}

	send("q", "unwaited")
	send("r.fifo", "unwaited")
	if notes := l.queueNotes(); len(notes) != 0 {
		t.Fatalf("sends to queues nobody waits on notified %q", notes)
	}
	if msgs, err := b.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 10}); err != nil || len(msgs) != 1 {
		t.Fatalf("receive = %+v, %v", msgs, err)
	}

	// A long poll on node b registers; a send on node a wakes it.
	ch := startLongPoll(t, b, clk, "q")
	send("q", "waited")
	if got := testwait.Receive(t, "the long poll to be woken", ch); len(got) != 1 || got[0].Body != "waited" {
		t.Fatalf("long poll = %+v", got)
	}
	if notes := l.queueNotes(); len(notes) != 1 || !strings.HasPrefix(notes[0], strconv.FormatInt(qid, 10)+":") {
		t.Fatalf("notes %q, want one for queue %d", notes, qid)
	}
	// The registration outlives the long poll (a consumer polls again).
	send("q", "between polls")
	if notes := l.queueNotes(); len(notes) != 1 {
		t.Fatalf("notes between polls %q", notes)
	}

	// Node b dies: its registration lapses, and sends stop notifying.
	if _, err := sa.pool.Exec(ctx, "UPDATE waiters SET until = now() - interval '1 second' WHERE node = $1", b.node); err != nil {
		t.Fatal(err)
	}
	send("q", "after b")
	if notes := l.queueNotes(); len(notes) != 0 {
		t.Fatalf("notes for a lapsed registration %q", notes)
	}
	// The janitor deletes it.
	if err := sa.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var left int64
	if err := sa.pool.QueryRow(ctx, "SELECT count(*) FROM waiters").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d registrations left after the sweep, %v", left, err)
	}
}

// A long poll that registers while a send is in flight (its statement
// done, its commit not yet) waits for that commit, and its look after
// registering finds the message: the send read the waiters before the
// registration existed and did not notify.
func TestRegisterWaitsForSendsInFlight(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	createQueue(t, s, "q")
	ctx := context.Background()
	qid := queueID(t, s, "q")

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	now := s.now()
	p, err := s.prepareSend(enginetest.Account, "q", []engine.NewMessage{{Body: "in flight"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if h := scanSendHead(tx.QueryRow(ctx, sendSQL, p.args...), false); h.err != nil {
		t.Fatal(h.err)
	}

	ch := make(chan []engine.Message, 1)
	go func() {
		msgs, err := s.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 1, Wait: 20 * time.Second})
		if err != nil {
			t.Errorf("receive: %v", err)
		}
		ch <- msgs
	}()
	testwait.Eventually(t, "the registration to wait for the send's lock", func() bool {
		var waiting bool
		err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND objsubid = 1 AND objid::int8 = hashtextextended($1, $2) & 4294967295)`, s.channel, qid).Scan(&waiting)
		return err == nil && waiting
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := testwait.Receive(t, "the long poll to find the message", ch)
	if len(got) != 1 || got[0].Body != "in flight" {
		t.Fatalf("long poll = %+v (queue %d)", got, qid)
	}
}

// A change this node makes within a step of a controlled clock tells its
// own waiting long poll before the call returns, and the step waits until
// the poll has armed its timer for the change's instant: the same advance
// then reaches that instant and the poll takes the message there. Told
// only by the database's notification, which arrives after the step, the
// poll would take it once the advance had ended.
func TestOwnChangeArmsWaitingPoll(t *testing.T) {
	const visibleIn = 5 * time.Second
	delay := visibleIn
	msg := func(group string) engine.NewMessage {
		return engine.NewMessage{Body: "soon", MessageGroupID: group, DeduplicationID: group}
	}
	// inFlight sends a message and receives it for an hour: its handle.
	inFlight := func(t *testing.T, s *Store, name, group string) string {
		ctx := t.Context()
		if _, err := s.Send(ctx, enginetest.Account, name, []engine.NewMessage{msg(group)}); err != nil {
			t.Fatal(err)
		}
		hour := time.Hour
		got, err := s.Receive(ctx, enginetest.Account, name, engine.ReceiveRequest{Max: 1, Visibility: &hour})
		if err != nil || len(got) != 1 {
			t.Fatalf("Receive: %v %v", got, err)
		}
		return got[0].ReceiptHandle
	}
	changeTo := func(ctx context.Context, s *Store, name, handle string) error {
		errs, err := s.ChangeVisibility(ctx, enginetest.Account, name, []engine.VisibilityChange{{ReceiptHandle: handle, Timeout: visibleIn}})
		if err == nil {
			err = errors.Join(errs...)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		fifo bool
		// prepare runs before the poll waits; change, within a step, makes
		// a message of the queue visible in visibleIn.
		prepare func(t *testing.T, s *Store, name string) string
		change  func(ctx context.Context, s *Store, name, handle string) error
	}{
		{name: "send with a delay", change: func(ctx context.Context, s *Store, name, _ string) error {
			m := msg("")
			m.Delay = &delay
			_, err := s.Send(ctx, enginetest.Account, name, []engine.NewMessage{m})
			return err
		}},
		{name: "send to several queues", change: func(ctx context.Context, s *Store, name, _ string) error {
			m := msg("")
			m.Delay = &delay
			out, err := s.SendMany(ctx, []engine.QueueSend{{Account: enginetest.Account, Name: name, Msgs: []engine.NewMessage{m}}})
			if err == nil {
				err = out[0].Err
			}
			return err
		}},
		{name: "visibility change", change: changeTo,
			prepare: func(t *testing.T, s *Store, name string) string { return inFlight(t, s, name, "") }},
		{name: "FIFO: visibility change", fifo: true, change: changeTo,
			prepare: func(t *testing.T, s *Store, name string) string { return inFlight(t, s, name, "g") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clock.NewControlled()
			c.Freeze()
			s := freshSchema(t).open(t, c)
			name := "q"
			if tc.fifo {
				name = "q.fifo"
				createFIFOQueue(t, s, name)
			} else {
				createQueue(t, s, name)
			}
			var handle string
			if tc.prepare != nil {
				handle = tc.prepare(t, s, name)
			}
			start := c.Now()
			// The poll's caller keeps the hold of the step that made it
			// take a message (clock.Pass) until it has read the clock.
			var holds clock.Holds
			defer holds.Release()
			pctx := clock.WithHolds(t.Context(), &holds)
			got := make(chan []engine.Message, 1)
			go func() {
				msgs, err := s.Receive(pctx, enginetest.Account, name, engine.ReceiveRequest{Max: 1, Wait: 20 * time.Second})
				if err != nil {
					t.Error(err)
				}
				got <- msgs
			}()
			testwait.Eventually(t, "the long poll to wait", func() bool { return c.Waiting(start.Add(20*time.Second)) == 1 })
			c.AfterFunc(time.Second, func() {
				if err := tc.change(t.Context(), s, name, handle); err != nil {
					t.Error(err)
				}
			})
			advanced := make(chan error, 1)
			go func() {
				_, err := c.Advance(t.Context(), 10*time.Second)
				advanced <- err
			}()
			msgs := testwait.Receive(t, "the poll's answer", got)
			at := c.Now()
			holds.Release()
			if err := testwait.Receive(t, "the advance", advanced); err != nil {
				t.Fatal(err)
			}
			// The change's step runs at its timer plus clock.Step; the
			// poll's timer fires one step later at most.
			due := start.Add(time.Second + clock.Step + visibleIn)
			if len(msgs) != 1 || at.Before(due) || at.After(due.Add(clock.Step)) {
				t.Fatalf("the poll took %d messages %v after the start, want 1 at %v", len(msgs), at.Sub(start), due.Sub(start))
			}
		})
	}
}
