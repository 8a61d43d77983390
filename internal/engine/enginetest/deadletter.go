package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// Dead-letter queues: moves on receive (redrive policies) and move tasks.

// RedriveTo is a settings change that sends messages to dlq once they have
// been received max times.
func RedriveTo(dlq string, max int) func(*engine.QueueSettings) {
	return func(s *engine.QueueSettings) {
		s.Redrive = &engine.Redrive{TargetAccount: Account, TargetName: dlq, MaxReceiveCount: max}
	}
}

// WaitStats waits until the queue's counts are as given: what a move task
// moves lands in its destination asynchronously.
func (h *H) WaitStats(name string, visible, notVisible, delayed int64) {
	h.Helper()
	want := engine.Stats{Visible: visible, NotVisible: notVisible, Delayed: delayed}
	var s engine.Stats
	testwait.Eventually(h, fmt.Sprintf("Stats(%s) = %+v", name, want), func() bool {
		var err error
		if s, err = h.B.Stats(h.Ctx, Account, name); err != nil {
			h.Fatalf("Stats(%s): %v", name, err)
		}
		return counts(s) == want
	})
}

// StartTask starts a move task of Account and checks what the backend
// filled in.
func (h *H) StartTask(t engine.MoveTask) engine.MoveTask {
	h.Helper()
	if t.SourceAccount == "" {
		t.SourceAccount = Account
	}
	if t.SourceARN == "" {
		t.SourceARN = ARN(t.SourceName)
	}
	got, err := h.B.StartMoveTask(h.Ctx, t)
	if err != nil {
		h.Fatalf("StartMoveTask(%s): %v", t.SourceName, err)
	}
	if got.ID == "" || got.Status != engine.MoveTaskRunning || got.Moved != 0 || !got.Started.Equal(h.Clk.Now()) ||
		got.SourceAccount != t.SourceAccount || got.SourceName != t.SourceName || got.SourceARN != t.SourceARN ||
		got.DestinationARN != t.DestinationARN || got.MaxPerSecond != t.MaxPerSecond || got.FailureReason != "" {
		h.Fatalf("StartMoveTask(%+v) = %+v", t, got)
	}
	return got
}

// Task returns the source's task with this id.
func (h *H) Task(source, id string) engine.MoveTask {
	h.Helper()
	ts, err := h.B.ListMoveTasks(h.Ctx, Account, source)
	if err != nil {
		h.Fatalf("ListMoveTasks(%s): %v", source, err)
	}
	for _, t := range ts {
		if t.ID == id {
			return t
		}
	}
	h.Fatalf("ListMoveTasks(%s) has no task %s", source, id)
	return engine.MoveTask{}
}

// WaitTask waits until cond holds for the task.
func (h *H) WaitTask(source, id, what string, cond func(engine.MoveTask) bool) engine.MoveTask {
	h.Helper()
	var t engine.MoveTask
	testwait.Eventually(h, fmt.Sprintf("task %s: %s", id, what), func() bool {
		t = h.Task(source, id)
		return cond(t)
	})
	return t
}

// WaitEnded waits until the task is no longer active.
func (h *H) WaitEnded(source, id string) engine.MoveTask {
	h.Helper()
	return h.WaitTask(source, id, "its end", func(t engine.MoveTask) bool { return !t.Status.Active() })
}

// WaitMoved waits until the task has moved n messages, failing at once if
// it moves more.
func (h *H) WaitMoved(source, id string, n int64) engine.MoveTask {
	h.Helper()
	return h.WaitTask(source, id, fmt.Sprint(n, " moved"), func(t engine.MoveTask) bool {
		if t.Moved > n {
			h.Fatalf("task %s moved %d, want %d", id, t.Moved, n)
		}
		return t.Moved == n
	})
}

// CloseMoved closes the store, which stops its move tasks, and checks
// that the OnMovedByTask hook was told of n moves into the queue in all:
// no task moved anything after the test last read its counts.
func (h *H) CloseMoved(name string, n int64) {
	h.Helper()
	if err := h.B.Close(); err != nil {
		h.Fatalf("Close: %v", err)
	}
	if got := len(h.MovedTo(name)); int64(got) != n {
		h.Fatalf("the hook was told of %d moves into %s, want %d", got, name, n)
	}
}

