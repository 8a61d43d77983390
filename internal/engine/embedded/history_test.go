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
	dir := t.TempDir()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := openTest(t, Options{Dir: dir, Clock: clk})
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

	// A restart keeps them, and knows that the messages have them.
	e = reopen(t, e, dir, clk)
	hs, _, err := e.MessageHistories(ctx, acct, "dlq", "", 10)
	if err != nil || len(hs) != 3 {
		t.Fatalf("after restart: %d histories (%v)", len(hs), err)
	}
	for _, h := range hs {
		if len(h.Events) != 3 || h.Events[2].Kind != engine.HistoryMove || h.Events[1].Consumer != *c {
			t.Fatalf("story after restart = %+v", h)
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
}

func TestHistoryRecordStaysBounded(t *testing.T) {
	e := openTest(t, Options{InMemory: true})
	mustCreate(t, e, engine.Queue{Name: "q", ARN: arn("q"), Settings: settings()})
	sendBodies(t, e, "q", 1)
	zero := time.Duration(0)
	c := &engine.Consumer{UserAgent: "again"}
	const receives = 5*engine.HistoryCap + 3
	for range receives {
		mustReceive(t, e, "q", engine.ReceiveRequest{Max: 1, Visibility: &zero, Consumer: c})
	}
	if _, most := historyRecords(t, e, "q"); most > 2*engine.HistoryCap {
		t.Fatalf("the record holds %d events, more than twice the cap", most)
	}
	hs, _, err := e.MessageHistories(context.Background(), acct, "q", "", 1)
	if err != nil || len(hs) != 1 {
		t.Fatalf("%v %v", hs, err)
	}
	h := hs[0]
	if len(h.Events) != engine.HistoryCap || h.Dropped != receives-engine.HistoryCap ||
		h.Events[0].ReceiveCount != receives-engine.HistoryCap+1 || h.Events[engine.HistoryCap-1].ReceiveCount != receives {
		t.Fatalf("%d events from receive %d, %d dropped", len(h.Events), h.Events[0].ReceiveCount, h.Dropped)
	}
}
