package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// FIFO queues.

// FIFO is a settings change that makes a FIFO queue.
func FIFO(s *engine.QueueSettings) { s.FIFO = true }

// FIFOWith makes a FIFO queue and applies mod.
func FIFOWith(mod func(*engine.QueueSettings)) func(*engine.QueueSettings) {
	return func(s *engine.QueueSettings) {
		s.FIFO = true
		mod(s)
	}
}

// Msg is a FIFO message of group g whose body is also its deduplication id,
// as content-based deduplication would make it (the SQS layer computes the
// real hash; the engine only compares ids).
func Msg(g, body string) engine.NewMessage {
	return engine.NewMessage{Body: body, MessageGroupID: g, DeduplicationID: "dedup-" + body, MD5OfBody: "md5-" + body}
}

// SendResults sends msgs and returns the results, checking FIFO fields.
func (h *H) SendResults(name string, msgs ...engine.NewMessage) []engine.SendResult {
	h.Helper()
	res, err := h.B.Send(h.Ctx, Account, name, msgs)
	if err != nil {
		h.Fatalf("Send(%s): %v", name, err)
	}
	if len(res) != len(msgs) {
		h.Fatalf("Send(%s) returned %d results for %d messages", name, len(res), len(msgs))
	}
	for _, r := range res {
		if r.MessageID == "" || len(r.SequenceNumber) < 20 || strings.Trim(r.SequenceNumber, "0123456789") != "" {
			h.Fatalf("Send(%s) result %+v: want an id and a decimal sequence number of 20+ digits", name, r)
		}
	}
	return res
}

// Bodies lists the messages' bodies in order.
func Bodies(msgs []engine.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Body
	}
	return out
}

// WantBodies receives (req.Max defaults to 10) and checks the bodies in
// order.
func (h *H) WantBodies(name string, req engine.ReceiveRequest, want ...string) []engine.Message {
	h.Helper()
	got := h.Receive(name, req)
	if b := Bodies(got); !slices.Equal(b, want) && (len(b) != 0 || len(want) != 0) {
		h.Fatalf("Receive(%s) = %q, want %q", name, b, want)
	}
	return got
}

// DeleteAll deletes the messages, expecting success.
func (h *H) DeleteAll(name string, msgs []engine.Message) {
	h.Helper()
	if len(msgs) == 0 {
		return
	}
	handles := make([]string, len(msgs))
	for i, m := range msgs {
		handles[i] = m.ReceiptHandle
	}
	for i, err := range h.Delete(name, handles...) {
		if err != nil {
			h.Fatalf("delete %s: %v", msgs[i].Body, err)
		}
	}
}

