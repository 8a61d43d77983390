package embedded

import (
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// A message moved into a dead-letter queue keeps counting from its move,
// with its receives counted from there, after a restart; FIFO groups in
// flight are rebuilt too.
func TestRestartKeepsOldestAndGroups(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "dlq", Settings: settings()})
	src := settings()
	src.Redrive = &engine.Redrive{TargetAccount: acct, TargetName: "dlq", MaxReceiveCount: 2}
	mustCreate(t, e, engine.Queue{Name: "src", Settings: src})
	fifo := settings()
	fifo.FIFO = true
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifo})

	mustSend(t, e, "src", engine.NewMessage{Body: "poison"})
	zero := time.Duration(0)
	for range 2 {
		mustReceive(t, e, "src", engine.ReceiveRequest{Visibility: &zero})
	}
	clk.Advance(time.Hour)
	movedAt := clk.Now()
	if got := mustReceive(t, e, "src", engine.ReceiveRequest{}); len(got) != 0 {
		t.Fatalf("source handed out %d", len(got))
	}
	hour := time.Hour
	if got := mustReceive(t, e, "dlq", engine.ReceiveRequest{Visibility: &hour}); len(got) != 1 || got[0].ReceiveCount != 3 {
		t.Fatalf("dead-letter queue handed out %+v", got)
	}
	mustSend(t, e, "q.fifo",
		engine.NewMessage{Body: "a", MessageGroupID: "g1", DeduplicationID: "a"},
		engine.NewMessage{Body: "b", MessageGroupID: "g2", DeduplicationID: "b"})
	mustReceive(t, e, "q.fifo", engine.ReceiveRequest{Visibility: &hour})

	e = reopen(t, e, dir, clk)
	defer e.Close()
	if st := mustFullStats(t, e, "dlq"); !st.OldestAt.Equal(movedAt) || st.NotVisible != 1 {
		t.Errorf("dead-letter queue after restart: %+v, want oldest %v", st, movedAt)
	}
	if st := mustFullStats(t, e, "q.fifo"); st.GroupsInFlight != 2 || !st.OldestAt.Equal(movedAt) {
		t.Errorf("FIFO queue after restart: %+v", st)
	}
	// Its second receive in the dead-letter queue keeps it counted; the
	// third does not.
	clk.Advance(2 * time.Hour)
	mustReceive(t, e, "dlq", engine.ReceiveRequest{Visibility: &zero})
	if st := mustFullStats(t, e, "dlq"); !st.OldestAt.Equal(movedAt) {
		t.Errorf("after a second receive: %+v", st)
	}
	mustReceive(t, e, "dlq", engine.ReceiveRequest{Visibility: &zero})
	if st := mustFullStats(t, e, "dlq"); !st.OldestAt.IsZero() {
		t.Errorf("after a third receive: %+v", st)
	}
}
