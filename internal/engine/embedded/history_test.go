package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// historyRecords counts the history records stored for queue name's
// messages, and returns the largest one's number of stored events.
func historyRecords(t *testing.T, e *Engine, name string) (n, most int) {
	t.Helper()
	q, err := e.lookup(acct, name)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := queueMsgSpan(q.id)
	err = e.scan(lo, hi, func(it *pebble.Iterator) (bool, error) {
		if _, _, kind, _ := parseMsgKey(it.Key()); kind == kindHistory {
			n++
			v, err := it.ValueAndErr()
			if err != nil {
				return false, err
			}
			events := 0
			for r := newReader(v, false); r.off < len(v) && !r.bad; events++ {
				r.span()
			}
			most = max(most, events)
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, most
}

func TestHistoryRecordsFollowTheirMessages(t *testing.T) {
	storeModes(t, testHistoryRecordsFollowTheirMessages)
}

func testHistoryRecordsFollowTheirMessages(t *testing.T, memory bool) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openTest(t, modeOptions(memory, dir, clk))
	ctx := context.Background()
	mustCreate(t, e, engine.Queue{Name: "dlq", ARN: arn("dlq"), Settings: settings()})
	mustCreate(t, e, engine.Queue{Name: "src", ARN: arn("src"), Settings: redriveTo("dlq", 2)})
	sendBodies(t, e, "src", 3)
	zero := time.Duration(0)
	c := &engine.Consumer{SourceIP: "127.0.0.1", UserAgent: "test", AccessKey: "AKID"}
	for range 3 { // two receives each, then the move
		mustReceive(t, e, "src", engine.ReceiveRequest{Max: 10, Visibility: &zero, Consumer: c})
	}
	if n, _ := historyRecords(t, e, "src"); n != 0 {
		t.Fatalf("%d history records left in the source", n)
	}
	if n, _ := historyRecords(t, e, "dlq"); n != 3 {
		t.Fatalf("%d history records in the dead-letter queue, want 3", n)
	}

	// A restart (on disk) keeps them, and knows that the messages have
	// them.
	if !memory {
		e = reopen(t, e, dir, clk)
	}
	hs, _, err := e.MessageHistories(ctx, acct, "dlq", "", 10)
	if err != nil || len(hs) != 3 {
		t.Fatalf("after restart: %d histories (%v)", len(hs), err)
	}
	for _, h := range hs {
		if len(h.Events) != 3 || h.Events[2].Kind != engine.HistoryMove || h.Events[1].Consumer != *c {
			t.Fatalf("story after restart = %+v", h)
		}
		if one, ok, err := e.MessageHistory(ctx, acct, "dlq", h.MessageID); err != nil || !ok || len(one.Events) != 3 {
			t.Fatalf("history of %s: %v, %v, %+v", h.MessageID, ok, err, one)
		}
	}
	if _, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: acct, SourceName: "dlq"}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "the move back", func() bool { return mustStats(t, e, "src").Visible == 3 })
	if n, _ := historyRecords(t, e, "src"); n != 3 {
		t.Fatalf("%d history records in the source after the move back, want 3", n)
	}
	if n, _ := historyRecords(t, e, "dlq"); n != 0 {
		t.Fatalf("%d history records left in the dead-letter queue", n)
	}
	// Deletes take them along.
	got := mustReceive(t, e, "src", engine.ReceiveRequest{Max: 10, Consumer: c})
	if len(got) != 3 {
		t.Fatalf("received %d of 3", len(got))
	}
	for _, m := range got {
		if errs, err := e.Delete(ctx, acct, "src", []string{m.ReceiptHandle}); err != nil || errs[0] != nil {
			t.Fatalf("Delete: %v %v", errs, err)
		}
	}
	if n, _ := historyRecords(t, e, "src"); n != 0 {
		t.Fatalf("%d history records left after the deletes", n)
	}
	if memory {
		mustVerify(t, e)
	}
}

// A message's history record stays within twice the cap whether its
// events are receives by a consumer or SNS delivery attempts, each a
// visibility change after a receive by no consumer; a read shows the
// latest HistoryCap.
func TestHistoryRecordStaysBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		consumer *engine.Consumer
		attempts bool
	}{
		{"receives", &engine.Consumer{UserAgent: "again"}, false},
		{"delivery attempts", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openTest(t, Options{InMemory: true})
			ctx := context.Background()
			mustCreate(t, e, engine.Queue{Name: "q", ARN: arn("q"), Settings: settings()})
			sendBodies(t, e, "q", 1)
			zero := time.Duration(0)
			const receives = 5*engine.HistoryCap + 3
			for n := 1; n <= receives; n++ {
				got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 1, Visibility: &zero, Consumer: tc.consumer})
				if !tc.attempts {
					continue
				}
				ev := &engine.HistoryEvent{Kind: engine.HistoryDelivery, ReceiveCount: n, Status: 503}
				if errs, err := e.ChangeVisibility(ctx, acct, "q", []engine.VisibilityChange{{ReceiptHandle: got[0].ReceiptHandle, Event: ev}}); err != nil || errs[0] != nil {
					t.Fatalf("ChangeVisibility: %v %v", errs, err)
				}
			}
			if _, most := historyRecords(t, e, "q"); most > 2*engine.HistoryCap {
				t.Fatalf("the record holds %d events, more than twice the cap", most)
			}
			hs, _, err := e.MessageHistories(ctx, acct, "q", "", 1)
			if err != nil || len(hs) != 1 {
				t.Fatalf("%v %v", hs, err)
			}
			h := hs[0]
			if len(h.Events) != engine.HistoryCap || h.Dropped != receives-engine.HistoryCap ||
				h.Events[0].ReceiveCount != receives-engine.HistoryCap+1 || h.Events[engine.HistoryCap-1].ReceiveCount != receives {
				t.Fatalf("%d events from receive %d, %d dropped", len(h.Events), h.Events[0].ReceiveCount, h.Dropped)
			}
		})
	}
}