// seqLess compares two FIFO sequence numbers.
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func testFIFODedup(h *H) {
	h.Create("q.fifo", FIFO)
	first := h.SendResults("q.fifo", Msg("g", "a"))[0]
	if first.Duplicate {
		h.Fatal("first send reported as a duplicate")
	}
	again := Msg("g", "a")
	again.Body = "other body, same id"
	if r := h.SendResults("q.fifo", again)[0]; !r.Duplicate || r.MessageID != first.MessageID || r.SequenceNumber != first.SequenceNumber {
		h.Fatalf("resend = %+v, want a duplicate of %+v", r, first)
	}
	// Queue scope: another group with the same id is a duplicate too.
	if r := h.SendResults("q.fifo", Msg("other", "a"))[0]; !r.Duplicate || r.MessageID != first.MessageID {
		h.Fatalf("same id in another group = %+v, want a duplicate", r)
	}
	h.WantStats("q.fifo", 1, 0, 0)

	// Received, then deleted: the window keeps counting from the first send.
	h.Clk.Advance(time.Minute)
	m := h.ReceiveOne("q.fifo", engine.ReceiveRequest{})
	if m.MessageID != first.MessageID || m.SequenceNumber != first.SequenceNumber || m.DeduplicationID != "dedup-a" || m.MessageGroupID != "g" {
		h.Fatalf("received %+v, sent %+v", m, first)
	}
	if r := h.SendResults("q.fifo", Msg("g", "a"))[0]; !r.Duplicate || r.MessageID != first.MessageID {
		h.Fatalf("resend while in flight = %+v", r)
	}
	h.DeleteAll("q.fifo", []engine.Message{m})
	h.Clk.Advance(engine.DeduplicationWindow - time.Minute - time.Second)
	if r := h.SendResults("q.fifo", Msg("g", "a"))[0]; !r.Duplicate || r.MessageID != first.MessageID {
		h.Fatalf("resend after delete, within the window = %+v", r)
	}
	h.WantStats("q.fifo", 0, 0, 0)

	// The duplicates did not extend the window.
	h.Clk.Advance(2 * time.Second)
	r := h.SendResults("q.fifo", Msg("g", "a"))[0]
	if r.Duplicate || r.MessageID == first.MessageID || !seqLess(first.SequenceNumber, r.SequenceNumber) {
		h.Fatalf("send after the window = %+v, first was %+v", r, first)
	}
	h.WantStats("q.fifo", 1, 0, 0)

	// In a batch, a repeated id is a duplicate of the earlier entry.
	res := h.SendResults("q.fifo", Msg("g", "x"), Msg("g", "y"), Msg("g2", "x"), Msg("g", "z"))
	if res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[3].Duplicate ||
		res[2].MessageID != res[0].MessageID || res[2].SequenceNumber != res[0].SequenceNumber {
		h.Fatalf("batch with a repeated id: %+v", res)
	}
	if !seqLess(r.SequenceNumber, res[0].SequenceNumber) || !seqLess(res[0].SequenceNumber, res[1].SequenceNumber) ||
		!seqLess(res[1].SequenceNumber, res[3].SequenceNumber) {
		h.Fatalf("sequence numbers do not grow in request order: %+v", res)
	}
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "a", "x", "y", "z")
}

func testFIFODedupGroupScope(h *H) {
	h.Create("q.fifo", FIFOWith(func(s *engine.QueueSettings) { s.DeduplicationScope = engine.DeduplicationScopeMessageGroup }))
	res := h.SendResults("q.fifo", Msg("g1", "a"), Msg("g2", "a"), Msg("g1", "a"))
	if res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[2].MessageID != res[0].MessageID || res[1].MessageID == res[0].MessageID {
		h.Fatalf("messageGroup scope: %+v", res)
	}
	got := h.Receive("q.fifo", engine.ReceiveRequest{})
	if len(got) != 2 || got[0].MessageGroupID != "g1" || got[1].MessageGroupID != "g2" {
		h.Fatalf("received %+v", got)
	}
	h.DeleteAll("q.fifo", got)
	if r := h.SendResults("q.fifo", Msg("g2", "a"))[0]; !r.Duplicate || r.MessageID != res[1].MessageID {
		h.Fatalf("resend to g2 after delete = %+v", r)
	}
}

// Without a deduplication id (the SQS layer always sets one) nothing is a
// duplicate.
func testFIFONoDedupID(h *H) {
	h.Create("q.fifo", FIFO)
	res := h.SendResults("q.fifo", engine.NewMessage{Body: "a", MessageGroupID: "g"}, engine.NewMessage{Body: "a", MessageGroupID: "g"})
	if res[0].Duplicate || res[1].Duplicate || res[0].MessageID == res[1].MessageID {
		h.Fatalf("sends without ids: %+v", res)
	}
	if r := h.SendResults("q.fifo", engine.NewMessage{Body: "a", MessageGroupID: "g"})[0]; r.Duplicate {
		h.Fatalf("a later send without an id: %+v", r)
	}
	got := h.WantBodies("q.fifo", engine.ReceiveRequest{}, "a", "a", "a")
	if got[0].DeduplicationID != "" {
		h.Fatalf("received %+v", got[0])
	}
}

func testFIFOOrder(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g", "a"), Msg("g", "b"), Msg("g", "c"))
	h.SendResults("q.fifo", Msg("g", "d"))
	a := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "a")
	// Blocked while a is in flight; the others still count as visible.
	h.ReceiveNone("q.fifo")
	h.WantStats("q.fifo", 3, 1, 0)
	h.DeleteAll("q.fifo", a)
	got := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 2}, "b", "c")
	h.ReceiveNone("q.fifo")
	// Deleting the later one first leaves the group blocked by the other.
	h.DeleteAll("q.fifo", got[1:])
	h.ReceiveNone("q.fifo")
	h.DeleteAll("q.fifo", got[:1])
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "d")
}

