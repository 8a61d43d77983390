package embedded

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

const acct = enginetest.Account

func settings() engine.QueueSettings { return enginetest.Settings() }

// reopen closes e and opens the same directory again with clk.
func reopen(t *testing.T, e *Engine, dir string, clk clock.Clock) *Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openTest(t, Options{Dir: dir, Clock: clk})
}

// mustStats returns the queue's message counts (stats_test.go checks the
// other figures).
func mustStats(t *testing.T, e *Engine, name string) engine.Stats {
	t.Helper()
	s := mustFullStats(t, e, name)
	return engine.Stats{Visible: s.Visible, NotVisible: s.NotVisible, Delayed: s.Delayed}
}

func mustFullStats(t *testing.T, e *Engine, name string) engine.Stats {
	t.Helper()
	s, err := e.Stats(context.Background(), acct, name)
	if err != nil {
		t.Fatalf("Stats(%s): %v", name, err)
	}
	return s
}

func mustCreate(t *testing.T, e *Engine, q engine.Queue) {
	t.Helper()
	if q.Account == "" {
		q.Account = acct
	}
	if _, created, err := e.CreateQueue(context.Background(), q); err != nil || !created {
		t.Fatalf("CreateQueue(%s): %v %v", q.Name, created, err)
	}
}

func mustSend(t *testing.T, e *Engine, name string, msgs ...engine.NewMessage) []string {
	t.Helper()
	res, err := e.Send(context.Background(), acct, name, msgs)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.MessageID
	}
	return ids
}

func mustReceive(t *testing.T, e *Engine, name string, req engine.ReceiveRequest) []engine.Message {
	t.Helper()
	if req.Max == 0 {
		req.Max = 10
	}
	msgs, err := e.Receive(context.Background(), acct, name, req)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return msgs
}

func TestRestartKeepsState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})

	s := settings()
	s.VisibilityTimeout = time.Minute
	mustCreate(t, e, engine.Queue{
		Name:       "q",
		Attributes: map[string]string{"VisibilityTimeout": "60"},
		Tags:       map[string]string{"env": "test"},
		Settings:   s,
	})
	mustCreate(t, e, engine.Queue{Name: "purged", Settings: settings()})
	mustCreate(t, e, engine.Queue{Name: "gone", Settings: settings()})
	mustSend(t, e, "gone", engine.NewMessage{Body: "x"})
	if err := e.DeleteQueue(ctx, acct, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.Purge(ctx, acct, "purged"); err != nil {
		t.Fatal(err)
	}

	delay := time.Hour
	ids := mustSend(t, e, "q",
		engine.NewMessage{Body: "in-flight"},
		engine.NewMessage{Body: "deleted"},
		engine.NewMessage{Body: "visible", Attributes: []engine.MessageAttribute{
			{Name: "n", DataType: "Number", StringValue: "1"},
			{Name: "b", DataType: "Binary", BinaryValue: []byte("bin")},
		}, TraceHeader: "Root=1", MessageGroupID: "g", SenderID: "s", MD5OfBody: "m1", MD5OfAttrs: "m2"},
		engine.NewMessage{Body: "delayed", Delay: &delay},
	)
	got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 2})
	if len(got) != 2 || got[0].Body != "in-flight" || got[1].Body != "deleted" {
		t.Fatalf("received %v", got)
	}
	if errs, err := e.Delete(ctx, acct, "q", []string{got[1].ReceiptHandle}); err != nil || errs[0] != nil {
		t.Fatalf("delete: %v %v", errs, err)
	}
	if err := e.UpdateQueue(ctx, acct, "q", func(q *engine.Queue) error {
		q.Tags["owner"] = "me"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before, err := e.ListQueues(ctx, acct, "")
	if err != nil {
		t.Fatal(err)
	}
	statsBefore := mustStats(t, e, "q")
	if want := (engine.Stats{Visible: 1, NotVisible: 1, Delayed: 1}); statsBefore != want {
		t.Fatalf("stats before restart %+v, want %+v", statsBefore, want)
	}

	e = reopen(t, e, dir, clk)

	after, err := e.ListQueues(ctx, acct, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("queues changed across restart:\n%+v\n%+v", before, after)
	}
	if got := mustStats(t, e, "q"); got != statsBefore {
		t.Fatalf("stats after restart %+v, want %+v", got, statsBefore)
	}
	if err := e.Purge(ctx, acct, "purged"); !errors.Is(err, engine.ErrPurgeInProgress) {
		t.Fatalf("purge right after restart: %v (LastPurge lost?)", err)
	}

	hour := time.Hour
	vis := mustReceive(t, e, "q", engine.ReceiveRequest{Visibility: &hour})
	if len(vis) != 1 || vis[0].MessageID != ids[2] || vis[0].Body != "visible" || vis[0].TraceHeader != "Root=1" ||
		vis[0].MessageGroupID != "g" || vis[0].SenderID != "s" || vis[0].MD5OfBody != "m1" || vis[0].MD5OfAttrs != "m2" ||
		len(vis[0].Attributes) != 2 || string(vis[0].Attributes[1].BinaryValue) != "bin" || !vis[0].SentAt.Equal(enginetest.Start) {
		t.Fatalf("visible message after restart: %+v", vis)
	}

	// The in-flight receipt survives: its handle still works, its deadline holds.
	if errs, err := e.ChangeVisibility(ctx, acct, "q", []engine.VisibilityChange{{ReceiptHandle: got[0].ReceiptHandle, Timeout: 2 * time.Minute}}); err != nil || errs[0] != nil {
		t.Fatalf("change with a pre-restart handle: %v %v", errs, err)
	}
	clk.Advance(2 * time.Minute)
	again := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 1})
	if len(again) != 1 || again[0].MessageID != ids[0] || again[0].ReceiveCount != 2 || !again[0].FirstReceiveAt.Equal(got[0].FirstReceiveAt) {
		t.Fatalf("in-flight message after restart: %+v", again)
	}
	// The superseded pre-restart handle deletes nothing.
	if errs, _ := e.Delete(ctx, acct, "q", []string{got[0].ReceiptHandle}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if s := mustStats(t, e, "q"); s.NotVisible != 2 {
		t.Fatalf("stale handle deleted: %+v", s)
	}
	clk.Advance(2 * time.Hour)
	if d := mustReceive(t, e, "q", engine.ReceiveRequest{}); len(d) != 3 {
		t.Fatalf("after the delay: %d messages, want 3 (the deleted one must not return)", len(d))
	}

	// New ids after a restart never collide with old ones.
	newIDs := mustSend(t, e, "q", engine.NewMessage{Body: "new"})
	if slices.Contains(ids, newIDs[0]) {
		t.Fatal("message id reused")
	}
	if _, err := e.GetQueue(ctx, acct, "gone"); !errors.Is(err, engine.ErrQueueNotFound) {
		t.Fatalf("deleted queue after restart: %v", err)
	}
}