// A receive's event rides in the state record until the story goes on: a
// message received once writes no history record (and its delete no
// tombstone for one), yet its story tells of the receive, across a
// visibility change and a restart; the next receive or an event moves it
// to the history record, in order.
func TestHistoryPendingReceive(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openTest(t, Options{Dir: dir, Clock: clk})
	ctx := context.Background()
	mustCreate(t, e, engine.Queue{Name: "q", ARN: arn("q"), Settings: settings()})
	sendBodies(t, e, "q", 2)
	vis := 30 * time.Second
	c1 := &engine.Consumer{SourceIP: "127.0.0.1", UserAgent: "first", AccessKey: "AKID1"}
	c2 := &engine.Consumer{SourceIP: "127.0.0.2", UserAgent: "second", AccessKey: "AKID2"}
	got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 10, Visibility: &vis, Consumer: c1})
	if len(got) != 2 {
		t.Fatalf("received %d of 2", len(got))
	}
	firstAt := clk.Now().UTC()
	receives := func(id string) []engine.HistoryEvent {
		t.Helper()
		h, ok, err := e.MessageHistory(ctx, acct, "q", id)
		if err != nil || !ok {
			t.Fatalf("MessageHistory(%s) = %v %v", id, ok, err)
		}
		return h.Events
	}
	wantReceive := func(ev engine.HistoryEvent, count int, c *engine.Consumer, at time.Time) {
		t.Helper()
		if ev.Kind != engine.HistoryReceive || ev.ReceiveCount != count || ev.Consumer != *c ||
			!ev.At.Equal(at) || !ev.VisibleAt.Equal(at.Add(vis)) {
			t.Fatalf("event = %+v, want receive %d by %+v at %v", ev, count, *c, at)
		}
	}
	noRecords := func(when string) {
		t.Helper()
		if n, _ := historyRecords(t, e, "q"); n != 0 {
			t.Fatalf("%s: %d history records", when, n)
		}
	}
	noRecords("after one receive")
	q, err := e.lookup(acct, "q")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range q.msgs {
		if m.history || !m.pending {
			t.Fatalf("message %d: history %v, pending %v", m.seq, m.history, m.pending)
		}
	}
	a, b := got[0], got[1]
	// A visibility change keeps the receive, with the visibility it set.
	if errs, err := e.ChangeVisibility(ctx, acct, "q", []engine.VisibilityChange{{ReceiptHandle: a.ReceiptHandle, Timeout: time.Minute}}); err != nil || errs[0] != nil {
		t.Fatalf("ChangeVisibility: %v %v", errs, err)
	}
	for _, m := range got {
		evs := receives(m.MessageID)
		if len(evs) != 1 {
			t.Fatalf("story of %s = %+v", m.MessageID, evs)
		}
		wantReceive(evs[0], 1, c1, firstAt)
	}

	e = reopen(t, e, dir, clk)
	if hs, _, err := e.MessageHistories(ctx, acct, "q", "", 10); err != nil || len(hs) != 2 {
		t.Fatalf("after restart: %d stories (%v)", len(hs), err)
	}
	if errs, err := e.Delete(ctx, acct, "q", []string{b.ReceiptHandle}); err != nil || errs[0] != nil {
		t.Fatalf("Delete: %v %v", errs, err)
	}
	if hs, _, err := e.MessageHistories(ctx, acct, "q", "", 10); err != nil || len(hs) != 1 || hs[0].MessageID != a.MessageID {
		t.Fatalf("after the delete: %+v (%v)", hs, err)
	}

	clk.Advance(time.Minute + time.Second)
	secondAt := clk.Now().UTC()
	again := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 10, Visibility: &vis, Consumer: c2})
	if len(again) != 1 || again[0].MessageID != a.MessageID {
		t.Fatalf("received again %+v", again)
	}
	if n, _ := historyRecords(t, e, "q"); n != 1 {
		t.Fatalf("%d history records after the second receive, want 1", n)
	}
	delivery := &engine.HistoryEvent{Kind: engine.HistoryDelivery, At: secondAt, ReceiveCount: 2, Endpoint: "http://127.0.0.1:1/", Status: 500}
	if errs, err := e.ChangeVisibility(ctx, acct, "q", []engine.VisibilityChange{{ReceiptHandle: again[0].ReceiptHandle, Timeout: time.Second, Event: delivery}}); err != nil || errs[0] != nil {
		t.Fatalf("ChangeVisibility: %v %v", errs, err)
	}
	evs := receives(a.MessageID)
	if len(evs) != 3 || evs[2].Kind != engine.HistoryDelivery {
		t.Fatalf("story = %+v, want two receives and a delivery", evs)
	}
	wantReceive(evs[0], 1, c1, firstAt)
	wantReceive(evs[1], 2, c2, secondAt)
	if errs, err := e.Delete(ctx, acct, "q", []string{again[0].ReceiptHandle}); err != nil || errs[0] != nil {
		t.Fatalf("Delete: %v %v", errs, err)
	}
	noRecords("after the deletes")
}