func testFIFOVisibilityHeadFirst(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g", "a"), Msg("g", "b"), Msg("g", "c"))
	h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "a")
	h.Clk.Advance(30 * time.Second)
	got := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 2}, "a", "b")
	if got[0].ReceiveCount != 2 || got[1].ReceiveCount != 1 {
		h.Fatalf("receive counts %d, %d", got[0].ReceiveCount, got[1].ReceiveCount)
	}
	// a visible again, b still in flight: nothing goes out.
	if err := h.ChangeVisibility("q.fifo", got[0].ReceiptHandle, 0); err != nil {
		h.Fatal(err)
	}
	h.ReceiveNone("q.fifo")
	if err := h.ChangeVisibility("q.fifo", got[1].ReceiptHandle, 0); err != nil {
		h.Fatal(err)
	}
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "a", "b", "c")
}

func testFIFOBatchOneGroupFirst(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g1", "a1"), Msg("g2", "b1"), Msg("g1", "a2"), Msg("g2", "b2"), Msg("g1", "a3"), Msg("g3", "c1"))
	a := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 2}, "a1", "a2")
	rest := h.WantBodies("q.fifo", engine.ReceiveRequest{}, "b1", "b2", "c1")
	h.ReceiveNone("q.fifo")
	h.DeleteAll("q.fifo", a)
	h.DeleteAll("q.fifo", rest)
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "a3")

	// A full batch: each group's run in order, groups by their oldest head.
	h.Create("r.fifo", FIFO)
	h.SendResults("r.fifo", Msg("g2", "b1"), Msg("g1", "a1"), Msg("g2", "b2"), Msg("g1", "a2"), Msg("g3", "c1"))
	h.WantBodies("r.fifo", engine.ReceiveRequest{}, "b1", "b2", "a1", "a2", "c1")
}

func testFIFOGroupsIndependent(h *H) {
	h.Create("q.fifo", FIFO)
	const groups, per = 40, 3
	for i := range per {
		var batch []engine.NewMessage
		for g := range groups {
			batch = append(batch, Msg(fmt.Sprint("g", g), fmt.Sprintf("g%d-%d", g, i)))
			if len(batch) == 10 {
				h.SendResults("q.fifo", batch...)
				batch = nil
			}
		}
	}
	slow := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "g0-0")
	next := map[string]int{}
	for n := 0; n < (groups-1)*per; {
		got := h.Receive("q.fifo", engine.ReceiveRequest{})
		if len(got) == 0 {
			h.Fatalf("stalled after %d messages", n)
		}
		for _, m := range got {
			want := fmt.Sprintf("%s-%d", m.MessageGroupID, next[m.MessageGroupID])
			if m.MessageGroupID == "g0" || m.Body != want {
				h.Fatalf("received %s, want %s next in its group (g0 is blocked)", m.Body, want)
			}
			next[m.MessageGroupID]++
		}
		n += len(got)
		h.DeleteAll("q.fifo", got)
	}
	h.ReceiveNone("q.fifo")
	h.DeleteAll("q.fifo", slow)
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "g0-1", "g0-2")
}