func richMessage(body string) engine.NewMessage {
	return engine.NewMessage{
		Body: body,
		Attributes: []engine.MessageAttribute{
			{Name: "bin", DataType: "Binary", BinaryValue: []byte{0, 1, 255}},
			{Name: "str", DataType: "String", StringValue: "v-" + body},
		},
		TraceHeader:    "Root=1-5759e988-bd862e3fe1be46a994272793",
		MessageGroupID: "group",
		SenderID:       "AIDAEXAMPLE",
		MD5OfBody:      "md5-" + body,
		MD5OfAttrs:     "md5a-" + body,
		MD5OfSysAttrs:  "md5s-" + body,
	}
}

// sameContent checks what a move keeps of a message.
func sameContent(h *H, m engine.Message, in engine.NewMessage) {
	h.Helper()
	if m.Body != in.Body || m.TraceHeader != in.TraceHeader || m.MessageGroupID != in.MessageGroupID ||
		m.SenderID != in.SenderID || m.MD5OfBody != in.MD5OfBody || m.MD5OfAttrs != in.MD5OfAttrs ||
		len(m.Attributes) != len(in.Attributes) {
		h.Fatalf("moved message %+v, sent %+v", m, in)
	}
	for i, a := range m.Attributes {
		w := in.Attributes[i]
		if a.Name != w.Name || a.DataType != w.DataType || a.StringValue != w.StringValue || string(a.BinaryValue) != string(w.BinaryValue) {
			h.Fatalf("attribute %d = %+v, want %+v", i, a, w)
		}
	}
}

func testRedriveOnReceive(h *H) {
	for _, max := range []int{1, 3} {
		src, dlq := fmt.Sprint("src-", max), fmt.Sprint("dlq-", max)
		h.Create(dlq, func(s *engine.QueueSettings) { s.Retention = time.Hour })
		h.Create(src, RedriveTo(dlq, max))
		sentAt := h.Clk.Now()
		in := richMessage("poison")
		ids := h.Send(src, in)
		zero := time.Duration(0)
		var first time.Time
		var last engine.Message
		for i := 1; i <= max; i++ {
			h.Clk.Advance(time.Second)
			last = h.ReceiveOne(src, engine.ReceiveRequest{Visibility: &zero})
			if i == 1 {
				first = h.Clk.Now()
			}
			if last.ReceiveCount != i || last.DeadLetterSourceARN != "" {
				h.Fatalf("max %d, receive %d: count %d, source ARN %q", max, i, last.ReceiveCount, last.DeadLetterSourceARN)
			}
		}
		h.WantStats(src, 1, 0, 0)
		h.WantStats(dlq, 0, 0, 0)

		// The receive that would exceed the maximum moves it instead.
		h.Clk.Advance(time.Second)
		h.ReceiveNone(src)
		h.WantStats(src, 0, 0, 0)
		h.WantStats(dlq, 1, 0, 0)

		// Handles issued by the source no longer reach it.
		if errs := h.Delete(src, last.ReceiptHandle); errs[0] != nil {
			h.Fatalf("source handle after the move: %v", errs[0])
		}
		wantErr(h.T, "change with a source handle", h.ChangeVisibility(src, last.ReceiptHandle, time.Minute), engine.ErrMessageNotInflight)
		if errs := h.Delete(dlq, last.ReceiptHandle); !errors.Is(errs[0], engine.ErrReceiptHandleInvalid) {
			h.Fatalf("source handle on the dead-letter queue: %v", errs[0])
		}
		h.WantStats(dlq, 1, 0, 0)

		m := h.ReceiveOne(dlq, engine.ReceiveRequest{})
		sameContent(h, m, in)
		if m.MessageID != ids[0] || m.ReceiveCount != max+1 || !m.SentAt.Equal(sentAt) ||
			!m.FirstReceiveAt.Equal(first) || m.DeadLetterSourceARN != ARN(src) {
			h.Fatalf("max %d: in the dead-letter queue: id %s (sent %s) count %d sent %v first %v source %q",
				max, m.MessageID, ids[0], m.ReceiveCount, m.SentAt, m.FirstReceiveAt, m.DeadLetterSourceARN)
		}
		// Retention in the dead-letter queue counts from the original send.
		h.Clk.Set(sentAt.Add(time.Hour - time.Second))
		h.WantStats(dlq, 1, 0, 0)
		h.Clk.Set(sentAt.Add(time.Hour))
		h.WantStats(dlq, 0, 0, 0)
	}
}

