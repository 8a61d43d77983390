package embedded

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

func fifoSettings(scope string) engine.QueueSettings {
	s := settings()
	s.FIFO = true
	s.DeduplicationScope = scope
	return s
}

func sendResults(t *testing.T, e *Engine, name string, msgs ...engine.NewMessage) []engine.SendResult {
	t.Helper()
	res, err := e.Send(context.Background(), acct, name, msgs)
	if err != nil {
		t.Fatalf("Send(%s): %v", name, err)
	}
	return res
}

func countKeys(t *testing.T, e *Engine, lo, hi []byte) int {
	t.Helper()
	n := 0
	if err := e.scan(lo, hi, func(*pebble.Iterator) (bool, error) { n++; return false, nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func countDedupRecords(t *testing.T, e *Engine) int {
	return countKeys(t, e, []byte{prefixDedup}, []byte{prefixDedup + 1})
}

// waitFor waits until cond, which runs under q's lock, holds.
func waitFor(t *testing.T, q *queue, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, what, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return cond()
	})
}

// Deduplication entries are stored with their sends and leave the store
// with their window: a restart past it finds and keeps none. (The
// conformance suite checks the window itself across restarts.)
func TestFIFODedupRecordsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings("")})
	sendResults(t, e, "q.fifo", enginetest.Msg("g1", "a"), enginetest.Msg("g2", "b"))
	clk.Advance(time.Minute)
	sendResults(t, e, "q.fifo", enginetest.Msg("g1", "c"))
	e = reopen(t, e, dir, clk)
	if n := countDedupRecords(t, e); n != 3 {
		t.Fatalf("%d deduplication records after a restart, want 3", n)
	}
	// Past the first two's window, not the third's.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(engine.DeduplicationWindow - time.Second)
	e = openTest(t, Options{Dir: dir, Clock: clk})
	if n := countDedupRecords(t, e); n != 1 {
		t.Fatalf("%d deduplication records after the window, want 1", n)
	}
	e = reopen(t, e, dir, clk)
	if n := countDedupRecords(t, e); n != 1 {
		t.Fatalf("%d deduplication records after another restart, want 1", n)
	}
}

// Two sends to one group whose batches become durable out of seq order
// enter the index in seq order: the later one waits for the earlier.
func TestFIFOSendsEnterInSeqOrder(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{InMemory: true, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings("")})
	q, _ := e.lookup(acct, "q.fifo")
	var calls atomic.Int32
	release := make(chan struct{})
	e.beforeSendCommit = func() {
		if calls.Add(1) == 1 {
			<-release
		}
	}
	type result struct {
		res []engine.SendResult
		err error
	}
	send := func(body string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			res, err := e.Send(context.Background(), acct, "q.fifo", []engine.NewMessage{enginetest.Msg("g", body)})
			ch <- result{res, err}
		}()
		return ch
	}
	first := send("first")
	waitFor(t, q, "the first send to reach its commit", func() bool { return calls.Load() == 1 })
	second := send("second")
	waitFor(t, q, "the second send to be durable", func() bool {
		return len(q.pending) == 2 && q.pending[1].state == pendingDurable
	})
	if got := mustReceive(t, e, "q.fifo", engine.ReceiveRequest{}); len(got) != 0 {
		t.Fatalf("received %q before the earlier send was in", enginetest.Bodies(got))
	}
	select {
	case r := <-second:
		t.Fatalf("second send returned before entering the index: %+v", r)
	default:
	}
	close(release)
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil || r1.res[0].SequenceNumber >= r2.res[0].SequenceNumber {
		t.Fatalf("sends: %+v, %+v", r1, r2)
	}
	got := mustReceive(t, e, "q.fifo", engine.ReceiveRequest{})
	if !slices.Equal(enginetest.Bodies(got), []string{"first", "second"}) {
		t.Fatalf("received %q", enginetest.Bodies(got))
	}
	checkIndexes(t, e)
}

// A purge racing a send drops its messages but not the deduplication
// window; a queue delete racing one leaves no record behind.
func TestFIFOSendRacingPurgeAndDelete(t *testing.T) {
	for _, purge := range []bool{true, false} {
		name := map[bool]string{true: "purge", false: "delete"}[purge]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(enginetest.Start)
			e := openTest(t, Options{Dir: t.TempDir(), Clock: clk})
			mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings("")})
			q, _ := e.lookup(acct, "q.fifo")
			reached := make(chan struct{})
			release := make(chan struct{})
			e.beforeSendCommit = func() {
				close(reached)
				<-release
			}
			done := make(chan error, 1)
			var res []engine.SendResult
			go func() {
				var err error
				res, err = e.Send(ctx, acct, "q.fifo", []engine.NewMessage{enginetest.Msg("g", "a")})
				done <- err
			}()
			<-reached
			var err error
			if purge {
				err = e.Purge(ctx, acct, "q.fifo")
			} else {
				err = e.DeleteQueue(ctx, acct, "q.fifo")
			}
			if err != nil {
				t.Fatal(err)
			}
			close(release)
			err = <-done
			e.beforeSendCommit = nil
			if !purge {
				if !errors.Is(err, engine.ErrQueueNotFound) {
					t.Fatalf("send racing a delete: %v", err)
				}
				lo, hi := queueMsgSpan(q.id)
				if n, d := countKeys(t, e, lo, hi), countDedupRecords(t, e); n != 0 || d != 0 {
					t.Fatalf("%d message and %d deduplication records left", n, d)
				}
				return
			}
			if err != nil {
				t.Fatalf("send racing a purge: %v", err)
			}
			if s := mustStats(t, e, "q.fifo"); s != (engine.Stats{}) {
				t.Fatalf("stats after the purge %+v", s)
			}
			if r := sendResults(t, e, "q.fifo", enginetest.Msg("g", "a"))[0]; !r.Duplicate || r.MessageID != res[0].MessageID {
				t.Fatalf("resend after the purge = %+v", r)
			}
			checkIndexes(t, e)
		})
	}
}