func testFIFOReceiveAttempt(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g1", "a"), Msg("g1", "b"), Msg("g2", "c"))
	att := engine.ReceiveRequest{Max: 2, AttemptID: "att-1"}
	first := h.WantBodies("q.fifo", att, "a", "b")
	same := func(what string, got []engine.Message) {
		h.Helper()
		if len(got) != len(first) {
			h.Fatalf("%s: %d messages, want %d", what, len(got), len(first))
		}
		for i := range got {
			if got[i].MessageID != first[i].MessageID || got[i].ReceiptHandle != first[i].ReceiptHandle ||
				got[i].ReceiveCount != first[i].ReceiveCount || got[i].Body != first[i].Body {
				h.Fatalf("%s: %+v, want %+v", what, got[i], first[i])
			}
		}
	}
	same("retry", h.Receive("q.fifo", att))
	// A retry restarts the visibility.
	h.Clk.Advance(20 * time.Second)
	same("retry after 20s", h.Receive("q.fifo", att))
	h.Clk.Advance(20 * time.Second)
	h.WantStats("q.fifo", 1, 2, 0)
	// Visible again but received by nobody since: still the same.
	h.Clk.Advance(10 * time.Second)
	h.WantStats("q.fifo", 3, 0, 0)
	same("retry after expiry", h.Receive("q.fifo", att))
	h.WantStats("q.fifo", 1, 2, 0)
	// Another attempt id is another receive.
	h.WantBodies("q.fifo", engine.ReceiveRequest{AttemptID: "att-2"}, "c")

	// Once one of them is deleted, the id makes a new receive.
	h.DeleteAll("q.fifo", first[:1])
	h.WantBodies("q.fifo", att)
	// ... whose result the id now repeats.
	if err := h.ChangeVisibility("q.fifo", first[1].ReceiptHandle, 0); err != nil {
		h.Fatal(err)
	}
	again := h.WantBodies("q.fifo", att, "b")
	if again[0].ReceiptHandle == first[1].ReceiptHandle {
		h.Fatal("a new receive reused the old handle")
	}
	if r := h.WantBodies("q.fifo", att, "b"); r[0].ReceiptHandle != again[0].ReceiptHandle {
		h.Fatal("retry of the new receive changed the handle")
	}
	// A visibility change also ends the repeat.
	if err := h.ChangeVisibility("q.fifo", again[0].ReceiptHandle, time.Minute); err != nil {
		h.Fatal(err)
	}
	h.WantBodies("q.fifo", att)

	// After the window an id no longer repeats anything.
	h.Create("r.fifo", FIFO)
	h.SendResults("r.fifo", Msg("g", "x"), Msg("g", "y"))
	hour := time.Hour
	long := engine.ReceiveRequest{Max: 1, AttemptID: "late", Visibility: &hour}
	x := h.WantBodies("r.fifo", long, "x")
	h.Clk.Advance(engine.DeduplicationWindow)
	h.WantBodies("r.fifo", long)
	h.DeleteAll("r.fifo", x)
	h.WantBodies("r.fifo", long, "y")
}

func testFIFOExpiredHandle(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g", "a"))
	old := h.ReceiveOne("q.fifo", engine.ReceiveRequest{})
	h.Clk.Advance(30 * time.Second)
	wantErr(h.T, "delete with an expired handle", h.Delete("q.fifo", old.ReceiptHandle)[0], engine.ErrReceiptHandleExpired)
	wantErr(h.T, "change with an expired handle", h.ChangeVisibility("q.fifo", old.ReceiptHandle, time.Minute), engine.ErrReceiptHandleExpired)
	cur := h.ReceiveOne("q.fifo", engine.ReceiveRequest{})
	wantErr(h.T, "delete with a superseded handle", h.Delete("q.fifo", old.ReceiptHandle)[0], engine.ErrReceiptHandleExpired)
	wantErr(h.T, "change with a superseded handle", h.ChangeVisibility("q.fifo", old.ReceiptHandle, 0), engine.ErrReceiptHandleExpired)
	errs := h.Delete("q.fifo", cur.ReceiptHandle, forge(cur.ReceiptHandle))
	if errs[0] != nil {
		h.Fatalf("delete with the current handle: %v", errs[0])
	}
	wantErr(h.T, "forged handle", errs[1], engine.ErrReceiptHandleInvalid)
	// The message is gone: deleting again is a no-op, as on standard queues.
	if err := h.Delete("q.fifo", cur.ReceiptHandle)[0]; err != nil {
		h.Fatalf("second delete: %v", err)
	}
	h.WantStats("q.fifo", 0, 0, 0)
}

