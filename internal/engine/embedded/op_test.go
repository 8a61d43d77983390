package embedded

import (
	"context"
	"errors"
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
)

// Every queue operation refuses a cancelled context before it touches the
// queue, reads included. (A cancelled receive is an empty long poll: see
// the conformance suite.)
func TestCancelledContextRefused(t *testing.T) {
	e := openTest(t, Options{InMemory: true})
	mustCreate(t, e, engine.Queue{Name: "q", ARN: arn("q"), Settings: settings()})
	mustSend(t, e, "q", engine.NewMessage{Body: "a"})
	h := mustReceive(t, e, "q", engine.ReceiveRequest{})[0].ReceiptHandle
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	ops := []struct {
		name string
		call func() error
	}{
		{"CreateQueue", func() error {
			_, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "new", Settings: settings()})
			return err
		}},
		{"GetQueue", func() error { _, err := e.GetQueue(ctx, acct, "q"); return err }},
		{"ViewQueue", func() error { _, err := e.ViewQueue(ctx, acct, "q"); return err }},
		{"ListQueues", func() error { _, err := e.ListQueues(ctx, acct, ""); return err }},
		{"UpdateQueue", func() error {
			return e.UpdateQueue(ctx, acct, "q", func(q *engine.Queue) error { q.Tags = map[string]string{"k": "v"}; return nil })
		}},
		{"DeleteQueue", func() error { return e.DeleteQueue(ctx, acct, "q") }},
		{"Send", func() error { _, err := e.Send(ctx, acct, "q", []engine.NewMessage{{Body: "b"}}); return err }},
		{"SendMany", func() error {
			_, err := e.SendMany(ctx, []engine.QueueSend{{Account: acct, Name: "q", Msgs: []engine.NewMessage{{Body: "b"}}}})
			return err
		}},
		{"Delete", func() error { _, err := e.Delete(ctx, acct, "q", []string{h}); return err }},
		{"ChangeVisibility", func() error {
			_, err := e.ChangeVisibility(ctx, acct, "q", []engine.VisibilityChange{{ReceiptHandle: h}})
			return err
		}},
		{"Purge", func() error { return e.Purge(ctx, acct, "q") }},
		{"Stats", func() error { _, err := e.Stats(ctx, acct, "q"); return err }},
		{"StartMoveTask", func() error {
			_, err := e.StartMoveTask(ctx, engine.MoveTask{SourceAccount: acct, SourceName: "q", DestinationARN: arn("q")})
			return err
		}},
		{"ListMoveTasks", func() error { _, err := e.ListMoveTasks(ctx, acct, "q"); return err }},
		{"CancelMoveTask", func() error { _, err := e.CancelMoveTask(ctx, acct, "q", "id"); return err }},
	}
	for _, op := range ops {
		if err := op.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want %v", op.name, err, context.Canceled)
		}
	}

	// Nothing was done.
	bg := context.Background()
	q, err := e.GetQueue(bg, acct, "q")
	if err != nil || len(q.Tags) != 0 || !q.LastPurge.IsZero() {
		t.Fatalf("queue after the refused calls: %+v, %v", q, err)
	}
	if qs, err := e.ListQueues(bg, acct, ""); err != nil || len(qs) != 1 {
		t.Fatalf("queues after the refused calls: %d, %v", len(qs), err)
	}
	if s := mustStats(t, e, "q"); s != (engine.Stats{NotVisible: 1}) {
		t.Fatalf("stats after the refused calls: %+v", s)
	}
	if ts, err := e.ListMoveTasks(bg, acct, "q"); err != nil || len(ts) != 0 {
		t.Fatalf("move tasks after the refused calls: %v, %v", ts, err)
	}
}