// Messages moved on the way do not count towards the receive's maximum.
func testRedriveKeepsMax(h *H) {
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 1))
	zero := time.Duration(0)
	h.SendBodies("src", "a", "b", "c")
	if got := h.Receive("src", engine.ReceiveRequest{Max: 3, Visibility: &zero}); len(got) != 3 {
		h.Fatalf("received %d", len(got))
	}
	ids := h.SendBodies("src", "d", "e")
	got := h.Receive("src", engine.ReceiveRequest{Max: 2})
	if len(got) != 2 || got[0].MessageID != ids[0] || got[1].MessageID != ids[1] || got[0].ReceiveCount != 1 {
		h.Fatalf("received %+v, want d and e", got)
	}
	h.WantStats("src", 0, 2, 0)
	h.WantStats("dlq", 3, 0, 0)
	var bodies []string
	for _, m := range h.Receive("dlq", engine.ReceiveRequest{}) {
		bodies = append(bodies, m.Body)
	}
	if !slices.Equal(bodies, []string{"a", "b", "c"}) {
		h.Fatalf("dead-letter queue holds %v", bodies)
	}
}

func testRedriveTargetMissing(h *H) {
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 1))
	h.Create("orphan", RedriveTo("never-created", 1))
	ids := h.SendBodies("src", "a")
	oids := h.SendBodies("orphan", "o")
	zero := time.Duration(0)
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	h.ReceiveOne("orphan", engine.ReceiveRequest{Visibility: &zero})
	if err := h.B.DeleteQueue(h.Ctx, Account, "dlq"); err != nil {
		h.Fatal(err)
	}
	// No dead-letter queue: handed out as usual.
	for name, id := range map[string]string{"src": ids[0], "orphan": oids[0]} {
		m := h.ReceiveOne(name, engine.ReceiveRequest{Visibility: &zero})
		if m.MessageID != id || m.ReceiveCount != 2 || m.DeadLetterSourceARN != "" {
			h.Fatalf("%s: received %s count %d", name, m.MessageID, m.ReceiveCount)
		}
		h.WantStats(name, 1, 0, 0)
	}
}

func testRedriveLongPoll(h *H) {
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 1))
	ids := h.SendBodies("src", "a")
	ten := 10 * time.Second
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &ten})
	dlqWait := h.StartWait(h.Ctx, "dlq", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	srcWait := h.StartWait(h.Ctx, "src", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})

	// The message becomes visible; the waiting receive on the source finds
	// it over the limit and moves it, which wakes the dead-letter waiter.
	h.Clk.Advance(ten)
	r := h.Await(dlqWait)
	if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != ids[0] || r.Msgs[0].ReceiveCount != 2 ||
		r.Msgs[0].DeadLetterSourceARN != ARN("src") {
		h.Fatalf("dead-letter long poll: %+v", r)
	}
	// The source's receive found only a message to move: it waits on, so
	// a send is what it returns (one that had returned after the move
	// would have returned nothing).
	later := h.SendBodies("src", "b")
	r = h.Await(srcWait)
	if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != later[0] {
		h.Fatalf("source long poll: %+v", r)
	}

	// A long poll that starts with only a message to move waits too.
	zero := time.Duration(0)
	if errs := h.Delete("src", r.Msgs[0].ReceiptHandle); errs[0] != nil {
		h.Fatal(errs[0])
	}
	h.SendBodies("src", "c")
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	srcWait = h.StartWait(h.Ctx, "src", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	h.WaitStats("dlq", 1, 1, 0)
	h.WantStats("src", 0, 0, 0)
	h.Clk.Advance(20 * time.Second)
	if r := h.Await(srcWait); r.Err != nil || len(r.Msgs) != 0 {
		h.Fatalf("long poll that only moved: %+v", r)
	}
}

