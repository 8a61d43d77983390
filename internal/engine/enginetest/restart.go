package enginetest

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// Restarts (Driver.Reopen) and crashes (Driver.Crash): what a store has
// acknowledged survives them.

var restartTests = []test{
	{"RestartKeepsQueues", testRestartQueues},
	{"RestartKeepsMessages", testRestartMessages},
	{"RestartExpiresWhileClosed", testRestartExpires},
	{"RestartKeepsDeletes", testRestartDeletes},
	{"RestartKeepsStats", testRestartStats},
	{"RestartRedrive", testRestartRedrive},
	{"RestartFIFO", testRestartFIFO},
	{"RestartSendMany", testRestartSendMany},
	{"RestartMoveTaskResumes", testRestartMoveTask},
	{"RestartMoveTaskHeld", testRestartMoveTaskHeld},
	{"RestartMoveTaskCancelling", testRestartMoveTaskCancelling},
	{"RestartRecordsAndPoints", testRestartRecords},
	{"CrashKeepsAcknowledged", testCrashAcknowledged},
	{"CrashMoveTask", testCrashMoveTask},
}

// ListQueues lists the queues of Account.
func (h *H) ListQueues() []engine.Queue {
	h.Helper()
	qs, err := h.B.ListQueues(h.Ctx, Account, "")
	if err != nil {
		h.Fatalf("ListQueues: %v", err)
	}
	return qs
}

// NeedDurable skips the test unless the driver can restart the store.
func (h *H) NeedDurable() {
	h.Helper()
	if h.d.Reopen == nil {
		h.Skip("the store keeps nothing across a restart (Driver.Reopen is nil)")
	}
}

// NeedCrash skips the test unless the driver can crash the store.
func (h *H) NeedCrash() {
	h.Helper()
	if h.d.Crash == nil {
		h.Skip("the driver cannot crash the store (Driver.Crash is nil)")
	}
}

// Restart closes the store, lets the clock run for closed while it is
// down, and opens it again on the same data, telling it OnMovedByTask
// first, as the server does.
func (h *H) Restart(closed time.Duration) {
	h.Helper()
	h.ReopenHeld(closed)
	h.Resume()
}

// ReopenHeld is Restart without the OnMovedByTask call: the move tasks
// the new store resumes are still held.
func (h *H) ReopenHeld(closed time.Duration) {
	h.Helper()
	h.NeedDurable()
	if err := h.B.Close(); err != nil {
		h.Fatalf("Close: %v", err)
	}
	h.Clk.Advance(closed)
	h.B = h.d.Reopen(h.T, h.Clk, h.B)
}

// Crash stops the store as a crash would and opens it again on what it
// had made durable, telling it OnMovedByTask first.
func (h *H) Crash() {
	h.Helper()
	h.CrashHeld()
	h.Resume()
}

// CrashHeld is Crash without the OnMovedByTask call. What the old store's
// hook was told is forgotten: the crash takes the process, and the
// counters the hook feeds, with it.
func (h *H) CrashHeld() {
	h.Helper()
	h.NeedCrash()
	h.B = h.d.Crash(h.T, h.Clk, h.B)
	h.moved = &movedLog{}
}

// Resume tells the store OnMovedByTask, as the server does once it has
// opened it: the move tasks it holds start.
func (h *H) Resume() { h.B.OnMovedByTask(h.moved.record) }

// createRestartQueues creates the queues of testRestartQueues and
// testCrashAcknowledged: every setting, a purged queue and a deleted one.
func createRestartQueues(h *H) {
	h.Helper()
	s := Settings()
	s.VisibilityTimeout = time.Minute
	s.Delay = 5 * time.Second
	s.ReceiveWait = 10 * time.Second
	s.MaximumSize = 1024
	if _, created, err := h.B.CreateQueue(h.Ctx, engine.Queue{
		Account:    Account,
		Name:       "q",
		ARN:        ARN("q"),
		Attributes: map[string]string{"VisibilityTimeout": "60", "DelaySeconds": "5"},
		Tags:       map[string]string{"env": "test"},
		Settings:   s,
		Created:    Start,
		Modified:   Start,
	}); err != nil || !created {
		h.Fatalf("CreateQueue(q): %v %v", created, err)
	}
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 3))
	h.Create("g.fifo", FIFOWith(func(s *engine.QueueSettings) { s.DeduplicationScope = engine.DeduplicationScopeMessageGroup }))
	h.Create("purged", nil)
	h.Create("gone", nil)
	h.SendBodies("gone", "x")
	if err := h.B.DeleteQueue(h.Ctx, Account, "gone"); err != nil {
		h.Fatal(err)
	}
	if err := h.B.Purge(h.Ctx, Account, "purged"); err != nil {
		h.Fatal(err)
	}
	if err := h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Tags = map[string]string{"env": "test", "owner": "me"}
		q.Modified = Start.Add(time.Second)
		return nil
	}); err != nil {
		h.Fatal(err)
	}
}