func TestRestartExpiresWhileClosed(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	s := settings()
	s.Retention = time.Hour
	mustCreate(t, e, engine.Queue{Name: "q", Settings: s})
	mustSend(t, e, "q", engine.NewMessage{Body: "old"})
	mustReceive(t, e, "q", engine.ReceiveRequest{})
	clk.Advance(30 * time.Minute)
	mustSend(t, e, "q", engine.NewMessage{Body: "young"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(45 * time.Minute)
	e = openTest(t, Options{Dir: dir, Clock: clk})
	if got := mustStats(t, e, "q"); got != (engine.Stats{Visible: 1}) {
		t.Fatalf("stats %+v", got)
	}
	e = reopen(t, e, dir, clk)
	if got := mustStats(t, e, "q"); got != (engine.Stats{Visible: 1}) {
		t.Fatalf("stats after a second restart %+v", got)
	}
	// The expired message's records are gone from the store.
	if n := countMsgRecords(t, e); n != 1 {
		t.Fatalf("%d message records in the store, want 1", n)
	}
}

func countMsgRecords(t *testing.T, e *Engine) int {
	t.Helper()
	n := 0
	if err := e.scan([]byte{prefixMsg}, []byte{prefixMsg + 1}, func(*pebble.Iterator) (bool, error) {
		n++
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAcknowledgedDeleteNeverReturns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	var msgs []engine.NewMessage
	for i := range 10 {
		msgs = append(msgs, engine.NewMessage{Body: fmt.Sprint(i)})
	}
	for range 5 {
		mustSend(t, e, "q", msgs...)
	}
	kept := map[string]bool{}
	for {
		got := mustReceive(t, e, "q", engine.ReceiveRequest{})
		if len(got) == 0 {
			break
		}
		var del []string
		for i, m := range got {
			if i%2 == 0 {
				del = append(del, m.ReceiptHandle)
			} else {
				kept[m.MessageID] = true
			}
		}
		if errs, err := e.Delete(ctx, acct, "q", del); err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
			t.Fatalf("delete: %v %v", errs, err)
		}
	}
	e = reopen(t, e, dir, clk)
	clk.Advance(time.Hour)
	got := map[string]bool{}
	for _, m := range mustReceive(t, e, "q", engine.ReceiveRequest{Max: 100}) {
		got[m.MessageID] = true
	}
	if !reflect.DeepEqual(got, kept) {
		t.Fatalf("after restart %d messages, want the %d kept", len(got), len(kept))
	}
	if n := countMsgRecords(t, e); n != 2*len(kept) {
		t.Fatalf("%d message records, want %d (body and state of each kept message)", n, 2*len(kept))
	}
}

func TestNoSyncRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(enginetest.Start)
	e := openTest(t, Options{Dir: dir, Clock: clk, NoSync: true})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	mustSend(t, e, "q", engine.NewMessage{Body: "a"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, Options{Dir: dir, Clock: clk, NoSync: true})
	if got := mustStats(t, e, "q"); got != (engine.Stats{Visible: 1}) {
		t.Fatalf("stats %+v", got)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), Options{}); err == nil {
		t.Fatal("Open without Dir or InMemory succeeded")
	}
	dir := t.TempDir()
	openTest(t, Options{Dir: dir})
	// The store is locked while open.
	if e2, err := Open(context.Background(), Options{Dir: dir}); err == nil {
		_ = e2.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
}