// Two queues that are each other's dead-letter queue, received from
// concurrently: no deadlock, and every message stays in exactly one queue.
func testRedriveLoop(h *H) {
	h.Create("a", RedriveTo("b", 1))
	h.Create("b", RedriveTo("a", 1))
	sent := map[string]bool{}
	for _, name := range []string{"a", "b"} {
		for i := range 4 {
			bodies := make([]string, 5)
			for j := range bodies {
				bodies[j] = fmt.Sprint(name, i, j)
			}
			for _, id := range h.SendBodies(name, bodies...) {
				sent[id] = true
			}
		}
	}
	zero := time.Duration(0)
	var wg sync.WaitGroup
	for i := range 8 {
		name := []string{"a", "b"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				if _, err := h.B.Receive(h.Ctx, Account, name, engine.ReceiveRequest{Max: 10, Visibility: &zero}); err != nil {
					h.Errorf("receive: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, name := range []string{"a", "b"} {
		if err := h.B.UpdateQueue(h.Ctx, Account, name, func(q *engine.Queue) error {
			q.Settings.Redrive = nil
			return nil
		}); err != nil {
			h.Fatal(err)
		}
	}
	got := map[string]bool{}
	for _, name := range []string{"a", "b"} {
		for _, m := range h.ReceiveAll(name) {
			if got[m.MessageID] {
				h.Fatalf("message %s in both queues", m.MessageID)
			}
			got[m.MessageID] = true
		}
	}
	for id := range sent {
		if !got[id] {
			h.Fatalf("message %s lost (%d of %d found)", id, len(got), len(sent))
		}
	}
	if len(got) != len(sent) {
		h.Fatalf("%d messages found, %d sent", len(got), len(sent))
	}
}

func testMoveTaskToSources(h *H) {
	h.Create("dlq", nil)
	h.Create("s1", RedriveTo("dlq", 1))
	h.Create("s2", RedriveTo("dlq", 1))
	in := map[string]engine.NewMessage{}
	origID := map[string]string{}
	for name, bodies := range map[string][]string{"s1": {"s1-a", "s1-b"}, "s2": {"s2-a"}} {
		var msgs []engine.NewMessage
		for _, b := range bodies {
			in[b] = richMessage(b)
			msgs = append(msgs, in[b])
		}
		for i, id := range h.Send(name, msgs...) {
			origID[bodies[i]] = id
		}
	}
	zero := time.Duration(0)
	for _, name := range []string{"s1", "s2"} {
		h.Receive(name, engine.ReceiveRequest{Visibility: &zero})
		h.ReceiveNone(name)
	}
	h.WantStats("dlq", 3, 0, 0)
	// One stays in flight in the dead-letter queue: it is not moved.
	hour := time.Hour
	inflight := h.ReceiveOne("dlq", engine.ReceiveRequest{Max: 1, Visibility: &hour})

	h.Clk.Advance(time.Minute)
	t := h.StartTask(engine.MoveTask{SourceName: "dlq"})
	if t.ToMove != 2 {
		h.Fatalf("ToMove = %d, want the 2 visible", t.ToMove)
	}
	t = h.WaitEnded("dlq", t.ID)
	if t.Status != engine.MoveTaskCompleted || t.Moved != 2 || t.ToMove != 2 || t.FailureReason != "" {
		h.Fatalf("ended %+v", t)
	}
	h.WantStats("dlq", 0, 1, 0)
	for name, n := range map[string]int64{"s1": 2, "s2": 1} {
		if strings.HasPrefix(inflight.Body, name) {
			n--
		}
		h.WaitStats(name, n, 0, 0)
	}
	for _, name := range []string{"s1", "s2"} {
		for _, m := range h.Receive(name, engine.ReceiveRequest{}) {
			w, ok := in[m.Body]
			if !ok || !strings.HasPrefix(m.Body, name) {
				h.Fatalf("%s received %q", name, m.Body)
			}
			sameContent(h, m, w)
			if m.MessageID == origID[m.Body] || m.MessageID == "" || m.ReceiveCount != 1 || !m.SentAt.Equal(t.Started) ||
				m.DeadLetterSourceARN != "" {
				h.Fatalf("moved message: id %s (was %s) count %d sent %v (task started %v) source %q",
					m.MessageID, origID[m.Body], m.ReceiveCount, m.SentAt, t.Started, m.DeadLetterSourceARN)
			}
		}
	}
}

func testMoveTaskToDestination(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", func(s *engine.QueueSettings) { s.Delay = 30 * time.Second })
	h.SendBodies("dlq", "a", "b", "c")
	delay := time.Minute
	h.Send("dlq", engine.NewMessage{Body: "delayed", Delay: &delay})
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
	if t.ToMove != 3 {
		h.Fatalf("ToMove = %d, want 3 (the delayed one is not visible)", t.ToMove)
	}
	t = h.WaitEnded("dlq", t.ID)
	if t.Status != engine.MoveTaskCompleted || t.Moved != 3 {
		h.Fatalf("ended %+v", t)
	}
	// The destination's delay applies as for a send.
	h.WaitStats("dst", 0, 0, 3)
	h.WantStats("dlq", 0, 0, 1)
	h.Clk.Advance(30 * time.Second)
	var bodies []string
	for _, m := range h.Receive("dst", engine.ReceiveRequest{}) {
		bodies = append(bodies, m.Body)
	}
	if !slices.Equal(bodies, []string{"a", "b", "c"}) {
		h.Fatalf("destination holds %v, want oldest first", bodies)
	}
}

func sendN(h *H, name string, n int) {
	h.Helper()
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprint(name, "-", i)
	}
	for len(bodies) > 0 {
		k := min(10, len(bodies))
		h.SendBodies(name, bodies[:k]...)
		bodies = bodies[k:]
	}
}

// With a rate, N seconds after the start at most (N+1)×rate have moved;
// the test moves the clock a second at a time and lets the task catch up.
func testMoveTaskRate(h *H) {
	for _, tc := range []struct{ rate, n int }{{10, 25}, {7, 30}, {25, 60}} {
		dlq, dst := fmt.Sprint("dlq-", tc.rate), fmt.Sprint("dst-", tc.rate)
		h.Create(dlq, nil)
		h.Create(dst, nil)
		sendN(h, dlq, tc.n)
		t := h.StartTask(engine.MoveTask{SourceName: dlq, DestinationARN: ARN(dst), MaxPerSecond: tc.rate})
		if t.ToMove != int64(tc.n) {
			h.Fatalf("ToMove = %d, want %d", t.ToMove, tc.n)
		}
		for sec := 0; ; sec++ {
			want := int64(min((sec+1)*tc.rate, tc.n))
			h.WaitMoved(dlq, t.ID, want)
			if want == int64(tc.n) {
				break
			}
			h.Clk.Advance(time.Second)
		}
		t = h.WaitEnded(dlq, t.ID)
		if t.Status != engine.MoveTaskCompleted || t.Moved != int64(tc.n) || t.ToMove != int64(tc.n) {
			h.Fatalf("rate %d: ended %+v", tc.rate, t)
		}
		h.WantStats(dlq, 0, 0, 0)
		h.WaitStats(dst, int64(tc.n), 0, 0)
		// A moved message is sent when it moves, by the clock, which the
		// test moved only once the second's share had moved: no second
		// moved more than its share, however soon the test read the
		// counts.
		perSecond := map[time.Duration]int{}
		for _, m := range h.ReceiveAll(dst) {
			perSecond[m.SentAt.Sub(t.Started)]++
		}
		for at, n := range perSecond {
			if at%time.Second != 0 || n > tc.rate {
				h.Fatalf("rate %d: %d moved %v after the start", tc.rate, n, at)
			}
		}
	}
}

func testMoveTaskUnlimited(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	sendN(h, "dlq", 55)
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
	t = h.WaitEnded("dlq", t.ID)
	if t.Status != engine.MoveTaskCompleted || t.Moved != 55 || t.ToMove != 55 {
		h.Fatalf("ended %+v", t)
	}
	h.WantMovedOnce("dlq", "dst", 55)
}

// WantMovedOnce checks, once a task has moved everything from source to
// dst, that dst holds n messages, each once, and receives them.
func (h *H) WantMovedOnce(source, dst string, n int64) {
	h.Helper()
	h.WaitStats(dst, n, 0, 0)
	h.WantStats(source, 0, 0, 0)
	seen := map[string]bool{}
	for _, m := range h.ReceiveAll(dst) {
		if seen[m.Body] {
			h.Fatalf("%s moved twice", m.Body)
		}
		seen[m.Body] = true
	}
	if int64(len(seen)) != n {
		h.Fatalf("%d distinct messages moved into %s, want %d", len(seen), dst, n)
	}
}

func testMoveTaskOnePerSource(h *H) {
	h.Create("dlq", nil)
	h.Create("dlq2", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "a", "b", "c")
	h.SendBodies("dlq2", "x")
	task := engine.MoveTask{SourceAccount: Account, SourceName: "dlq", SourceARN: ARN("dlq"), DestinationARN: ARN("dst"), MaxPerSecond: 1}
	t := h.StartTask(task)
	h.WaitMoved("dlq", t.ID, 1)
	_, err := h.B.StartMoveTask(h.Ctx, task)
	wantErr(h.T, "second task on the source", err, engine.ErrMoveTaskActive)
	// Another source is not held.
	h.StartTask(engine.MoveTask{SourceName: "dlq2", DestinationARN: ARN("dst"), MaxPerSecond: 1})

	if _, err := h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID); err != nil {
		h.Fatal(err)
	}
	ended := h.WaitEnded("dlq", t.ID)
	t2 := h.StartTask(task)
	if t2.ID == t.ID || t2.ToMove != 3-ended.Moved {
		h.Fatalf("task after the cancel: %+v (first %s)", t2, t.ID)
	}
}

func testMoveTaskAccountLimit(h *H) {
	h.Create("dst", nil)
	var first engine.MoveTask
	for i := range engine.MaxActiveMoveTasks {
		name := fmt.Sprint("dlq-", i)
		h.Create(name, nil)
		h.SendBodies(name, "a", "b")
		t := h.StartTask(engine.MoveTask{SourceName: name, DestinationARN: ARN("dst"), MaxPerSecond: 1})
		if i == 0 {
			first = t
		}
	}
	h.Create("one-more", nil)
	h.SendBodies("one-more", "a", "b")
	more := engine.MoveTask{SourceAccount: Account, SourceName: "one-more", SourceARN: ARN("one-more"), DestinationARN: ARN("dst"), MaxPerSecond: 1}
	_, err := h.B.StartMoveTask(h.Ctx, more)
	wantErr(h.T, "task beyond the account's limit", err, engine.ErrMoveTaskLimit)
	if ts, err := h.B.ListMoveTasks(h.Ctx, Account, "one-more"); err != nil || len(ts) != 0 {
		h.Fatalf("refused task listed: %+v, %v", ts, err)
	}

	// The limit is per account.
	const other = "000000000000"
	if _, _, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: other, Name: "dlq", ARN: "arn:aws:sqs:us-east-1:" + other + ":dlq", Settings: Settings()}); err != nil {
		h.Fatal(err)
	}
	if _, err := h.B.StartMoveTask(h.Ctx, engine.MoveTask{SourceAccount: other, SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1}); err != nil {
		h.Fatalf("task in another account: %v", err)
	}

	// An ended task frees its place.
	if _, err := h.B.CancelMoveTask(h.Ctx, Account, first.SourceName, first.ID); err != nil {
		h.Fatal(err)
	}
	h.WaitEnded(first.SourceName, first.ID)
	h.StartTask(more)
}