func testFIFODelay(h *H) {
	h.Create("q.fifo", FIFOWith(func(s *engine.QueueSettings) { s.Delay = 10 * time.Second }))
	h.SendResults("q.fifo", Msg("g", "a"))
	h.Clk.Advance(5 * time.Second)
	h.SendResults("q.fifo", Msg("g", "b"), Msg("h", "c"))
	h.WantStats("q.fifo", 0, 0, 3)
	h.ReceiveNone("q.fifo")
	h.Clk.Advance(5 * time.Second)
	a := h.WantBodies("q.fifo", engine.ReceiveRequest{}, "a")
	h.DeleteAll("q.fifo", a)
	// A FIFO queue's delay is retroactive: it applies to queued messages.
	if err := h.B.UpdateQueue(h.Ctx, Account, "q.fifo", func(q *engine.Queue) error {
		q.Settings.Delay = 0
		return nil
	}); err != nil {
		h.Fatal(err)
	}
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "b", "c")
}

func testFIFOLongPoll(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g", "a"), Msg("g", "b"))
	a := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "a")
	vis := 10 * time.Second
	ch := h.StartWait(h.Ctx, "q.fifo", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second, Visibility: &vis})
	// The delete unblocks the group and hands b to the waiting receive.
	h.DeleteAll("q.fifo", a)
	r := h.Await(ch)
	if r.Err != nil || !slices.Equal(Bodies(r.Msgs), []string{"b"}) {
		h.Fatalf("long poll = %q, %v", Bodies(r.Msgs), r.Err)
	}
	// An expiry unblocks it too.
	ch = h.StartWait(h.Ctx, "q.fifo", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	h.Clk.Advance(vis)
	r = h.Await(ch)
	if r.Err != nil || !slices.Equal(Bodies(r.Msgs), []string{"b"}) || r.Msgs[0].ReceiveCount != 2 {
		h.Fatalf("long poll after expiry = %+v, %v", r.Msgs, r.Err)
	}
}

func testFIFOSequenceNumbers(h *H) {
	h.Create("q.fifo", FIFO)
	h.Create("std", nil)
	var last string
	for i := range 3 {
		for _, r := range h.SendResults("q.fifo", Msg("g", fmt.Sprint("a", i)), Msg("h", fmt.Sprint("b", i))) {
			if last != "" && !seqLess(last, r.SequenceNumber) {
				h.Fatalf("sequence number %s after %s", r.SequenceNumber, last)
			}
			last = r.SequenceNumber
		}
	}
	for _, m := range h.Receive("q.fifo", engine.ReceiveRequest{}) {
		if len(m.SequenceNumber) < 20 {
			h.Fatalf("received sequence number %q", m.SequenceNumber)
		}
	}
	// Standard queues have none, even with a group id (fair queues).
	res, err := h.B.Send(h.Ctx, Account, "std", []engine.NewMessage{{Body: "s", MessageGroupID: "tenant"}})
	if err != nil || res[0].SequenceNumber != "" || res[0].Duplicate {
		h.Fatalf("standard send = %+v, %v", res, err)
	}
	if m := h.ReceiveOne("std", engine.ReceiveRequest{}); m.SequenceNumber != "" || m.MessageGroupID != "tenant" {
		h.Fatalf("standard message %+v", m)
	}
}

func testFIFORedrive(h *H) {
	h.Create("dlq.fifo", FIFO)
	h.Create("src.fifo", FIFOWith(RedriveTo("dlq.fifo", 1)))
	res := h.SendResults("src.fifo", Msg("g1", "a"), Msg("g1", "b"), Msg("g2", "c"))
	// The dead-letter queue's own window must not swallow the move.
	h.SendResults("dlq.fifo", engine.NewMessage{Body: "decoy", MessageGroupID: "g9", DeduplicationID: res[0].MessageID})
	h.WantBodies("src.fifo", engine.ReceiveRequest{Max: 1}, "a")
	h.Clk.Advance(time.Hour)
	moveAt := h.Clk.Now()
	// a is over the maximum: it moves, and its group is unblocked at once.
	got := h.WantBodies("src.fifo", engine.ReceiveRequest{Max: 1}, "b")
	h.DeleteAll("src.fifo", got)
	h.WantStats("dlq.fifo", 2, 0, 0)
	dl := h.WantBodies("dlq.fifo", engine.ReceiveRequest{}, "decoy", "a")
	m := dl[1]
	if m.MessageID != res[0].MessageID || m.MessageGroupID != "g1" || m.DeduplicationID != res[0].MessageID ||
		!m.SentAt.Equal(moveAt) || m.ReceiveCount != 2 || m.DeadLetterSourceARN != ARN("src.fifo") ||
		!seqLess(dl[0].SequenceNumber, m.SequenceNumber) {
		h.Fatalf("moved message %+v (sent %+v, moved at %v)", m, res[0], moveAt)
	}
	// FIFO dead-letter retention counts from the move.
	h.DeleteAll("dlq.fifo", dl[:1])
	if err := h.B.UpdateQueue(h.Ctx, Account, "dlq.fifo", func(q *engine.Queue) error {
		q.Settings.Retention = 2 * time.Hour
		return nil
	}); err != nil {
		h.Fatal(err)
	}
	h.Clk.Advance(90 * time.Minute)
	h.WantStats("dlq.fifo", 1, 0, 0)
	h.Clk.Advance(30 * time.Minute)
	h.WantStats("dlq.fifo", 0, 0, 0)
	h.WantBodies("src.fifo", engine.ReceiveRequest{}, "c")
}