// wantRestartQueues checks, after a restart or crash, the queues
// createRestartQueues made as they were before, the deleted one's name
// still reserved and the purged one's interval still running.
func wantRestartQueues(h *H, before []engine.Queue) {
	h.Helper()
	if after := h.ListQueues(); !reflect.DeepEqual(before, after) {
		h.Fatalf("queues changed:\n%+v\n%+v", before, after)
	}
	_, err := h.B.GetQueue(h.Ctx, Account, "gone")
	wantErr(h.T, "the deleted queue", err, engine.ErrQueueNotFound)
	_, _, err = h.B.CreateQueue(h.Ctx, engine.Queue{Account: Account, Name: "gone", Settings: Settings()})
	wantErr(h.T, "create the deleted queue again at once", err, engine.ErrQueueDeletedRecently)
	wantErr(h.T, "purge again at once", h.B.Purge(h.Ctx, Account, "purged"), engine.ErrPurgeInProgress)
	h.Clk.Advance(engine.RecreateDelay)
	h.Create("gone", nil)
	h.WantStats("gone", 0, 0, 0)
	if err := h.B.Purge(h.Ctx, Account, "purged"); err != nil {
		h.Fatalf("purge after the interval: %v", err)
	}
}

func testRestartQueues(h *H) {
	h.NeedDurable()
	createRestartQueues(h)
	before := h.ListQueues()
	h.Restart(0)
	wantRestartQueues(h, before)
}

// testRestartMessages: visible, delayed and in-flight messages come back
// as they were (content, ids, receive counts, first receives, deadlines),
// pre-restart receipt handles keep working, deleted messages stay deleted
// and new ids are new.
func testRestartMessages(h *H) {
	h.NeedDurable()
	h.Create("q", func(s *engine.QueueSettings) { s.VisibilityTimeout = time.Minute })
	delay := time.Hour
	rich := richMessage("visible")
	ids := h.Send("q", Plain("kept"), Plain("expires"), Plain("deleted"), rich, engine.NewMessage{Body: "delayed", Delay: &delay})
	h.Clk.Advance(time.Second)
	got := h.WantBodies("q", engine.ReceiveRequest{Max: 3}, "kept", "expires", "deleted")
	h.DeleteAll("q", got[2:])
	h.WantStats("q", 1, 2, 1)

	h.Restart(0)
	h.WantStats("q", 1, 2, 1)
	// A pre-restart handle still works: kept stays hidden two more minutes.
	if err := h.ChangeVisibility("q", got[0].ReceiptHandle, 2*time.Minute); err != nil {
		h.Fatalf("change with a pre-restart handle: %v", err)
	}
	hour := time.Hour
	m := h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &hour})
	sameContent(h, m, rich)
	if m.MessageID != ids[3] || !m.SentAt.Equal(Start) || m.ReceiveCount != 1 {
		h.Fatalf("visible message after the restart: %+v", m)
	}
	// expires: hidden until its visibility timeout ends, a minute after
	// its receive.
	h.Clk.Advance(59 * time.Second)
	h.WantStats("q", 0, 3, 1)
	h.Clk.Advance(time.Second)
	again := h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &hour})
	if again.MessageID != ids[1] || again.ReceiveCount != 2 || !again.FirstReceiveAt.Equal(got[1].FirstReceiveAt) {
		h.Fatalf("in-flight message after the restart: %+v, received first as %+v", again, got[1])
	}
	// Its pre-restart handle is superseded: it deletes nothing.
	if errs := h.Delete("q", got[1].ReceiptHandle); errs[0] != nil {
		h.Fatal(errs[0])
	}
	h.WantStats("q", 0, 3, 1)
	h.Clk.Advance(time.Minute)
	if k := h.ReceiveOne("q", engine.ReceiveRequest{}); k.MessageID != ids[0] || k.ReceiveCount != 2 {
		h.Fatalf("kept after its changed visibility: %+v", k)
	}
	// After the delay all four are there, and the deleted one is not.
	h.Clk.Advance(2 * time.Hour)
	all := h.ReceiveAll("q")
	gotIDs := make([]string, len(all))
	for i, m := range all {
		gotIDs[i] = m.MessageID
	}
	slices.Sort(gotIDs)
	wantIDs := []string{ids[0], ids[1], ids[3], ids[4]}
	slices.Sort(wantIDs)
	if !slices.Equal(gotIDs, wantIDs) {
		h.Fatalf("after the delay: %v, want %v", gotIDs, wantIDs)
	}
	if fresh := h.SendBodies("q", "new"); slices.Contains(ids, fresh[0]) {
		h.Fatal("a message id was reused after the restart")
	}
}