func testMoveTaskCancel(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "a", "b", "c", "d", "e")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1})
	h.WaitMoved("dlq", t.ID, 1)
	c, err := h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID)
	if err != nil {
		h.Fatal(err)
	}
	if c.ID != t.ID || (c.Status != engine.MoveTaskCancelling && c.Status != engine.MoveTaskCancelled) || c.Moved < 1 {
		h.Fatalf("cancel returned %+v", c)
	}
	ended := h.WaitEnded("dlq", t.ID)
	if ended.Status != engine.MoveTaskCancelled || ended.Moved < c.Moved {
		h.Fatalf("after the cancel: %+v", ended)
	}
	// Frozen: the clock moves, nothing more does.
	h.Clk.Advance(10 * time.Second)
	if got := h.Task("dlq", t.ID); got.Status != engine.MoveTaskCancelled || got.Moved != ended.Moved {
		h.Fatalf("after the clock moved: %+v, ended as %+v", got, ended)
	}
	h.WaitStats("dst", ended.Moved, 0, 0)
	h.WantStats("dlq", 5-ended.Moved, 0, 0)

	_, err = h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID)
	wantErr(h.T, "cancel a cancelled task", err, engine.ErrMoveTaskNotRunning)
	_, err = h.B.CancelMoveTask(h.Ctx, Account, "dlq", "no-such-task")
	wantErr(h.T, "cancel an unknown task", err, engine.ErrMoveTaskNotFound)
	_, err = h.B.CancelMoveTask(h.Ctx, Account, "dst", t.ID)
	wantErr(h.T, "cancel through another queue", err, engine.ErrMoveTaskNotFound)
	h.CloseMoved("dst", ended.Moved)
}

