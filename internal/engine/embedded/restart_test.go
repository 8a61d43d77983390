package embedded

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

const acct = enginetest.Account

func settings() engine.QueueSettings { return enginetest.Settings() }

// reopen closes e and opens the same directory again with clk.
func reopen(t *testing.T, e *Engine, dir string, clk clock.Clock) *Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openTest(t, Options{Dir: dir, Clock: clk})
}

// mustStats returns the queue's message counts.
func mustStats(t *testing.T, e *Engine, name string) engine.Stats {
	t.Helper()
	s, err := e.Stats(context.Background(), acct, name)
	if err != nil {
		t.Fatalf("Stats(%s): %v", name, err)
	}
	return engine.Stats{Visible: s.Visible, NotVisible: s.NotVisible, Delayed: s.Delayed}
}

func mustCreate(t *testing.T, e *Engine, q engine.Queue) {
	t.Helper()
	if q.Account == "" {
		q.Account = acct
	}
	if _, created, err := e.CreateQueue(context.Background(), q); err != nil || !created {
		t.Fatalf("CreateQueue(%s): %v %v", q.Name, created, err)
	}
}

func mustSend(t *testing.T, e *Engine, name string, msgs ...engine.NewMessage) []string {
	t.Helper()
	res, err := e.Send(context.Background(), acct, name, msgs)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.MessageID
	}
	return ids
}

func mustReceive(t *testing.T, e *Engine, name string, req engine.ReceiveRequest) []engine.Message {
	t.Helper()
	if req.Max == 0 {
		req.Max = 10
	}
	msgs, err := e.Receive(context.Background(), acct, name, req)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return msgs
}

func countMsgRecords(t *testing.T, e *Engine) int {
	t.Helper()
	n := 0
	if err := e.scan([]byte{prefixMsg}, []byte{prefixMsg + 1}, func(*pebble.Iterator) (bool, error) {
		n++
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNoSyncRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk, NoSync: true})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	mustSend(t, e, "q", engine.NewMessage{Body: "a"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, Options{Dir: dir, Clock: clk, NoSync: true})
	if got := mustStats(t, e, "q"); got != (engine.Stats{Visible: 1}) {
		t.Fatalf("stats %+v", got)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), Options{}); err == nil {
		t.Fatal("Open without Dir or InMemory succeeded")
	}
	dir := t.TempDir()
	openTest(t, Options{Dir: dir})
	// The store is locked while open.
	if e2, err := Open(context.Background(), Options{Dir: dir}); err == nil {
		_ = e2.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
}