// testRestartExpires: retention runs while the store is closed.
func testRestartExpires(h *H) {
	h.NeedDurable()
	h.Create("q", func(s *engine.QueueSettings) { s.Retention = time.Hour })
	h.SendBodies("q", "old")
	h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(30 * time.Minute)
	young := h.SendBodies("q", "young")
	h.Restart(45 * time.Minute)
	h.WantStats("q", 1, 0, 0)
	h.Restart(0)
	h.WantStats("q", 1, 0, 0)
	if m := h.ReceiveOne("q", engine.ReceiveRequest{}); m.MessageID != young[0] {
		h.Fatalf("received %+v", m)
	}
}

// testRestartDeletes: no acknowledged delete comes back.
func testRestartDeletes(h *H) {
	h.NeedDurable()
	h.Create("q", nil)
	for range 5 {
		sendN(h, "q", 10)
	}
	kept := map[string]bool{}
	for {
		got := h.Receive("q", engine.ReceiveRequest{})
		if len(got) == 0 {
			break
		}
		var del []engine.Message
		for i, m := range got {
			if i%2 == 0 {
				del = append(del, m)
			} else {
				kept[m.MessageID] = true
			}
		}
		h.DeleteAll("q", del)
	}
	h.Restart(0)
	h.Clk.Advance(time.Hour)
	got := map[string]bool{}
	for _, m := range h.ReceiveAll("q") {
		got[m.MessageID] = true
	}
	if !maps.Equal(got, kept) {
		h.Fatalf("after the restart %d messages, want the %d kept", len(got), len(kept))
	}
}

// testRestartStats: a message moved into a dead-letter queue keeps
// counting from its move, its receives counted from there; FIFO groups in
// flight are counted again.
func testRestartStats(h *H) {
	h.NeedDurable()
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 2))
	h.Create("q.fifo", FIFO)
	h.SendBodies("src", "poison")
	zero := time.Duration(0)
	for range 2 {
		h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	}
	h.Clk.Advance(time.Hour)
	movedAt := h.Clk.Now()
	h.ReceiveNone("src")
	hour := time.Hour
	if m := h.ReceiveOne("dlq", engine.ReceiveRequest{Visibility: &hour}); m.ReceiveCount != 3 {
		h.Fatalf("dead-letter queue handed out %+v", m)
	}
	h.SendResults("q.fifo", Msg("g1", "a"), Msg("g2", "b"))
	h.WantBodies("q.fifo", engine.ReceiveRequest{Visibility: &hour}, "a", "b")

	h.Restart(0)
	h.WantStats("dlq", 0, 1, 0)
	h.WantOldest("dlq", movedAt)
	h.WantGroupsInFlight("q.fifo", 2)
	h.WantOldest("q.fifo", movedAt)
	// Its second receive in the dead-letter queue keeps it counted; the
	// third does not.
	h.Clk.Advance(2 * time.Hour)
	h.ReceiveOne("dlq", engine.ReceiveRequest{Visibility: &zero})
	h.WantOldest("dlq", movedAt)
	h.ReceiveOne("dlq", engine.ReceiveRequest{Visibility: &zero})
	h.WantOldest("dlq", time.Time{})
}