func testMoveTaskCancelEnded(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "a")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
	if t = h.WaitEnded("dlq", t.ID); t.Status != engine.MoveTaskCompleted {
		h.Fatalf("ended %+v", t)
	}
	_, err := h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID)
	wantErr(h.T, "cancel a completed task", err, engine.ErrMoveTaskNotRunning)
	if got := h.Task("dlq", t.ID); got.Status != engine.MoveTaskCompleted {
		h.Fatalf("status %s after a refused cancel", got.Status)
	}
}

func testMoveTaskDestinationDeleted(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	sendN(h, "dlq", 25)
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 10})
	h.WaitMoved("dlq", t.ID, 10)
	h.WaitStats("dst", 10, 0, 0)
	if err := h.B.DeleteQueue(h.Ctx, Account, "dst"); err != nil {
		h.Fatal(err)
	}
	h.Clk.Advance(time.Second)
	t = h.WaitEnded("dlq", t.ID)
	if t.Status != engine.MoveTaskFailed || t.FailureReason != engine.MoveTaskFailureNonExistentQueue || t.Moved != 10 {
		h.Fatalf("ended %+v", t)
	}
	h.WantStats("dlq", 15, 0, 0)
}

// Without a DestinationARN every message goes back to its source: one that
// has none, or whose source is gone, fails the task and stays.
func testMoveTaskNoSourceARN(h *H) {
	h.Create("dlq", nil)
	h.SendBodies("dlq", "sent-directly")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq"})
	t = h.WaitEnded("dlq", t.ID)
	if t.Status != engine.MoveTaskFailed || t.FailureReason != engine.MoveTaskFailureNonExistentQueue || t.Moved != 0 {
		h.Fatalf("ended %+v", t)
	}
	h.WantStats("dlq", 1, 0, 0)

	h.Create("dlq2", nil)
	h.Create("src", RedriveTo("dlq2", 1))
	h.SendBodies("src", "a")
	zero := time.Duration(0)
	h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	h.ReceiveNone("src")
	if err := h.B.DeleteQueue(h.Ctx, Account, "src"); err != nil {
		h.Fatal(err)
	}
	t = h.StartTask(engine.MoveTask{SourceName: "dlq2"})
	t = h.WaitEnded("dlq2", t.ID)
	if t.Status != engine.MoveTaskFailed || t.FailureReason != engine.MoveTaskFailureNonExistentQueue || t.Moved != 0 {
		h.Fatalf("ended %+v", t)
	}
	h.WantStats("dlq2", 1, 0, 0)
}