// testFIFORedriveKeepsOrder moves a group's messages one after the other:
// they keep their order in the dead-letter queue.
func testFIFORedriveKeepsOrder(h *H) {
	h.Create("dlq.fifo", FIFO)
	h.Create("src.fifo", FIFOWith(RedriveTo("dlq.fifo", 1)))
	h.SendResults("src.fifo", Msg("g", "a"), Msg("g", "b"), Msg("g", "c"), Msg("h", "d"))
	h.WantBodies("src.fifo", engine.ReceiveRequest{}, "a", "b", "c", "d")
	h.Clk.Advance(time.Minute)
	// Every message is over the maximum: all move, none is handed out.
	h.ReceiveNone("src.fifo")
	h.WantStats("src.fifo", 0, 0, 0)
	h.WantBodies("dlq.fifo", engine.ReceiveRequest{}, "a", "b", "c", "d")
}

func testFIFOMoveTask(h *H) {
	h.Create("dlq.fifo", FIFO)
	h.Create("dst.fifo", FIFO)
	var batch []engine.NewMessage
	for i := range 4 {
		batch = append(batch, Msg("g1", fmt.Sprint("a", i)), Msg("g2", fmt.Sprint("b", i)))
	}
	batch = append(batch, Msg("g3", "c0"))
	sent := h.SendResults("dlq.fifo", batch...)
	// The destination's window does not drop a moved message.
	h.SendResults("dst.fifo", Msg("g9", "a0"))
	h.Clk.Advance(time.Minute)
	// A message received in the dead-letter queue and visible again moves
	// like the others, as a new message.
	a0 := h.WantBodies("dlq.fifo", engine.ReceiveRequest{Max: 1}, "a0")
	if err := h.ChangeVisibility("dlq.fifo", a0[0].ReceiptHandle, 0); err != nil {
		h.Fatal(err)
	}
	task := h.StartTask(engine.MoveTask{SourceName: "dlq.fifo", DestinationARN: ARN("dst.fifo")})
	if task.ToMove != int64(len(batch)) {
		h.Fatalf("ToMove = %d", task.ToMove)
	}
	end := h.WaitEnded("dlq.fifo", task.ID)
	if end.Status != engine.MoveTaskCompleted || end.Moved != int64(len(batch)) {
		h.Fatalf("task ended %+v", end)
	}
	h.WaitStats("dst.fifo", int64(len(batch))+1, 0, 0)
	byBody := map[string]engine.SendResult{}
	for i, r := range sent {
		byBody[batch[i].Body] = r
	}
	got := h.Receive("dst.fifo", engine.ReceiveRequest{})
	got = append(got, h.Receive("dst.fifo", engine.ReceiveRequest{})...)
	perGroup := map[string][]string{}
	var last string
	for _, m := range got {
		perGroup[m.MessageGroupID] = append(perGroup[m.MessageGroupID], m.Body)
		if m.MessageGroupID == "g9" {
			continue
		}
		orig := byBody[m.Body]
		if m.MessageID == orig.MessageID || m.DeduplicationID != "dedup-"+m.Body || !m.SentAt.Equal(h.Clk.Now()) ||
			m.ReceiveCount != 1 || m.SequenceNumber == "" {
			h.Fatalf("moved message %+v, original %+v", m, orig)
		}
		if last != "" && m.MessageGroupID == "g1" && !seqLess(last, m.SequenceNumber) {
			h.Fatalf("sequence numbers out of order in g1")
		}
		if m.MessageGroupID == "g1" {
			last = m.SequenceNumber
		}
	}
	want := map[string][]string{
		"g1": {"a0", "a1", "a2", "a3"}, "g2": {"b0", "b1", "b2", "b3"}, "g3": {"c0"}, "g9": {"a0"},
	}
	for g, w := range want {
		if !slices.Equal(perGroup[g], w) {
			h.Fatalf("group %s arrived as %q, want %q", g, perGroup[g], w)
		}
	}
	h.WantStats("dlq.fifo", 0, 0, 0)
}