// testRestartRedrive: a redrive policy, and a moved message's dead-letter
// source, survive a restart; redrives and moves by ARN go on after it.
func testRestartRedrive(h *H) {
	h.NeedDurable()
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 1))
	in := richMessage("a")
	ids := h.Send("src", in)
	zero := time.Duration(0)
	h.Clk.Advance(time.Second)
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	h.ReceiveNone("src")

	h.Restart(0)
	q, err := h.B.GetQueue(h.Ctx, Account, "src")
	if err != nil || q.ARN != ARN("src") || q.Settings.Redrive == nil || *q.Settings.Redrive != (engine.Redrive{TargetAccount: Account, TargetName: "dlq", MaxReceiveCount: 1}) {
		h.Fatalf("source after the restart: %+v, %v", q, err)
	}
	h.WantStats("src", 0, 0, 0)
	m := h.ReceiveOne("dlq", engine.ReceiveRequest{Visibility: &zero})
	sameContent(h, m, in)
	if m.MessageID != ids[0] || m.ReceiveCount != 2 || m.DeadLetterSourceARN != ARN("src") ||
		!m.SentAt.Equal(Start) || !m.FirstReceiveAt.Equal(Start.Add(time.Second)) {
		h.Fatalf("dead-letter queue after the restart: %+v", m)
	}
	h.SendBodies("src", "b")
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	h.ReceiveNone("src")
	h.WantStats("dlq", 2, 0, 0)
	// A task back to the sources finds the source by its ARN.
	t := h.StartTask(engine.MoveTask{SourceName: "dlq"})
	if t = h.WaitEnded("dlq", t.ID); t.Status != engine.MoveTaskCompleted || t.Moved != 2 {
		h.Fatalf("task after the restart ended %+v", t)
	}
	h.WaitStats("src", 2, 0, 0)
	h.WantBodies("src", engine.ReceiveRequest{}, "a", "b")
}

// testRestartFIFO: a restart keeps each group's order and in-flight
// blocking, receipt handles, sequence numbers and the deduplication
// window, deleted originals included; the window still ends on time.
func testRestartFIFO(h *H) {
	h.NeedDurable()
	h.Create("q.fifo", FIFO)
	h.Create("g.fifo", FIFOWith(func(s *engine.QueueSettings) { s.DeduplicationScope = engine.DeduplicationScopeMessageGroup }))
	sent := h.SendResults("q.fifo", Msg("g1", "a"), Msg("g2", "d"), Msg("g1", "b"), Msg("g1", "c"), Msg("g2", "e"))
	h.SendResults("g.fifo", Msg("g1", "k"), Msg("g2", "k"))
	a := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "a")
	d := h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "d")
	h.DeleteAll("q.fifo", d)

	h.Clk.Advance(time.Second)
	h.Restart(0)
	h.WantStats("q.fifo", 3, 1, 0)
	// g1 is still blocked by a; g2 goes on.
	h.WantBodies("q.fifo", engine.ReceiveRequest{}, "e")
	if err := h.ChangeVisibility("q.fifo", a[0].ReceiptHandle, 0); err != nil {
		h.Fatalf("change with a pre-restart handle: %v", err)
	}
	got := h.WantBodies("q.fifo", engine.ReceiveRequest{}, "a", "b", "c")
	if got[0].SequenceNumber != sent[0].SequenceNumber || got[2].SequenceNumber != sent[3].SequenceNumber ||
		got[0].ReceiveCount != 2 || got[0].DeduplicationID != "dedup-a" || got[0].MessageGroupID != "g1" {
		h.Fatalf("after the restart: %+v", got)
	}
	// The deleted d still deduplicates; scopes are kept.
	if r := h.SendResults("q.fifo", Msg("g2", "d"))[0]; !r.Duplicate || r.MessageID != sent[1].MessageID || r.SequenceNumber != sent[1].SequenceNumber {
		h.Fatalf("resend of d after the restart = %+v", r)
	}
	if res := h.SendResults("g.fifo", Msg("g1", "k"), Msg("g3", "k")); !res[0].Duplicate || res[1].Duplicate {
		h.Fatalf("messageGroup scope after the restart: %+v", res)
	}
	fresh := h.SendResults("q.fifo", Msg("g1", "f"))[0]
	if !seqLess(sent[4].SequenceNumber, fresh.SequenceNumber) {
		h.Fatalf("sequence number %s after the restart, %s before", fresh.SequenceNumber, sent[4].SequenceNumber)
	}

	// Past the first sends' window (not the later ones'), across another
	// restart.
	h.Restart(engine.DeduplicationWindow - time.Second)
	if r := h.SendResults("q.fifo", Msg("g2", "d"))[0]; r.Duplicate {
		h.Fatalf("resend of d after its window = %+v", r)
	}
	if r := h.SendResults("q.fifo", Msg("g1", "f"))[0]; !r.Duplicate || r.MessageID != fresh.MessageID {
		h.Fatalf("resend of f within its window = %+v", r)
	}
}