func testMoveTaskSourceDeleted(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "a", "b", "c")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1})
	h.WaitMoved("dlq", t.ID, 1)
	if err := h.B.DeleteQueue(h.Ctx, Account, "dlq"); err != nil {
		h.Fatal(err)
	}
	_, err := h.B.ListMoveTasks(h.Ctx, Account, "dlq")
	wantErr(h.T, "list the tasks of a deleted queue", err, engine.ErrQueueNotFound)
	_, err = h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID)
	wantErr(h.T, "cancel on a deleted queue", err, engine.ErrQueueNotFound)
	h.Clk.Advance(time.Minute)
	h.WaitStats("dst", 1, 0, 0)
	// A queue of the same name later has no tasks.
	h.Create("dlq", nil)
	if ts, err := h.B.ListMoveTasks(h.Ctx, Account, "dlq"); err != nil || len(ts) != 0 {
		h.Fatalf("recreated queue's tasks: %+v, %v", ts, err)
	}
}

func testMoveTaskTimeout(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "a", "b", "c", "d", "e")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1})
	h.WaitMoved("dlq", t.ID, 1)
	h.Clk.Advance(engine.MoveTaskMaxDuration)
	t = h.WaitEnded("dlq", t.ID)
	if t.Status != engine.MoveTaskFailed || t.FailureReason != engine.MoveTaskFailureTimedOut {
		h.Fatalf("ended %+v", t)
	}
	h.WaitStats("dst", t.Moved, 0, 0)
	h.WantStats("dlq", 5-t.Moved, 0, 0)
	h.CloseMoved("dst", t.Moved)
}

func testMoveTaskList(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	if ts, err := h.B.ListMoveTasks(h.Ctx, Account, "dlq"); err != nil || len(ts) != 0 {
		h.Fatalf("no tasks yet: %+v, %v", ts, err)
	}
	var started []engine.MoveTask
	for i := range 12 {
		h.SendBodies("dlq", fmt.Sprint(i))
		t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
		h.WaitEnded("dlq", t.ID)
		started = append(started, t)
		h.Clk.Advance(time.Second)
	}
	ts, err := h.B.ListMoveTasks(h.Ctx, Account, "dlq")
	if err != nil {
		h.Fatal(err)
	}
	if len(ts) < 10 || len(ts) > len(started) {
		h.Fatalf("%d tasks listed, want the last 10 at least", len(ts))
	}
	for i, t := range ts {
		w := started[len(started)-1-i]
		if t.ID != w.ID || !t.Started.Equal(w.Started) || t.Status != engine.MoveTaskCompleted || t.Moved != 1 || t.ToMove != 1 ||
			t.DestinationARN != ARN("dst") || t.SourceARN != ARN("dlq") {
			h.Fatalf("task %d = %+v, want %+v completed (most recent first)", i, t, w)
		}
	}
}

