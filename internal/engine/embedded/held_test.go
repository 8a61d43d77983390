package embedded

import (
	"context"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// heldOf returns q's held records count and bytes, and the engine's total.
func heldOf(t *testing.T, e *Engine, name string) (n int, bytes, total int64) {
	t.Helper()
	q, err := e.lookup(acct, name)
	if err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.checkHeld(); err != nil {
		t.Fatal(err)
	}
	return len(q.held), q.heldBytes, e.heldBytes.Load()
}

func sendStrings(t *testing.T, e *Engine, name string, bodies ...string) {
	t.Helper()
	msgs := make([]engine.NewMessage, len(bodies))
	for i, b := range bodies {
		msgs[i] = engine.NewMessage{Body: b, MD5OfBody: "0123456789abcdef0123456789abcdef"}
	}
	if _, err := e.Send(context.Background(), acct, name, msgs); err != nil {
		t.Fatal(err)
	}
}

// poll makes an empty short poll of name.
func poll(t *testing.T, e *Engine, name string) {
	t.Helper()
	if got, err := e.Receive(context.Background(), acct, name, engine.ReceiveRequest{Max: 10}); err != nil || len(got) != 0 {
		t.Fatalf("poll of %s: %v, %d messages", name, err, len(got))
	}
}

// TestHeldRecords: a send that no receive waits for, to a queue receives
// poll, leaves its records held for the first receive, which hands them
// out (and lets them go) without reading the store; purges, queue
// deletions and a full budget hold nothing, nor does a queue no receive
// has polled lately, and a restart starts with nothing held.
func TestHeldRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk, Waits: engine.Waits{NoPurgeInterval: true}})
	for _, name := range []string{"a", "b"} {
		if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: name, Settings: settings()}); err != nil {
			t.Fatal(err)
		}
	}
	sendStrings(t, e, "a", "unpolled")
	if n, _, _ := heldOf(t, e, "a"); n != 0 {
		t.Fatalf("a queue never polled holds %d records", n)
	}
	if err := e.Purge(ctx, acct, "a"); err != nil {
		t.Fatal(err)
	}
	poll(t, e, "a")
	clk.Advance(heldPolled + 1)
	sendStrings(t, e, "a", "polled too long ago")
	if n, _, _ := heldOf(t, e, "a"); n != 0 {
		t.Fatalf("a queue polled %v ago holds %d records", heldPolled+1, n)
	}
	if err := e.Purge(ctx, acct, "a"); err != nil {
		t.Fatal(err)
	}

	poll(t, e, "a")
	poll(t, e, "b")
	sendStrings(t, e, "a", "one", "two", "three")
	if n, b, total := heldOf(t, e, "a"); n != 3 || b == 0 || total != b {
		t.Fatalf("after a send: %d held, %d bytes, %d in all", n, b, total)
	}

	got, err := e.Receive(ctx, acct, "a", engine.ReceiveRequest{Max: 2})
	if err != nil || len(got) != 2 || got[0].Body != "one" || got[1].Body != "two" {
		t.Fatalf("receive: %v, %+v", err, got)
	}
	if n, _, _ := heldOf(t, e, "a"); n != 1 {
		t.Fatalf("after receiving two: %d held, want 1", n)
	}
	if err := e.Purge(ctx, acct, "a"); err != nil {
		t.Fatal(err)
	}
	if n, b, total := heldOf(t, e, "a"); n != 0 || b != 0 || total != 0 {
		t.Fatalf("after a purge: %d held, %d bytes, %d in all", n, b, total)
	}

	// A full budget holds nothing; the receive reads the store.
	e.heldBytes.Add(heldBudget)
	sendStrings(t, e, "b", "full")
	if n, _, _ := heldOf(t, e, "b"); n != 0 {
		t.Fatalf("over budget: %d held", n)
	}
	e.heldBytes.Add(-heldBudget)
	if got, err := e.Receive(ctx, acct, "b", engine.ReceiveRequest{Max: 10}); err != nil || len(got) != 1 || got[0].Body != "full" {
		t.Fatalf("receive of what was not held: %v, %+v", err, got)
	}

	sendStrings(t, e, "b", "kept")
	if err := e.DeleteQueue(ctx, acct, "b"); err != nil {
		t.Fatal(err)
	}
	if total := e.heldBytes.Load(); total != 0 {
		t.Fatalf("after deleting the queue: %d bytes held in all", total)
	}

	sendStrings(t, e, "a", "before the restart")
	if n, _, _ := heldOf(t, e, "a"); n != 1 {
		t.Fatalf("before the restart: %d held, want 1", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, Options{Dir: dir, Clock: clk})
	if n, _, total := heldOf(t, e, "a"); n != 0 || total != 0 {
		t.Fatalf("after a restart: %d held, %d bytes in all", n, total)
	}
	if got, err := e.Receive(ctx, acct, "a", engine.ReceiveRequest{Max: 10}); err != nil || len(got) != 1 || got[0].Body != "before the restart" {
		t.Fatalf("receive after a restart: %v, %+v", err, got)
	}
}

// TestHeldRecordsBudget: holding stops at the budget and resumes once
// receives have taken held records out. (An in-memory store holds
// nothing: its records are in memory already.)
func TestHeldRecordsBudget(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, Options{Dir: t.TempDir(), NoSync: true})
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
		t.Fatal(err)
	}
	poll(t, e, "q")
	sendStrings(t, e, "q", "first")
	_, one, _ := heldOf(t, e, "q")
	// Room for exactly one more record of the same size.
	e.heldBytes.Add(heldBudget - 2*one)
	sendStrings(t, e, "q", "other", "third")
	if n, _, _ := heldOf(t, e, "q"); n != 2 {
		t.Fatalf("at the budget: %d held, want 2", n)
	}
	for i, want := range []string{"first", "other", "third"} {
		got, err := e.Receive(ctx, acct, "q", engine.ReceiveRequest{Max: 1})
		if err != nil || len(got) != 1 || got[0].Body != want {
			t.Fatalf("receive %d: %v, %+v", i, err, got)
		}
	}
	e.heldBytes.Add(-(heldBudget - 2*one))
	if n, b, total := heldOf(t, e, "q"); n != 0 || b != 0 || total != 0 {
		t.Fatalf("after the receives: %d held, %d bytes, %d in all", n, b, total)
	}
	sendStrings(t, e, "q", "again")
	if n, _, _ := heldOf(t, e, "q"); n != 1 {
		t.Fatalf("with room again: %d held", n)
	}
}