// testRestartSendMany: what SendMany acknowledged survives a restart.
func testRestartSendMany(h *H) {
	h.NeedDurable()
	_, outs := sendManyStandard(h)
	h.Restart(0)
	wantSendManyStandard(h, outs)
}

// startHeldTask starts a task moving 25 messages at 10 a second from dlq
// to dst and waits for its first 10.
func startHeldTask(h *H) engine.MoveTask {
	h.Helper()
	h.Create("dlq", nil)
	h.Create("dst", nil)
	sendN(h, "dlq", 25)
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 10})
	h.WaitMoved("dlq", t.ID, 10)
	return t
}

// finishTask lets a task resumed with 10 of its 25 messages moved run to
// its end, a second at a time, and checks the end: every message moved
// once, and the OnMovedByTask hooks told of each.
func finishTask(h *H, started engine.MoveTask) {
	h.Helper()
	h.WaitMoved("dlq", started.ID, 20)
	h.Clk.Advance(time.Second)
	t := h.WaitEnded("dlq", started.ID)
	if t.Status != engine.MoveTaskCompleted || t.Moved != 25 || t.ToMove != 25 {
		h.Fatalf("ended %+v", t)
	}
	h.WantMovedOnce("dlq", "dst", 25)
	h.CloseMoved("dst", 25)
}

// testRestartMoveTask: a RUNNING task resumes after a restart where it
// stood and completes with exact counts.
func testRestartMoveTask(h *H) {
	h.NeedDurable()
	started := startHeldTask(h)
	// The hour passes while the store is down: a task still waiting on
	// the clock would move the next ten before the restart.
	h.Restart(time.Hour)
	t := h.WaitMoved("dlq", started.ID, 20)
	if t.Status != engine.MoveTaskRunning || t.ToMove != 25 || !t.Started.Equal(started.Started) ||
		t.SourceARN != ARN("dlq") || t.DestinationARN != ARN("dst") || t.MaxPerSecond != 10 {
		h.Fatalf("resumed task %+v, started as %+v", t, started)
	}
	_, err := h.B.StartMoveTask(h.Ctx, engine.MoveTask{SourceAccount: Account, SourceName: "dlq", DestinationARN: ARN("dst")})
	wantErr(h.T, "a second task on a resumed source", err, engine.ErrMoveTaskActive)
	finishTask(h, started)
}

// testRestartMoveTaskHeld: a store reopened holds the tasks it resumes
// until its OnMovedByTask, also across another restart, so that the hook
// is told of every move.
func testRestartMoveTaskHeld(h *H) {
	h.NeedDurable()
	started := startHeldTask(h)
	for range 2 {
		h.ReopenHeld(time.Hour)
		if t := h.Task("dlq", started.ID); t.Status != engine.MoveTaskRunning || t.Moved != 10 {
			h.Fatalf("held task %+v", t)
		}
	}
	h.Resume()
	finishTask(h, started)
	// Done: it stays done.
	h.Restart(0)
	if t := h.Task("dlq", started.ID); t.Status != engine.MoveTaskCompleted || t.Moved != 25 {
		h.Fatalf("after another restart: %+v", t)
	}
}

// testRestartMoveTaskCancelling: a task cancelled just before a restart,
// CANCELLING or already CANCELLED when it stopped, is CANCELLED after it,
// its count exact, and its source free for another task.
func testRestartMoveTaskCancelling(h *H) {
	h.NeedDurable()
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "a", "b", "c", "d", "e")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1})
	h.WaitMoved("dlq", t.ID, 1)
	if _, err := h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID); err != nil {
		h.Fatal(err)
	}
	h.Restart(0)
	ended := h.Task("dlq", t.ID)
	if ended.Status != engine.MoveTaskCancelled || ended.Moved < 1 {
		h.Fatalf("after the restart: %+v", ended)
	}
	h.WaitStats("dst", ended.Moved, 0, 0)
	h.WantStats("dlq", 5-ended.Moved, 0, 0)
	h.Restart(10 * time.Second)
	if got := h.Task("dlq", t.ID); got.Status != engine.MoveTaskCancelled || got.Moved != ended.Moved {
		h.Fatalf("after a second restart: %+v, was %+v", got, ended)
	}
	next := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
	if next = h.WaitEnded("dlq", next.ID); next.Status != engine.MoveTaskCompleted || next.Moved != 5-ended.Moved {
		h.Fatalf("the next task ended %+v", next)
	}
	h.WaitStats("dst", 5, 0, 0)
	h.CloseMoved("dst", 5)
}

