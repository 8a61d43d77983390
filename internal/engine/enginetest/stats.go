package enginetest

import (
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// Queue statistics beyond the counts: the oldest message's entry time and
// FIFO groups in flight, as SQS's CloudWatch metrics define them.

// counts keeps the three message counts of s.
func counts(s engine.Stats) engine.Stats {
	return engine.Stats{Visible: s.Visible, NotVisible: s.NotVisible, Delayed: s.Delayed}
}

// WantOldest checks Stats.OldestAt (zero: no message counts).
func (h *H) WantOldest(name string, at time.Time) {
	h.Helper()
	s, err := h.B.Stats(h.Ctx, Account, name)
	if err != nil {
		h.Fatalf("Stats(%s): %v", name, err)
	}
	if !s.OldestAt.Equal(at) {
		h.Fatalf("Stats(%s).OldestAt = %v, want %v", name, s.OldestAt, at)
	}
}

// WantGroupsInFlight checks Stats.GroupsInFlight.
func (h *H) WantGroupsInFlight(name string, n int64) {
	h.Helper()
	s, err := h.B.Stats(h.Ctx, Account, name)
	if err != nil {
		h.Fatalf("Stats(%s): %v", name, err)
	}
	if s.GroupsInFlight != n {
		h.Fatalf("Stats(%s).GroupsInFlight = %d, want %d", name, s.GroupsInFlight, n)
	}
}

// testStatsOldest: the oldest message counts from its send, whether
// visible, delayed or in flight, until it has been received
// engine.OldestMaxReceives times; then the next oldest counts.
func testStatsOldest(h *H) {
	h.Create("q", nil)
	h.WantOldest("q", time.Time{})
	t0 := h.Clk.Now()
	h.SendBodies("q", "a")
	zero := time.Duration(0)
	for i := 1; i < engine.OldestMaxReceives; i++ {
		h.Clk.Advance(time.Second)
		h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &zero})
		h.WantOldest("q", t0)
	}
	h.Clk.Advance(time.Second)
	t1 := h.Clk.Now()
	delay := time.Minute
	h.Send("q", engine.NewMessage{Body: "b", MD5OfBody: "md5-b", Delay: &delay})
	h.WantStats("q", 1, 0, 1)
	h.WantOldest("q", t0)
	// The receive that reaches the count takes a out of the age, in flight
	// or visible again, until it is deleted.
	hour := time.Hour
	a := h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &hour})
	if a.Body != "a" || a.ReceiveCount != engine.OldestMaxReceives {
		h.Fatalf("received %q, count %d", a.Body, a.ReceiveCount)
	}
	h.WantOldest("q", t1)
	h.Clk.Advance(2 * time.Hour)
	h.WantStats("q", 2, 0, 0)
	h.WantOldest("q", t1)
	b := h.ReceiveOne("q", engine.ReceiveRequest{Max: 1, Visibility: &hour})
	if b.Body != "b" {
		h.Fatalf("received %q, want b", b.Body)
	}
	h.WantOldest("q", t1)
	h.Delete("q", b.ReceiptHandle)
	h.WantOldest("q", time.Time{})
	h.SendBodies("q", "c")
	h.WantOldest("q", h.Clk.Now())
	h.Clk.Advance(time.Minute)
	if err := h.B.Purge(h.Ctx, Account, "q"); err != nil {
		h.Fatal(err)
	}
	h.WantOldest("q", time.Time{})
}

