package embedded

import (
	"context"
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
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

// TestHeldRecords: a send that no receive waits for leaves its records
// held for the first receive, which hands them out (and lets them go)
// without reading the store; purges, queue deletions and a full budget
// hold nothing, and a restart starts with nothing held.
func TestHeldRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openTest(t, Options{Dir: dir})
	for _, name := range []string{"a", "b"} {
		if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: name, Settings: settings()}); err != nil {
			t.Fatal(err)
		}
	}
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
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, Options{Dir: dir})
	if n, _, total := heldOf(t, e, "a"); n != 0 || total != 0 {
		t.Fatalf("after a restart: %d held, %d bytes in all", n, total)
	}
	if got, err := e.Receive(ctx, acct, "a", engine.ReceiveRequest{Max: 10}); err != nil || len(got) != 1 || got[0].Body != "before the restart" {
		t.Fatalf("receive after a restart: %v, %+v", err, got)
	}
}

// TestHeldRecordsBudget: holding stops at the budget and resumes once
// receives have taken held records out.
func TestHeldRecordsBudget(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, Options{InMemory: true})
	if _, _, err := e.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Settings: settings()}); err != nil {
		t.Fatal(err)
	}
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
