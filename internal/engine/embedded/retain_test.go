package embedded

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// TestFIFOKeepsNoRequestMemory: the strings a FIFO send and receive hand
// the engine are views into the request's body (the protocol decoders
// share one copy of it), so what the engine keeps for minutes (the
// deduplication id and group for the 5-minute window, the group while it
// holds messages, the receive attempt id) must be its own copies. Kept as
// views, each entry held its whole request, up to a mebibyte, for five
// minutes.
func TestFIFOKeepsNoRequestMemory(t *testing.T) {
	e := openTest(t, Options{InMemory: true, Clock: clock.NewFake(enginetest.Start)})
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings(engine.DeduplicationScopeMessageGroup)})
	q, _ := e.lookup(acct, "q.fifo")

	held := func() weak.Pointer[byte] {
		// One allocation, as a request body is, of which the fields are views.
		body := strings.Repeat("x", 1<<20) + "group-1" + "dedup-1" + "attempt-1" + "payload"
		at := 1 << 20
		field := func(n int) string { s := body[at : at+n]; at += n; return s }
		grp, dedup, attempt, payload := field(7), field(7), field(9), field(7)
		if _, err := e.Send(context.Background(), acct, "q.fifo", []engine.NewMessage{
			{Body: payload, MessageGroupID: grp, DeduplicationID: dedup}}); err != nil {
			t.Fatal(err)
		}
		got, err := e.Receive(context.Background(), acct, "q.fifo", engine.ReceiveRequest{Max: 1, AttemptID: attempt})
		if err != nil || len(got) != 1 {
			t.Fatalf("receive: %v, %d messages", err, len(got))
		}
		return weak.Make(unsafe.StringData(body))
	}()

	// The engine still remembers all three...
	q.mu.Lock()
	dedups, groups, attempts := len(q.dedup.m), len(q.groups.groups), len(q.attempts.m)
	q.mu.Unlock()
	if dedups != 1 || groups != 1 || attempts != 1 {
		t.Fatalf("dedup entries %d, groups %d, attempts %d; want 1 each", dedups, groups, attempts)
	}
	// ...but not the request they came in.
	runtime.GC()
	if held.Value() != nil {
		t.Fatal("the engine keeps the request body alive")
	}
}