// testRestartRecords: records, secrets and metric points survive a
// restart.
func testRestartRecords(h *H) {
	h.NeedDurable()
	records := putTestRecords(h)
	points := putTestPoints(h)
	secret := putTestSecret(h)
	h.Restart(0)
	for kind, want := range records {
		h.WantRecords(kind, want...)
	}
	wantTestRecords(h)
	h.WantPoints(0, points...)
	h.WantSecret("key", secret)
}

// putTestSecret makes the secret "key" and returns its value.
func putTestSecret(h *H) []byte {
	h.Helper()
	c := &creator{value: []byte("kept across restarts")}
	v, err := h.B.Secret(h.Ctx, "key", c.create)
	if err != nil || !bytes.Equal(v, c.value) {
		h.Fatalf("Secret(key) = %q, %v", v, err)
	}
	return v
}

// testCrashAcknowledged: after a crash, every acknowledged write is
// there: queues and their changes, deletes, sends (also by SendMany),
// deletes of messages, deduplication entries, records, secrets and metric points.
// Receives may be undone (receive bookkeeping may reach the store later):
// a message received before the crash may be visible again, never with a
// higher receive count.
func testCrashAcknowledged(h *H) {
	h.NeedCrash()
	createRestartQueues(h)
	before := h.ListQueues()
	var sent []engine.QueueSend
	for i := range 4 {
		sent = append(sent, Part("q", Plain(fmt.Sprint("q-", i)), Plain(fmt.Sprint("q-", i, "-b"))))
	}
	sent = append(sent, Part("g.fifo", Msg("g1", "f"), Msg("g2", "f")))
	outs := h.SendMany(sent...)
	ids := h.SendBodies("q", "single")
	h.Clk.Advance(5 * time.Second) // q's delay
	hour := time.Hour
	got := h.Receive("q", engine.ReceiveRequest{Max: 4, Visibility: &hour})
	h.DeleteAll("q", got[:2])
	deleted := map[string]bool{got[0].MessageID: true, got[1].MessageID: true}
	records := putTestRecords(h)
	points := putTestPoints(h)
	secret := putTestSecret(h)

	h.Crash()
	// Within the window still.
	res := h.SendResults("g.fifo", Msg("g1", "f"), Msg("g2", "f"))
	for i, r := range res {
		if !r.Duplicate || r.MessageID != outs[4].Results[i].MessageID {
			h.Fatalf("resend %d after the crash = %+v, first sent as %+v", i, r, outs[4].Results[i])
		}
	}
	wantRestartQueues(h, before)
	h.Clk.Advance(2 * time.Hour)
	want := map[string]bool{ids[0]: true}
	for _, o := range outs[:4] {
		for _, r := range o.Results {
			want[r.MessageID] = true
		}
	}
	for id := range deleted {
		delete(want, id)
	}
	have := map[string]bool{}
	for _, m := range h.ReceiveAll("q") {
		if m.ReceiveCount > 2 {
			h.Fatalf("message %s received %d times", m.Body, m.ReceiveCount)
		}
		have[m.MessageID] = true
	}
	if !maps.Equal(have, want) {
		h.Fatalf("after the crash %d messages, want the %d acknowledged and not deleted", len(have), len(want))
	}
	for kind, want := range records {
		h.WantRecords(kind, want...)
	}
	wantTestRecords(h)
	h.WantPoints(0, points...)
	h.WantSecret("key", secret)
}

// testCrashMoveTask: a task crashed mid-run has moved exactly what its
// count says, each message in one queue, and resumes to the end.
func testCrashMoveTask(h *H) {
	h.NeedCrash()
	const n = 300
	h.Create("dlq", nil)
	h.Create("dst", nil)
	sendN(h, "dlq", n)
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
	h.WaitTask("dlq", t.ID, "a first move", func(t engine.MoveTask) bool { return t.Moved > 0 })
	h.CrashHeld()
	at := h.Task("dlq", t.ID)
	h.WantStats("dst", at.Moved, 0, 0)
	h.WantStats("dlq", n-at.Moved, 0, 0)
	h.Resume()
	if end := h.WaitEnded("dlq", t.ID); end.Status != engine.MoveTaskCompleted || end.Moved != n {
		h.Fatalf("ended %+v after a crash at %d moved", end, at.Moved)
	}
	h.WantMovedOnce("dlq", "dst", n)
	h.CloseMoved("dst", n-at.Moved)
}
