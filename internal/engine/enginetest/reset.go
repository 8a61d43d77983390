package enginetest

import (
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

var resetTests = []test{
	{"ResetQueuesAccount", testResetAccount},
	{"ResetQueuesSpare", testResetSpare},
	{"ResetQueuesRestart", testResetRestart},
	{"WaitsOff", testWaitsOff},
}

// otherAccount holds queues a reset of Account must leave.
const otherAccount = "000000000000"

// fillForReset gives Account a standard queue with messages and a long
// poll on it, a purged queue, a FIFO queue with a deduplication key, a
// dead-letter queue with a running move task, and a deleted name; and
// otherAccount a queue with a message. It returns the long poll.
func fillForReset(h *H) <-chan Result {
	h.Helper()
	h.Create("std", nil)
	h.SendBodies("std", "a", "b")
	h.Create("purged", nil)
	if err := h.B.Purge(h.Ctx, Account, "purged"); err != nil {
		h.Fatal(err)
	}
	h.Create("fifo.fifo", func(s *engine.QueueSettings) { s.FIFO = true })
	h.Send("fifo.fifo", engine.NewMessage{Body: "f", MessageGroupID: "g", DeduplicationID: "d"})
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "1", "2", "3")
	// One message a second on a clock that stands still: it keeps running.
	h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1})
	h.Create("gone", nil)
	if err := h.B.DeleteQueue(h.Ctx, Account, "gone"); err != nil {
		h.Fatal(err)
	}
	if _, _, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: otherAccount, Name: "std", Settings: Settings()}); err != nil {
		h.Fatal(err)
	}
	if _, err := h.B.Send(h.Ctx, otherAccount, "std", []engine.NewMessage{Plain("kept")}); err != nil {
		h.Fatal(err)
	}
	h.Create("polled", nil)
	return h.StartWait(h.Ctx, "polled", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
}

// wantReset checks that Account starts afresh: no queue, every name
// free at once, nothing of the old queues in the new ones.
func wantReset(h *H) {
	h.Helper()
	if qs := h.ListQueues(); len(qs) != 0 {
		h.Fatalf("queues left after the reset: %+v", qs)
	}
	for _, name := range []string{"std", "purged", "fifo.fifo", "dlq", "gone", "polled"} {
		h.Create(name, func(s *engine.QueueSettings) { s.FIFO = name == "fifo.fifo" })
		h.WantStats(name, 0, 0, 0)
	}
	h.ReceiveNone("std")
	if err := h.B.Purge(h.Ctx, Account, "purged"); err != nil {
		h.Fatalf("purge of a queue purged before the reset: %v", err)
	}
	res := h.SendResults("fifo.fifo", engine.NewMessage{Body: "f", MessageGroupID: "g", DeduplicationID: "d"})
	if res[0].Duplicate {
		h.Fatal("the deduplication window outlived the reset")
	}
	tasks, err := h.B.ListMoveTasks(h.Ctx, Account, "dlq")
	if err != nil || len(tasks) != 0 {
		h.Fatalf("move tasks after the reset: %+v, %v", tasks, err)
	}
}

// only picks account for ResetQueues, allBut every account but one.
func only(account string) func(string) bool   { return func(a string) bool { return a == account } }
func allBut(account string) func(string) bool { return func(a string) bool { return a != account } }

func testResetAccount(h *H) {
	poll := fillForReset(h)
	n, err := h.B.ResetQueues(h.Ctx, only(Account))
	if err != nil || n != 6 {
		h.Fatalf("ResetQueues = %d, %v; want 6", n, err)
	}
	if r := h.Await(poll); len(r.Msgs) != 0 {
		h.Fatalf("long poll on a removed queue: %+v", r)
	}
	wantReset(h)
	s, err := h.B.Stats(h.Ctx, otherAccount, "std")
	if err != nil || s.Visible != 1 {
		h.Fatalf("the other account's queue: %+v, %v", s, err)
	}
	// A second reset of an account without queues removes nothing.
	if n, err := h.B.ResetQueues(h.Ctx, only("999999999999")); err != nil || n != 0 {
		h.Fatalf("ResetQueues of an empty account = %d, %v", n, err)
	}
}

func testResetSpare(h *H) {
	poll := fillForReset(h)
	if _, _, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: "111111111111", Name: "x", Settings: Settings()}); err != nil {
		h.Fatal(err)
	}
	n, err := h.B.ResetQueues(h.Ctx, allBut(otherAccount))
	if err != nil || n != 7 {
		h.Fatalf("ResetQueues = %d, %v; want 7", n, err)
	}
	h.Await(poll)
	wantReset(h)
	if _, err := h.B.GetQueue(h.Ctx, "111111111111", "x"); err != engine.ErrQueueNotFound {
		h.Fatalf("third account's queue: %v", err)
	}
	if s, err := h.B.Stats(h.Ctx, otherAccount, "std"); err != nil || s.Visible != 1 {
		h.Fatalf("the spared account's queue: %+v, %v", s, err)
	}
	if n, err := h.B.ResetQueues(h.Ctx, func(string) bool { return true }); err != nil || n != 7 {
		h.Fatalf("ResetQueues of everything = %d, %v; want 7", n, err)
	}
	if _, err := h.B.GetQueue(h.Ctx, otherAccount, "std"); err != engine.ErrQueueNotFound {
		h.Fatalf("queue left by a reset of everything: %v", err)
	}
}

// testResetRestart: what a reset removed stays removed across a restart,
// the reserved names included.
func testResetRestart(h *H) {
	h.NeedDurable()
	poll := fillForReset(h)
	if _, err := h.B.ResetQueues(h.Ctx, only(Account)); err != nil {
		h.Fatal(err)
	}
	h.Await(poll)
	h.Restart(0)
	wantReset(h)
}

// testWaitsOff: with the waits off, a deleted name is free at once and a
// queue may be purged again at once; the zero Waits is AWS's (see
// testRecreateDelay and testPurge).
func testWaitsOff(h *H) {
	if h.d.OpenWaits == nil {
		h.Skip("the driver cannot open a store with the waits off (Driver.OpenWaits is nil)")
	}
	_ = h.B.Close()
	h.B = h.d.OpenWaits(h.T, h.Clk, engine.Waits{NoRecreateDelay: true, NoPurgeInterval: true})
	h.B.OnMovedByTask(h.moved.record)
	h.Cleanup(func() { _ = h.B.Close() })
	h.Create("q", nil)
	h.SendBodies("q", "old")
	if err := h.B.DeleteQueue(h.Ctx, Account, "q"); err != nil {
		h.Fatal(err)
	}
	h.Create("q", nil)
	h.WantStats("q", 0, 0, 0)
	h.SendBodies("q", "a")
	for i := range 2 {
		if err := h.B.Purge(h.Ctx, Account, "q"); err != nil {
			h.Fatalf("purge %d: %v", i+1, err)
		}
	}
	h.WantStats("q", 0, 0, 0)
}