func testMoveTaskMissingQueue(h *H) {
	_, err := h.B.StartMoveTask(h.Ctx, engine.MoveTask{SourceAccount: Account, SourceName: "nope"})
	wantErr(h.T, "start", err, engine.ErrQueueNotFound)
	_, err = h.B.ListMoveTasks(h.Ctx, Account, "nope")
	wantErr(h.T, "list", err, engine.ErrQueueNotFound)
	_, err = h.B.CancelMoveTask(h.Ctx, Account, "nope", "id")
	wantErr(h.T, "cancel", err, engine.ErrQueueNotFound)
	ctx, cancel := context.WithCancel(h.Ctx)
	cancel()
	h.Create("q", nil)
	if _, err := h.B.StartMoveTask(ctx, engine.MoveTask{SourceAccount: Account, SourceName: "q"}); err == nil {
		h.Fatal("start with a cancelled context succeeded")
	}
}

// A queue named as its own dead-letter queue hands its messages out rather
// than moving them onto itself at every receive.
func testRedriveToItself(h *H) {
	h.Create("q", RedriveTo("q", 1))
	ids := h.SendBodies("q", "a")
	zero := time.Duration(0)
	for i := 1; i <= 3; i++ {
		m := h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &zero})
		if m.MessageID != ids[0] || m.ReceiveCount != i || m.DeadLetterSourceARN != "" {
			h.Fatalf("receive %d: %+v", i, m)
		}
	}
}

// testOnMovedByTask: the hook is told of every message a move task writes
// into its destination, once, as it was written (a redrive on receive is
// no move task's), and a later call replaces the hook.
func testOnMovedByTask(h *H) {
	h.Create("dlq", nil)
	h.Create("s1", RedriveTo("dlq", 1))
	h.Create("s2", RedriveTo("dlq", 1))
	h.Create("dst", nil)
	in := map[string]engine.NewMessage{}
	for _, name := range []string{"s1", "s2"} {
		for i := range 3 {
			m := richMessage(fmt.Sprint(name, "-", i))
			in[m.Body] = m
			h.Send(name, m)
		}
		zero := time.Duration(0)
		h.Receive(name, engine.ReceiveRequest{Visibility: &zero})
		h.ReceiveNone(name)
	}
	h.WantStats("dlq", 6, 0, 0)
	if n := len(h.MovedTo("dlq")); n != 0 {
		h.Fatalf("the hook was told of %d redrives on receive", n)
	}

	t := h.StartTask(engine.MoveTask{SourceName: "dlq"})
	if t = h.WaitEnded("dlq", t.ID); t.Status != engine.MoveTaskCompleted || t.Moved != 6 {
		h.Fatalf("ended %+v", t)
	}
	for _, name := range []string{"s1", "s2"} {
		// Told once durable, which may be after the task reads as ended;
		// CloseMoved below checks that it is told no more.
		var told []engine.NewMessage
		testwait.Eventually(h, "the hook told of 3 moves into "+name, func() bool {
			told = h.MovedTo(name)
			return len(told) >= 3
		})
		seen := map[string]bool{}
		for _, m := range told {
			w, ok := in[m.Body]
			if !ok || seen[m.Body] || !strings.HasPrefix(m.Body, name) || m.MD5OfBody != w.MD5OfBody ||
				m.MD5OfAttrs != w.MD5OfAttrs || m.MessageGroupID != w.MessageGroupID || !sameAttributes(m.Attributes, w.Attributes) {
				h.Fatalf("the hook was told of %+v moving into %s", m, name)
			}
			seen[m.Body] = true
		}
	}

	// A new hook replaces the old one.
	var mu sync.Mutex
	var second []string
	h.B.OnMovedByTask(func(account, queue string, m *engine.NewMessage) {
		mu.Lock()
		defer mu.Unlock()
		second = append(second, account+"/"+queue+"/"+m.Body)
	})
	h.SendBodies("dlq", "x", "y")
	t = h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst")})
	if t = h.WaitEnded("dlq", t.ID); t.Status != engine.MoveTaskCompleted || t.Moved != 2 {
		h.Fatalf("ended %+v", t)
	}
	h.WaitStats("dst", 2, 0, 0)
	h.CloseMoved("dst", 0) // the replaced hook was told nothing
	for _, name := range []string{"s1", "s2"} {
		if n := len(h.MovedTo(name)); n != 3 {
			h.Fatalf("the hook was told of %d moves into %s, want 3", n, name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(second)
	if want := []string{Account + "/dst/x", Account + "/dst/y"}; !slices.Equal(second, want) {
		h.Fatalf("the new hook was told of %q, want %q", second, want)
	}
}
