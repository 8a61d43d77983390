package embedded

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// SendMany answers each part as Send would alone, and what it acknowledged
// survives a restart.
func TestSendMany(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	e := openTest(t, Options{Dir: dir, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "a", Settings: settings()})
	delayed := settings()
	delayed.Delay = 30 * time.Second
	mustCreate(t, e, engine.Queue{Name: "b", Settings: delayed})
	fifo := settings()
	fifo.FIFO = true
	mustCreate(t, e, engine.Queue{Name: "f.fifo", Settings: fifo})

	body := func(s string) engine.NewMessage { return engine.NewMessage{Body: s} }
	inGroup := func(s, dedup string) engine.NewMessage {
		return engine.NewMessage{Body: s, MessageGroupID: "g", DeduplicationID: dedup}
	}
	sends := []engine.QueueSend{
		{Account: acct, Name: "a", Msgs: []engine.NewMessage{body("a1"), body("a2")}},
		{Account: acct, Name: "missing", Msgs: []engine.NewMessage{body("lost")}},
		{Account: acct, Name: "b", Msgs: []engine.NewMessage{body("b1")}},
		{Account: acct, Name: "f.fifo", Msgs: []engine.NewMessage{inGroup("f1", "d1")}},
		{Account: acct, Name: "a", Msgs: []engine.NewMessage{body("a3")}},
		{Account: acct, Name: "f.fifo", Msgs: []engine.NewMessage{inGroup("f1 again", "d1"), inGroup("f2", "d2")}},
		{Account: "other", Name: "a", Msgs: []engine.NewMessage{body("elsewhere")}},
		{Account: acct, Name: "a"},
	}
	outs, err := e.SendMany(ctx, sends)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != len(sends) {
		t.Fatalf("%d outcomes for %d parts", len(outs), len(sends))
	}
	for i, o := range outs {
		wantErr := sends[i].Name == "missing" || sends[i].Account == "other"
		if wantErr != errors.Is(o.Err, engine.ErrQueueNotFound) || !wantErr && o.Err != nil {
			t.Errorf("part %d (%s): error %v", i, sends[i].Name, o.Err)
		}
		if wantErr {
			continue
		}
		if len(o.Results) != len(sends[i].Msgs) {
			t.Errorf("part %d: %d results for %d messages", i, len(o.Results), len(sends[i].Msgs))
		}
	}
	if dup := outs[5].Results[0]; !dup.Duplicate || dup.MessageID != outs[3].Results[0].MessageID {
		t.Errorf("FIFO duplicate in a later part: %+v, original %+v", dup, outs[3].Results[0])
	}
	if outs[5].Results[1].Duplicate {
		t.Errorf("FIFO fresh message counted as duplicate")
	}

	// Acknowledged means durable: read them back after a restart.
	e = reopen(t, e, dir, clk)
	got := mustReceive(t, e, "a", engine.ReceiveRequest{Max: 10})
	wantIDs := []string{outs[0].Results[0].MessageID, outs[0].Results[1].MessageID, outs[4].Results[0].MessageID}
	if len(got) != 3 {
		t.Fatalf("queue a: %d messages, want 3", len(got))
	}
	for i, m := range got {
		if m.MessageID != wantIDs[i] || m.Body != []string{"a1", "a2", "a3"}[i] {
			t.Errorf("queue a message %d: %s %q", i, m.MessageID, m.Body)
		}
	}
	if st := mustStats(t, e, "b"); st.Delayed != 1 || st.Visible != 0 {
		t.Errorf("queue b (delayed) stats %+v, want 1 delayed", st)
	}
	clk.Advance(30 * time.Second)
	if got := mustReceive(t, e, "b", engine.ReceiveRequest{Max: 10}); len(got) != 1 || got[0].Body != "b1" {
		t.Errorf("queue b after its delay: %v", got)
	}
	got = mustReceive(t, e, "f.fifo", engine.ReceiveRequest{Max: 10})
	if len(got) != 2 || got[0].Body != "f1" || got[1].Body != "f2" {
		t.Errorf("FIFO queue: %v", got)
	}
}

// Parts of a SendMany wake receives waiting on their queues, with the
// records in hand.
func TestSendManyWakesWaiters(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, Options{InMemory: true})
	names := []string{"q0", "q1", "q2"}
	done := make(chan []engine.Message, len(names))
	for _, n := range names {
		mustCreate(t, e, engine.Queue{Name: n, Settings: settings()})
		go func() {
			msgs, err := e.Receive(ctx, acct, n, engine.ReceiveRequest{Max: 10, Wait: time.Minute})
			if err != nil {
				t.Error(err)
			}
			done <- msgs
		}()
	}
	for _, n := range names {
		awaitWaiter(t, e, n)
	}
	var sends []engine.QueueSend
	for _, n := range names {
		sends = append(sends, engine.QueueSend{Account: acct, Name: n, Msgs: []engine.NewMessage{{Body: "to " + n}}})
	}
	if _, err := e.SendMany(ctx, sends); err != nil {
		t.Fatal(err)
	}
	bodies := map[string]bool{}
	for range names {
		for _, m := range <-done {
			bodies[m.Body] = true
		}
	}
	for _, n := range names {
		if !bodies["to "+n] {
			t.Errorf("no waiting receive got the message to %s: %v", n, bodies)
		}
	}
}