// testStatsOldestRedrive: in a standard dead-letter queue a moved message
// counts from its move (its SentAt stays the original), and its receives
// count from there too; a message sent to the dead-letter queue by hand
// counts from its send.
func testStatsOldestRedrive(h *H) {
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 1))
	t0 := h.Clk.Now()
	h.SendBodies("src", "poison")
	zero := time.Duration(0)
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	h.Clk.Advance(time.Hour)
	movedAt := h.Clk.Now()
	h.ReceiveNone("src")
	h.WantStats("dlq", 1, 0, 0)
	h.WantOldest("dlq", movedAt)
	h.WantOldest("src", time.Time{})
	h.Clk.Advance(time.Minute)
	sentAt := h.Clk.Now()
	h.SendBodies("dlq", "manual")
	h.WantOldest("dlq", movedAt)

	// Receives count from the move: at its third receive in all, its
	// second in the dead-letter queue, it still counts.
	hour := time.Hour
	var poison engine.Message
	for i := 1; i < engine.OldestMaxReceives; i++ {
		h.Clk.Advance(2 * time.Hour)
		got := h.Receive("dlq", engine.ReceiveRequest{Visibility: &hour})
		if len(got) != 2 {
			h.Fatalf("received %d messages from the dead-letter queue", len(got))
		}
		for _, m := range got {
			if m.Body == "poison" {
				poison = m
			}
		}
		if !poison.SentAt.Equal(t0) || poison.ReceiveCount != 1+i {
			h.Fatalf("moved message: sent %v, count %d", poison.SentAt, poison.ReceiveCount)
		}
		h.WantOldest("dlq", movedAt)
	}
	h.Delete("dlq", poison.ReceiptHandle)
	h.WantOldest("dlq", sentAt)
	h.Clk.Advance(2 * time.Hour)
	h.ReceiveOne("dlq", engine.ReceiveRequest{})
	h.WantOldest("dlq", time.Time{})
}

// testStatsFIFOOldestRedrive: a FIFO dead-letter queue counts from the
// move too (there SentAt is reset to the move).
func testStatsFIFOOldestRedrive(h *H) {
	h.Create("dlq.fifo", FIFO)
	h.Create("src.fifo", FIFOWith(RedriveTo("dlq.fifo", 1)))
	h.SendResults("src.fifo", Msg("g1", "a"))
	h.WantBodies("src.fifo", engine.ReceiveRequest{}, "a")
	h.Clk.Advance(time.Hour)
	moveAt := h.Clk.Now()
	h.WantBodies("src.fifo", engine.ReceiveRequest{})
	h.WantStats("dlq.fifo", 1, 0, 0)
	h.WantOldest("dlq.fifo", moveAt)
	h.WantOldest("src.fifo", time.Time{})
	got := h.WantBodies("dlq.fifo", engine.ReceiveRequest{}, "a")
	h.WantOldest("dlq.fifo", moveAt)
	h.DeleteAll("dlq.fifo", got)
	h.WantOldest("dlq.fifo", time.Time{})
}

// testStatsFIFOGroupsInFlight counts the groups with a message in flight
// through receives, deletes, visibility changes and expiries.
func testStatsFIFOGroupsInFlight(h *H) {
	h.Create("q.fifo", FIFO)
	h.WantGroupsInFlight("q.fifo", 0)
	h.SendResults("q.fifo", Msg("g1", "a"), Msg("g1", "b"), Msg("g2", "c"), Msg("g3", "d"))
	h.WantGroupsInFlight("q.fifo", 0)
	a := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "a")
	h.WantGroupsInFlight("q.fifo", 1)
	// g1 is blocked: the rest of the receive comes from g2 and g3.
	cd := h.WantBodies("q.fifo", engine.ReceiveRequest{}, "c", "d")
	h.WantGroupsInFlight("q.fifo", 3)
	h.WantStats("q.fifo", 1, 3, 0)
	h.DeleteAll("q.fifo", a)
	h.WantGroupsInFlight("q.fifo", 2)
	if err := h.ChangeVisibility("q.fifo", cd[0].ReceiptHandle, 0); err != nil {
		h.Fatal(err)
	}
	h.WantGroupsInFlight("q.fifo", 1)
	bc := h.WantBodies("q.fifo", engine.ReceiveRequest{}, "b", "c")
	h.WantGroupsInFlight("q.fifo", 3)
	h.DeleteAll("q.fifo", bc[:1])
	h.WantGroupsInFlight("q.fifo", 2)
	// The default visibility timeout (30 s) ends for c and d.
	h.Clk.Advance(31 * time.Second)
	h.WantGroupsInFlight("q.fifo", 0)
	h.WantStats("q.fifo", 2, 0, 0)
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "c", "d")
	h.WantGroupsInFlight("q.fifo", 2)
	h.Clk.Advance(time.Minute)
	if err := h.B.Purge(h.Ctx, Account, "q.fifo"); err != nil {
		h.Fatal(err)
	}
	h.WantGroupsInFlight("q.fifo", 0)
}