// Deduplication entries leave memory and the store once the window has
// passed, without any call on the queue: its timer prunes them.
func TestFIFODedupPruned(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: t.TempDir(), Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings("")})
	q, _ := e.lookup(acct, "q.fifo")
	for i := range 10 {
		var batch []engine.NewMessage
		for j := range 10 {
			batch = append(batch, enginetest.Msg("g", string(rune('a'+i))+string(rune('a'+j))))
		}
		sendResults(t, e, "q.fifo", batch...)
		clk.Advance(time.Second)
	}
	if n := countDedupRecords(t, e); n != 100 {
		t.Fatalf("%d records", n)
	}
	// Sent at 0s..9s, now 10s: the timer is due at 5m+1s (slack included)
	// and prunes what has expired when it runs, at 5m+4s: 0s..4s.
	clk.Advance(engine.DeduplicationWindow - 6*time.Second)
	waitFor(t, q, "the first half to be pruned", func() bool { return len(q.dedup.m) == 50 && q.dedup.order.len() == 50 })
	clk.Advance(10 * time.Second)
	waitFor(t, q, "every entry to be pruned", func() bool { return len(q.dedup.m) == 0 && q.dedup.order.len() == 0 })
	if n := countDedupRecords(t, e); n != 0 {
		t.Fatalf("%d records left", n)
	}
	if s := mustStats(t, e, "q.fifo"); s.Visible != 100 {
		t.Fatalf("stats %+v", s)
	}
}

// A send without a deduplication id (the SQS layer always sets one) leaves
// nothing to remember. (The conformance suite checks that nothing is a
// duplicate.)
func TestFIFONoDedupIDNoRecord(t *testing.T) {
	e := openTest(t, Options{InMemory: true, Clock: clock.NewFake(enginetest.Start)})
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings("")})
	sendResults(t, e, "q.fifo", engine.NewMessage{Body: "a", MessageGroupID: "g"}, engine.NewMessage{Body: "a", MessageGroupID: "g"})
	if n := countDedupRecords(t, e); n != 0 {
		t.Fatalf("%d deduplication records", n)
	}
}

// A FIFO delete lets the next message of the group out only once it is
// durable; meanwhile a retry of it waits too, and the stats count the
// message in flight.
func TestFIFODeleteUnblocksWhenDurable(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, Options{Dir: t.TempDir(), Clock: clock.NewFake(enginetest.Start)})
	mustCreate(t, e, engine.Queue{Name: "q.fifo", Settings: fifoSettings("")})
	sendResults(t, e, "q.fifo", enginetest.Msg("g", "a"), enginetest.Msg("g", "b"))
	a := mustReceive(t, e, "q.fifo", engine.ReceiveRequest{Max: 1})
	q, _ := e.lookup(acct, "q.fifo")
	reached := make(chan struct{})
	release := make(chan struct{})
	e.beforeDeleteSync = func() {
		close(reached)
		<-release
	}
	done := make(chan error, 1)
	go func() {
		errs, err := e.Delete(ctx, acct, "q.fifo", []string{a[0].ReceiptHandle})
		if err == nil {
			err = errs[0]
		}
		done <- err
	}()
	<-reached
	e.beforeDeleteSync = nil
	if got := mustReceive(t, e, "q.fifo", engine.ReceiveRequest{}); len(got) != 0 {
		t.Fatalf("received %q while the delete of a was not durable", enginetest.Bodies(got))
	}
	if s := mustStats(t, e, "q.fifo"); s != (engine.Stats{Visible: 1, NotVisible: 1}) {
		t.Fatalf("stats %+v", s)
	}
	errs, err := e.ChangeVisibility(ctx, acct, "q.fifo", []engine.VisibilityChange{{ReceiptHandle: a[0].ReceiptHandle}})
	if err != nil || !errors.Is(errs[0], engine.ErrMessageNotInflight) {
		t.Fatalf("change visibility of a message being deleted: %v %v", errs, err)
	}
	checkIndexes(t, e)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, q, "a to leave", func() bool { return len(q.msgs) == 1 })
	got := mustReceive(t, e, "q.fifo", engine.ReceiveRequest{})
	if !slices.Equal(enginetest.Bodies(got), []string{"b"}) {
		t.Fatalf("received %q", enginetest.Bodies(got))
	}
}