// testFIFOProperty runs producers and consumers on many groups. Consumers
// fail at random (no delete, or visibility 0), stop working on a group once
// they have failed on one of its messages (as a FIFO consumer must), and
// move the fake clock when idle, so visibility expires. Afterwards every
// group's messages must have been deleted, in send order, and no message
// may have been received after its delete: the receive count of the handle
// that deleted it is the highest any receive of it ever showed. (Deletes
// of one group are serialised by the group's lock, so the first delete
// that succeeds is the real one; later ones hold stale handles.)
func testFIFOProperty(h *H) {
	h.Create("q.fifo", FIFOWith(func(s *engine.QueueSettings) { s.VisibilityTimeout = 5 * time.Second }))
	const (
		producers = 4
		consumers = 6
		groups    = 24
		perGroup  = 25
	)
	type groupLog struct {
		mu       sync.Mutex
		sent     []string       // message ids in send order
		deleted  []string       // in delete order
		gone     map[string]int // receive count of the deleting handle
		received map[string]int // highest receive count seen
	}
	logs := make([]*groupLog, groups)
	for i := range logs {
		logs[i] = &groupLog{gone: map[string]int{}, received: map[string]int{}}
	}
	groupOf := func(m engine.Message) *groupLog {
		var g int
		if _, err := fmt.Sscanf(m.MessageGroupID, "g%d", &g); err != nil || g < 0 || g >= groups {
			h.Errorf("unexpected group %q", m.MessageGroupID)
			return nil
		}
		return logs[g]
	}
	ctx, cancel := context.WithTimeout(h.Ctx, 2*time.Minute)
	defer cancel()
	// expected counts the messages enqueued, resends after the window
	// included; producing tells consumers that more may come.
	var deleted, expected, producing atomic.Int64
	producing.Store(producers)
	var wg sync.WaitGroup
	fail := func(format string, args ...any) {
		h.Errorf(format, args...)
		cancel()
	}

	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer producing.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			next := make([]int, groups)
			for {
				var batch []engine.NewMessage
				for range 1 + rng.IntN(10) {
					g := p + producers*rng.IntN(groups/producers)
					if next[g] == perGroup {
						continue
					}
					batch = append(batch, Msg(fmt.Sprint("g", g), fmt.Sprintf("g%d-%d", g, next[g])))
					next[g]++
				}
				if len(batch) == 0 {
					done := true
					for g := p; g < groups; g += producers {
						done = done && next[g] == perGroup
					}
					if done {
						return
					}
					continue
				}
				record := func(i int, r engine.SendResult) {
					var g int
					fmt.Sscanf(batch[i].MessageGroupID, "g%d", &g)
					logs[g].mu.Lock()
					logs[g].sent = append(logs[g].sent, r.MessageID)
					logs[g].mu.Unlock()
					expected.Add(1)
				}
				before := h.Clk.Now()
				res, err := h.B.Send(ctx, Account, "q.fifo", batch)
				if err != nil {
					fail("send: %v", err)
					return
				}
				for i, r := range res {
					if r.Duplicate {
						fail("fresh message %s reported as a duplicate", batch[i].Body)
						return
					}
					record(i, r)
				}
				// A producer retrying the same batch within the window
				// enqueues nothing; after it, the retry is new messages.
				if rng.IntN(4) == 0 {
					again, err := h.B.Send(ctx, Account, "q.fifo", batch)
					if err != nil {
						fail("resend: %v", err)
						return
					}
					within := h.Clk.Now().Sub(before) < engine.DeduplicationWindow
					for i, r := range again {
						switch {
						case r.Duplicate && r.MessageID == res[i].MessageID:
						case within || r.Duplicate:
							fail("resend of %s = %+v, first sent as %s", batch[i].Body, r, res[i].MessageID)
							return
						default:
							record(i, r)
						}
					}
				}
			}
		}()
	}

	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 2))
			for ctx.Err() == nil && (producing.Load() > 0 || deleted.Load() < expected.Load()) {
				msgs, err := h.B.Receive(ctx, Account, "q.fifo", engine.ReceiveRequest{Max: 1 + rng.IntN(10)})
				if err != nil {
					fail("receive: %v", err)
					return
				}
				if len(msgs) == 0 {
					if rng.IntN(3) == 0 {
						h.Clk.Advance(time.Second)
					}
					runtime.Gosched()
					continue
				}
				failed := map[string]bool{}
				lastSeq := map[string]string{}
				for _, m := range msgs {
					gl := groupOf(m)
					if gl == nil {
						cancel()
						return
					}
					if s, ok := lastSeq[m.MessageGroupID]; ok && !seqLess(s, m.SequenceNumber) {
						fail("batch out of order in %s", m.MessageGroupID)
						return
					}
					lastSeq[m.MessageGroupID] = m.SequenceNumber
					gl.mu.Lock()
					gl.received[m.MessageID] = max(gl.received[m.MessageID], m.ReceiveCount)
					gl.mu.Unlock()
					if failed[m.MessageGroupID] {
						continue
					}
					switch r := rng.IntN(10); {
					case r == 0:
						failed[m.MessageGroupID] = true // let it expire
						continue
					case r == 1:
						failed[m.MessageGroupID] = true
						errs, err := h.B.ChangeVisibility(ctx, Account, "q.fifo", []engine.VisibilityChange{{ReceiptHandle: m.ReceiptHandle}})
						// Expired, or gone (deleted through a later handle).
						if err != nil || (errs[0] != nil && !errors.Is(errs[0], engine.ErrReceiptHandleExpired) &&
							!errors.Is(errs[0], engine.ErrMessageNotInflight)) {
							fail("change visibility: %v %v", errs, err)
							return
						}
						continue
					}
					// The group's lock orders the log as the deletes happen.
					gl.mu.Lock()
					errs, err := h.B.Delete(ctx, Account, "q.fifo", []string{m.ReceiptHandle})
					switch {
					case err != nil:
						gl.mu.Unlock()
						fail("delete: %v", err)
						return
					case errs[0] == nil:
						if _, ok := gl.gone[m.MessageID]; !ok {
							gl.gone[m.MessageID] = m.ReceiveCount
							gl.deleted = append(gl.deleted, m.MessageID)
							deleted.Add(1)
						}
					case errors.Is(errs[0], engine.ErrReceiptHandleExpired):
						failed[m.MessageGroupID] = true
					default:
						gl.mu.Unlock()
						fail("delete: %v", errs[0])
						return
					}
					gl.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if h.Failed() {
		h.FailNow()
	}
	if ctx.Err() != nil {
		h.Fatalf("timed out with %d of %d deleted", deleted.Load(), expected.Load())
	}
	for g, gl := range logs {
		if len(gl.sent) < perGroup || !slices.Equal(gl.deleted, gl.sent) {
			h.Fatalf("group g%d: sent %d, deleted %d, in send order: %v", g, len(gl.sent), len(gl.deleted), slices.Equal(gl.deleted, gl.sent))
		}
		for id, n := range gl.gone {
			if gl.received[id] != n {
				h.Fatalf("message %s deleted through receive %d, received again later (receive %d)", id, n, gl.received[id])
			}
		}
	}
	h.Clk.Advance(time.Minute)
	h.WantStats("q.fifo", 0, 0, 0)
	h.ReceiveNone("q.fifo")
}
