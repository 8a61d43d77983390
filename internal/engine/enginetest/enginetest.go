// Package enginetest is the conformance suite every engine.Store must
// pass, written so that any backend runs it unchanged: a backend's test
// calls Run with a Driver that opens its stores.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// Account is the account every queue of the suite belongs to, and Other
// the account of the tests that need a second one.
const (
	Account = "123456789012"
	Other   = "000000000000"
)

// Start is the fake clock's time when a subtest begins.
var Start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Driver is how a backend runs the suite. Every store it opens takes its
// every timestamp and timer from the fake clock it is given.
type Driver struct {
	// Open returns a new, empty store of its own (a fresh directory, a
	// schema of its own, ...). The suite closes it when the subtest ends,
	// and may have closed it before: Close must tolerate a second call.
	Open func(t *testing.T, clk *clock.Fake) engine.Store
	// Reopen closes old cleanly (unless the suite has closed it already)
	// and opens a new store on the same data, as a restarted process
	// would: the move tasks it resumes are held until its first
	// OnMovedByTask, as the server asks of its store. Nil for a store
	// that keeps nothing across a restart, whose Durable is false: the
	// restart tests then skip.
	Reopen func(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store
	// Crash, optional, stops old as a crash would, without a clean close
	// (what old had not made durable may be lost), and opens a new store
	// on what old had made durable, holding its move tasks as Reopen
	// does. Once it returns, old does nothing more. Nil skips the crash
	// tests.
	Crash func(t *testing.T, clk *clock.Fake, old engine.Store) engine.Store
	// OpenWaits, optional, is Open with engine.Waits set. Nil skips the
	// test of the waits turned off.
	OpenWaits func(t *testing.T, clk *clock.Fake, w engine.Waits) engine.Store
}

// test is one test of the suite.
type test struct {
	name string
	fn   func(h *H)
}

// tests is the suite, in the order it runs.
var tests = slices.Concat(queueTests, messageTests, deadLetterTests, fifoTests, storeTests, conditionalTests, clusterTests, restartTests, resetTests, peekTests)

var queueTests = []test{
	{"CreateQueueIdempotent", testCreateIdempotent},
	{"CreateQueueAccounts", testCreateAccounts},
	{"RecreateDelay", testRecreateDelay},
	{"ListQueues", testListQueues},
	{"UpdateQueue", testUpdateQueue},
	{"DeleteQueue", testDeleteQueue},
	{"MissingQueue", testMissingQueue},
	{"CancelledContext", testCancelledContext},
}

var messageTests = []test{
	{"SendReceiveDelete", testSendReceiveDelete},
	{"ReceiveMax", testReceiveMax},
	{"ReceivedMessagesIndependent", testReceivedIndependent},
	{"EmptyCalls", testEmptyCalls},
	{"VisibilityExpiry", testVisibilityExpiry},
	{"ReceiveVisibilityOverride", testReceiveVisibilityOverride},
	{"QueueDelay", testQueueDelay},
	{"MessageDelay", testMessageDelay},
	{"Retention", testRetention},
	{"RetentionReduced", testRetentionReduced},
	{"HandleInvalid", testHandleInvalid},
	{"HandleOtherQueue", testHandleOtherQueue},
	{"HandleStale", testHandleStale},
	{"DeleteAfterVisibilityExpired", testDeleteAfterExpiry},
	{"ChangeVisibility", testChangeVisibility},
	{"ChangeVisibilityZero", testChangeVisibilityZero},
	{"ChangeVisibilityLimit", testChangeVisibilityLimit},
	{"ChangeVisibilityAfterExpiry", testChangeVisibilityAfterExpiry},
	{"Purge", testPurge},
	{"LongPollWokenBySend", testLongPollSend},
	{"LongPollServedWhole", testLongPollServedWhole},
	{"LongPollWokenByVisibilityExpiry", testLongPollVisibility},
	{"LongPollWokenByDelayEnd", testLongPollDelay},
	{"LongPollWokenByChangeVisibility", testLongPollChangeVisibility},
	{"LongPollCancel", testLongPollCancel},
	{"LongPollTimeout", testLongPollTimeout},
	{"LongPollQueueDeleted", testLongPollQueueDeleted},
	{"ReceiveCancelledContext", testReceiveCancelled},
	{"ConcurrentWaitersAndSenders", testConcurrent},
	{"SendMany", testSendMany},
	{"SendManyFIFO", testSendManyFIFO},
	{"SendManyEmpty", testSendManyEmpty},
	{"SendManyWakesWaiters", testSendManyWakesWaiters},
	{"Close", testClose},
	{"StatsOldest", testStatsOldest},
	{"StatsOldestRedrive", testStatsOldestRedrive},
	{"StatsFIFOGroupsInFlight", testStatsFIFOGroupsInFlight},
	{"StatsFIFOOldestRedrive", testStatsFIFOOldestRedrive},
}

var deadLetterTests = []test{
	{"RedriveOnReceive", testRedriveOnReceive},
	{"RedriveKeepsMax", testRedriveKeepsMax},
	{"RedriveTargetMissing", testRedriveTargetMissing},
	{"RedriveLongPoll", testRedriveLongPoll},
	{"RedriveLoop", testRedriveLoop},
	{"RedriveToItself", testRedriveToItself},
	{"MoveTaskToSources", testMoveTaskToSources},
	{"MoveTaskToDestination", testMoveTaskToDestination},
	{"MoveTaskRate", testMoveTaskRate},
	{"MoveTaskUnlimited", testMoveTaskUnlimited},
	{"MoveTaskOnePerSource", testMoveTaskOnePerSource},
	{"MoveTaskAccountLimit", testMoveTaskAccountLimit},
	{"MoveTaskCancel", testMoveTaskCancel},
	{"MoveTaskCancelEnded", testMoveTaskCancelEnded},
	{"MoveTaskDestinationDeleted", testMoveTaskDestinationDeleted},
	{"MoveTaskNoSourceARN", testMoveTaskNoSourceARN},
	{"MoveTaskSourceDeleted", testMoveTaskSourceDeleted},
	{"MoveTaskTimeout", testMoveTaskTimeout},
	{"MoveTaskList", testMoveTaskList},
	{"MoveTaskMissingQueue", testMoveTaskMissingQueue},
	{"OnMovedByTask", testOnMovedByTask},
}

var fifoTests = []test{
	{"FIFODedup", testFIFODedup},
	{"FIFODedupGroupScope", testFIFODedupGroupScope},
	{"FIFONoDedupID", testFIFONoDedupID},
	{"FIFOOrder", testFIFOOrder},
	{"FIFOVisibilityHeadFirst", testFIFOVisibilityHeadFirst},
	{"FIFOBatchOneGroupFirst", testFIFOBatchOneGroupFirst},
	{"FIFOGroupsIndependent", testFIFOGroupsIndependent},
	{"FIFOReceiveAttempt", testFIFOReceiveAttempt},
	{"FIFOExpiredHandle", testFIFOExpiredHandle},
	{"FIFODelay", testFIFODelay},
	{"FIFOLongPoll", testFIFOLongPoll},
	{"FIFOSequenceNumbers", testFIFOSequenceNumbers},
	{"FIFORedrive", testFIFORedrive},
	{"FIFORedriveKeepsOrder", testFIFORedriveKeepsOrder},
	{"FIFOMoveTask", testFIFOMoveTask},
	{"FIFOProperty", testFIFOProperty},
}

var storeTests = []test{
	{"Records", testRecords},
	{"MetricPoints", testMetricPoints},
	{"DeleteMetricPoints", testDeleteMetricPoints},
	{"Monitor", testMonitor},
}

// Run runs the suite, each test on a store of its own and in parallel
// with the others.
func Run(t *testing.T, d Driver) {
	if d.Open == nil {
		t.Fatal("enginetest: Driver.Open is nil")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(Start)
			h := &H{T: t, Clk: clk, Ctx: context.Background(), d: d, moved: &movedLog{}}
			h.B = d.Open(t, clk)
			// As the server does with every store it is given.
			h.B.OnMovedByTask(h.moved.record)
			t.Cleanup(func() { _ = h.B.Close() })
			tc.fn(h)
		})
	}
}

// H is a subtest's harness: a store, its clock and terse helpers that
// fail the test on unexpected errors.
type H struct {
	*testing.T
	// B is the store under test; a restart replaces it.
	B   engine.Store
	Clk *clock.Fake
	Ctx context.Context
	d   Driver
	// moved is what the stores' OnMovedByTask hooks were told.
	moved *movedLog
}

// movedLog records what OnMovedByTask tells, as the server's counters do.
type movedLog struct {
	mu   sync.Mutex
	msgs map[string][]engine.NewMessage // by account/queue
}

func (l *movedLog) record(account, queue string, m *engine.NewMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msgs == nil {
		l.msgs = map[string][]engine.NewMessage{}
	}
	k := account + "/" + queue
	l.msgs[k] = append(l.msgs[k], *m)
}

// MovedTo returns what the OnMovedByTask hook was told of messages moved
// into the queue of Account, in the order it was told.
func (h *H) MovedTo(name string) []engine.NewMessage {
	h.moved.mu.Lock()
	defer h.moved.mu.Unlock()
	return slices.Clone(h.moved.msgs[Account+"/"+name])
}

// Settings are the SQS defaults.
func Settings() engine.QueueSettings {
	return engine.QueueSettings{
		VisibilityTimeout: 30 * time.Second,
		Retention:         4 * 24 * time.Hour,
		MaximumSize:       1 << 20,
	}
}

// ARN is the ARN the suite gives a queue of Account.
func ARN(name string) string { return "arn:aws:sqs:us-east-1:" + Account + ":" + name }

// Create creates a queue with the default settings changed by mod.
func (h *H) Create(name string, mod func(*engine.QueueSettings)) {
	h.Helper()
	s := Settings()
	if mod != nil {
		mod(&s)
	}
	_, created, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: Account, Name: name, ARN: ARN(name), Settings: s})
	if err != nil || !created {
		h.Fatalf("CreateQueue(%s) = created %v, %v", name, created, err)
	}
}

// Send sends msgs and returns their ids.
func (h *H) Send(name string, msgs ...engine.NewMessage) []string {
	h.Helper()
	res, err := h.B.Send(h.Ctx, Account, name, msgs)
	if err != nil {
		h.Fatalf("Send(%s): %v", name, err)
	}
	if len(res) != len(msgs) {
		h.Fatalf("Send(%s) returned %d results for %d messages", name, len(res), len(msgs))
	}
	ids := make([]string, len(res))
	for i, r := range res {
		if r.MessageID == "" {
			h.Fatalf("Send(%s): empty message id", name)
		}
		ids[i] = r.MessageID
	}
	return ids
}

// SendBodies sends one plain message per body.
func (h *H) SendBodies(name string, bodies ...string) []string {
	h.Helper()
	msgs := make([]engine.NewMessage, len(bodies))
	for i, b := range bodies {
		msgs[i] = Plain(b)
	}
	return h.Send(name, msgs...)
}

// Receive receives without waiting unless req says otherwise.
func (h *H) Receive(name string, req engine.ReceiveRequest) []engine.Message {
	h.Helper()
	if req.Max == 0 {
		req.Max = 10
	}
	msgs, err := h.B.Receive(h.Ctx, Account, name, req)
	if err != nil {
		h.Fatalf("Receive(%s): %v", name, err)
	}
	return msgs
}

// ReceiveOne receives and expects exactly one message.
func (h *H) ReceiveOne(name string, req engine.ReceiveRequest) engine.Message {
	h.Helper()
	msgs := h.Receive(name, req)
	if len(msgs) != 1 {
		h.Fatalf("Receive(%s) returned %d messages, want 1", name, len(msgs))
	}
	return msgs[0]
}

// ReceiveAll receives until the queue has nothing visible, keeping what it
// received in flight for an hour.
func (h *H) ReceiveAll(name string) []engine.Message {
	h.Helper()
	hour := time.Hour
	var all []engine.Message
	for {
		msgs := h.Receive(name, engine.ReceiveRequest{Visibility: &hour})
		if len(msgs) == 0 {
			return all
		}
		all = append(all, msgs...)
	}
}

// ReceiveNone expects an empty short poll.
func (h *H) ReceiveNone(name string) {
	h.Helper()
	if msgs := h.Receive(name, engine.ReceiveRequest{}); len(msgs) != 0 {
		h.Fatalf("Receive(%s) returned %d messages, want none", name, len(msgs))
	}
}

// Delete deletes by handles and returns the per-handle errors.
func (h *H) Delete(name string, handles ...string) []error {
	h.Helper()
	errs, err := h.B.Delete(h.Ctx, Account, name, handles)
	if err != nil {
		h.Fatalf("Delete(%s): %v", name, err)
	}
	if len(errs) != len(handles) {
		h.Fatalf("Delete(%s) returned %d results for %d handles", name, len(errs), len(handles))
	}
	return errs
}

// ChangeVisibility changes one handle's visibility and returns its error.
func (h *H) ChangeVisibility(name, handle string, d time.Duration) error {
	h.Helper()
	errs, err := h.B.ChangeVisibility(h.Ctx, Account, name, []engine.VisibilityChange{{ReceiptHandle: handle, Timeout: d}})
	if err != nil {
		h.Fatalf("ChangeVisibility(%s): %v", name, err)
	}
	if len(errs) != 1 {
		h.Fatalf("ChangeVisibility(%s) returned %d results for 1 change", name, len(errs))
	}
	return errs[0]
}

// WantStats checks the queue's counts.
func (h *H) WantStats(name string, visible, notVisible, delayed int64) {
	h.Helper()
	s, err := h.B.Stats(h.Ctx, Account, name)
	if err != nil {
		h.Fatalf("Stats(%s): %v", name, err)
	}
	if want := (engine.Stats{Visible: visible, NotVisible: notVisible, Delayed: delayed}); counts(s) != want {
		h.Fatalf("Stats(%s) = %+v, want %+v", name, s, want)
	}
}

// WaitPending waits until the fake clock has at least n timers, i.e. until
// a goroutine has reached its wait.
func (h *H) WaitPending(n int) {
	h.Helper()
	testwait.Pending(h, h.Clk, n)
}

// Result is what an asynchronous Receive returned.
type Result struct {
	Msgs []engine.Message
	Err  error
}

// ReceiveAsync starts a Receive in a goroutine.
func (h *H) ReceiveAsync(ctx context.Context, name string, req engine.ReceiveRequest) <-chan Result {
	ch := make(chan Result, 1)
	go func() {
		msgs, err := h.B.Receive(ctx, Account, name, req)
		ch <- Result{msgs, err}
	}()
	return ch
}

// StartWait starts a long poll and returns once it is waiting.
func (h *H) StartWait(ctx context.Context, name string, req engine.ReceiveRequest) <-chan Result {
	h.Helper()
	before := h.Clk.Pending()
	ch := h.ReceiveAsync(ctx, name, req)
	h.WaitPending(before + 1)
	select {
	case r := <-ch:
		h.Fatalf("long poll returned before anything happened: %d messages, %v", len(r.Msgs), r.Err)
	default:
	}
	return ch
}

// Await waits for an asynchronous Receive.
func (h *H) Await(ch <-chan Result) Result {
	h.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(testwait.Deadline):
		h.Fatalf("receive did not return")
		return Result{}
	}
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: err = %v, want %v", what, got, want)
	}
}

func testCreateIdempotent(h *H) {
	q := engine.Queue{
		Account:    Account,
		Name:       "q1",
		Attributes: map[string]string{"VisibilityTimeout": "30"},
		Tags:       map[string]string{"team": "a"},
		Settings:   Settings(),
		Created:    Start,
		Modified:   Start,
	}
	got, created, err := h.B.CreateQueue(h.Ctx, q)
	if err != nil || !created {
		h.Fatalf("first create: created %v, %v", created, err)
	}
	if got.Name != "q1" || got.Account != Account || got.Attributes["VisibilityTimeout"] != "30" || got.Tags["team"] != "a" {
		h.Fatalf("first create returned %+v", got)
	}
	if !got.Created.Equal(Start) {
		h.Fatalf("Created = %v, want %v", got.Created, Start)
	}
	q2 := q
	q2.Attributes = map[string]string{"VisibilityTimeout": "60"}
	existing, created, err := h.B.CreateQueue(h.Ctx, q2)
	if err != nil || created {
		h.Fatalf("second create: created %v, %v", created, err)
	}
	if existing.Attributes["VisibilityTimeout"] != "30" {
		h.Fatalf("second create returned %v, want the existing queue's attributes", existing.Attributes)
	}
	// The caller's maps are not the stored ones.
	q.Attributes["VisibilityTimeout"] = "99"
	stored, err := h.B.GetQueue(h.Ctx, Account, "q1")
	if err != nil {
		h.Fatal(err)
	}
	if stored.Attributes["VisibilityTimeout"] != "30" {
		h.Fatalf("stored attributes changed through the caller's map: %v", stored.Attributes)
	}
}

func testCreateAccounts(h *H) {
	for _, acct := range []string{Account, "000000000000"} {
		_, created, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: acct, Name: "same", Settings: Settings()})
		if err != nil || !created {
			h.Fatalf("create in %s: created %v, %v", acct, created, err)
		}
	}
	h.SendBodies("same", "a")
	h.WantStats("same", 1, 0, 0)
	s, err := h.B.Stats(h.Ctx, "000000000000", "same")
	if err != nil || s != (engine.Stats{}) {
		h.Fatalf("other account's queue: %+v, %v", s, err)
	}
}

func testRecreateDelay(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "old")
	if err := h.B.DeleteQueue(h.Ctx, Account, "q"); err != nil {
		h.Fatal(err)
	}
	_, _, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: Account, Name: "q", Settings: Settings()})
	wantErr(h.T, "create at once", err, engine.ErrQueueDeletedRecently)
	h.Clk.Advance(engine.RecreateDelay - time.Second)
	_, _, err = h.B.CreateQueue(h.Ctx, engine.Queue{Account: Account, Name: "q", Settings: Settings()})
	wantErr(h.T, "create 59s later", err, engine.ErrQueueDeletedRecently)
	h.Clk.Advance(time.Second)
	h.Create("q", nil)
	h.WantStats("q", 0, 0, 0)
	h.ReceiveNone("q")
}

func testListQueues(h *H) {
	for _, n := range []string{"beta", "alpha-2", "alpha-1", "gamma"} {
		h.Create(n, nil)
	}
	if _, _, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: Other, Name: "alpha-x", Settings: Settings()}); err != nil {
		h.Fatal(err)
	}
	names := func(prefix string) []string {
		qs, err := h.B.ListQueues(h.Ctx, Account, prefix)
		if err != nil {
			h.Fatal(err)
		}
		var out []string
		for _, q := range qs {
			out = append(out, q.Name)
		}
		return out
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"alpha-1", "alpha-2", "beta", "gamma"}},
		{"alpha", []string{"alpha-1", "alpha-2"}},
		{"Alpha", nil},
		{"gamma", []string{"gamma"}},
		{"zzz", nil},
	} {
		if got := names(tc.prefix); !slices.Equal(got, tc.want) {
			h.Errorf("ListQueues(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
	if err := h.B.DeleteQueue(h.Ctx, Account, "beta"); err != nil {
		h.Fatal(err)
	}
	if got, want := names(""), []string{"alpha-1", "alpha-2", "gamma"}; !slices.Equal(got, want) {
		h.Errorf("after delete: %v, want %v", got, want)
	}
	// Accounts names each account with a queue once; an account whose
	// queues are all deleted has none.
	accounts := func() []string {
		h.Helper()
		as, err := h.B.Accounts(h.Ctx)
		if err != nil {
			h.Fatal(err)
		}
		return as
	}
	if got, want := accounts(), []string{Other, Account}; !slices.Equal(got, want) {
		h.Errorf("Accounts() = %v, want %v", got, want)
	}
	if err := h.B.DeleteQueue(h.Ctx, Other, "alpha-x"); err != nil {
		h.Fatal(err)
	}
	if got, want := accounts(), []string{Account}; !slices.Equal(got, want) {
		h.Errorf("Accounts() after deleting %s's queue = %v, want %v", Other, got, want)
	}
}

func testUpdateQueue(h *H) {
	h.Create("q", nil)
	refuse := errors.New("refused")
	err := h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Attributes = map[string]string{"DelaySeconds": "5"}
		return refuse
	})
	if !errors.Is(err, refuse) {
		h.Fatalf("refusing fn: err = %v", err)
	}
	q, err := h.B.GetQueue(h.Ctx, Account, "q")
	if err != nil || q.Attributes["DelaySeconds"] != "" {
		h.Fatalf("refused update was stored: %+v, %v", q.Attributes, err)
	}

	modified := Start.Add(time.Minute)
	err = h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Attributes = map[string]string{"VisibilityTimeout": "5"}
		q.Tags = map[string]string{"k": "v"}
		q.Settings.VisibilityTimeout = 5 * time.Second
		q.Modified = modified
		q.Name = "renamed"
		return nil
	})
	if err != nil {
		h.Fatal(err)
	}
	q, err = h.B.GetQueue(h.Ctx, Account, "q")
	if err != nil {
		h.Fatal(err)
	}
	if q.Name != "q" || q.Attributes["VisibilityTimeout"] != "5" || q.Tags["k"] != "v" ||
		q.Settings.VisibilityTimeout != 5*time.Second || !q.Modified.Equal(modified) {
		h.Fatalf("after update: %+v", q)
	}
	if _, err := h.B.GetQueue(h.Ctx, Account, "renamed"); !errors.Is(err, engine.ErrQueueNotFound) {
		h.Fatalf("the update renamed the queue: %v", err)
	}
	// A view is what GetQueue answers, and a later update leaves it as it was.
	view, err := h.B.ViewQueue(h.Ctx, Account, "q")
	if err != nil || !reflect.DeepEqual(view, q) {
		h.Fatalf("ViewQueue = %+v, %v; GetQueue = %+v", view, err, q)
	}
	err = h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Attributes["VisibilityTimeout"] = "6"
		q.Tags["k"] = "w"
		q.Settings.VisibilityTimeout = 6 * time.Second
		return nil
	})
	if err != nil {
		h.Fatal(err)
	}
	if view.Attributes["VisibilityTimeout"] != "5" || view.Tags["k"] != "v" {
		h.Fatalf("an update changed an earlier view: %+v", view)
	}
	if now, _ := h.B.ViewQueue(h.Ctx, Account, "q"); now.Attributes["VisibilityTimeout"] != "6" || now.Settings.VisibilityTimeout != 6*time.Second {
		h.Fatalf("view after update: %+v", now)
	}
	// The new visibility applies to the next receive.
	h.SendBodies("q", "a")
	h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(6 * time.Second)
	h.WantStats("q", 1, 0, 0)

	err = h.B.UpdateQueue(h.Ctx, Account, "nope", func(*engine.Queue) error { return nil })
	wantErr(h.T, "update missing queue", err, engine.ErrQueueNotFound)
}

func testDeleteQueue(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a", "b")
	h.ReceiveOne("q", engine.ReceiveRequest{Max: 1})
	if err := h.B.DeleteQueue(h.Ctx, Account, "q"); err != nil {
		h.Fatal(err)
	}
	_, err := h.B.GetQueue(h.Ctx, Account, "q")
	wantErr(h.T, "get deleted queue", err, engine.ErrQueueNotFound)
	_, err = h.B.ViewQueue(h.Ctx, Account, "q")
	wantErr(h.T, "view deleted queue", err, engine.ErrQueueNotFound)
	err = h.B.DeleteQueue(h.Ctx, Account, "q")
	wantErr(h.T, "delete deleted queue", err, engine.ErrQueueNotFound)
}

func testMissingQueue(h *H) {
	ctx := h.Ctx
	b := h.B
	checks := map[string]func() error{
		"GetQueue":    func() error { _, err := b.GetQueue(ctx, Account, "nope"); return err },
		"ViewQueue":   func() error { _, err := b.ViewQueue(ctx, Account, "nope"); return err },
		"DeleteQueue": func() error { return b.DeleteQueue(ctx, Account, "nope") },
		"Send": func() error {
			_, err := b.Send(ctx, Account, "nope", []engine.NewMessage{{Body: "x"}})
			return err
		},
		"Receive": func() error {
			_, err := b.Receive(ctx, Account, "nope", engine.ReceiveRequest{Max: 1, Wait: time.Second})
			return err
		},
		"Delete": func() error { _, err := b.Delete(ctx, Account, "nope", []string{"x"}); return err },
		"ChangeVisibility": func() error {
			_, err := b.ChangeVisibility(ctx, Account, "nope", []engine.VisibilityChange{{ReceiptHandle: "x"}})
			return err
		},
		"Purge": func() error { return b.Purge(ctx, Account, "nope") },
		"Stats": func() error { _, err := b.Stats(ctx, Account, "nope"); return err },
	}
	for name, fn := range checks {
		wantErr(h.T, name, fn(), engine.ErrQueueNotFound)
	}
}

// testCancelledContext: every queue operation refuses a cancelled context
// before it touches anything, reads included. (A cancelled receive is an
// empty long poll: testReceiveCancelled.)
func testCancelledContext(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	handle := h.ReceiveOne("q", engine.ReceiveRequest{}).ReceiptHandle
	ctx, cancel := context.WithCancel(h.Ctx)
	cancel()
	b := h.B
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"CreateQueue", func() error {
			_, _, err := b.CreateQueue(ctx, engine.Queue{Account: Account, Name: "new", Settings: Settings()})
			return err
		}},
		{"GetQueue", func() error { _, err := b.GetQueue(ctx, Account, "q"); return err }},
		{"ViewQueue", func() error { _, err := b.ViewQueue(ctx, Account, "q"); return err }},
		{"ListQueues", func() error { _, err := b.ListQueues(ctx, Account, ""); return err }},
		{"Accounts", func() error { _, err := b.Accounts(ctx); return err }},
		{"UpdateQueue", func() error {
			return b.UpdateQueue(ctx, Account, "q", func(q *engine.Queue) error { q.Tags = map[string]string{"k": "v"}; return nil })
		}},
		{"DeleteQueue", func() error { return b.DeleteQueue(ctx, Account, "q") }},
		{"Send", func() error { _, err := b.Send(ctx, Account, "q", []engine.NewMessage{{Body: "b"}}); return err }},
		{"SendMany", func() error {
			_, err := b.SendMany(ctx, []engine.QueueSend{{Account: Account, Name: "q", Msgs: []engine.NewMessage{{Body: "b"}}}})
			return err
		}},
		{"Delete", func() error { _, err := b.Delete(ctx, Account, "q", []string{handle}); return err }},
		{"ChangeVisibility", func() error {
			_, err := b.ChangeVisibility(ctx, Account, "q", []engine.VisibilityChange{{ReceiptHandle: handle}})
			return err
		}},
		{"Purge", func() error { return b.Purge(ctx, Account, "q") }},
		{"Stats", func() error { _, err := b.Stats(ctx, Account, "q"); return err }},
		{"StartMoveTask", func() error {
			_, err := b.StartMoveTask(ctx, engine.MoveTask{SourceAccount: Account, SourceName: "q", DestinationARN: ARN("q")})
			return err
		}},
		{"ListMoveTasks", func() error { _, err := b.ListMoveTasks(ctx, Account, "q"); return err }},
		{"CancelMoveTask", func() error { _, err := b.CancelMoveTask(ctx, Account, "q", "id"); return err }},
	} {
		wantErr(h.T, op.name+" with a cancelled context", op.call(), context.Canceled)
	}

	// Nothing was done.
	q, err := h.B.GetQueue(h.Ctx, Account, "q")
	if err != nil || len(q.Tags) != 0 || !q.LastPurge.IsZero() {
		h.Fatalf("queue after the refused calls: %+v, %v", q, err)
	}
	if qs, err := h.B.ListQueues(h.Ctx, Account, ""); err != nil || len(qs) != 1 {
		h.Fatalf("queues after the refused calls: %d, %v", len(qs), err)
	}
	h.WantStats("q", 0, 1, 0)
	if ts, err := h.B.ListMoveTasks(h.Ctx, Account, "q"); err != nil || len(ts) != 0 {
		h.Fatalf("move tasks after the refused calls: %v, %v", ts, err)
	}
}

func testSendReceiveDelete(h *H) {
	h.Create("q", nil)
	h.WantStats("q", 0, 0, 0)
	in := engine.NewMessage{
		Body: "hello \u00e9\x00 world",
		Attributes: []engine.MessageAttribute{
			{Name: "a-bin", DataType: "Binary", BinaryValue: []byte{0, 1, 2, 255}},
			{Name: "b-num", DataType: "Number", StringValue: "42"},
			{Name: "c-str", DataType: "String.custom", StringValue: "v"},
		},
		TraceHeader:    "Root=1-5759e988-bd862e3fe1be46a994272793",
		MessageGroupID: "group-1",
		SenderID:       "AIDAEXAMPLE",
		MD5OfBody:      "body-md5",
		MD5OfAttrs:     "attrs-md5",
		MD5OfSysAttrs:  "sys-md5",
	}
	ids := h.Send("q", in)
	h.WantStats("q", 1, 0, 0)

	h.Clk.Advance(time.Second)
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	h.WantStats("q", 0, 1, 0)
	if m.MessageID != ids[0] || m.Body != in.Body || m.TraceHeader != in.TraceHeader ||
		m.MessageGroupID != in.MessageGroupID || m.SenderID != in.SenderID ||
		m.MD5OfBody != in.MD5OfBody || m.MD5OfAttrs != in.MD5OfAttrs {
		h.Fatalf("received %+v, sent %+v", m, in)
	}
	if len(m.Attributes) != len(in.Attributes) {
		h.Fatalf("attributes = %+v, want %+v", m.Attributes, in.Attributes)
	}
	for i, a := range m.Attributes {
		w := in.Attributes[i]
		if a.Name != w.Name || a.DataType != w.DataType || a.StringValue != w.StringValue || string(a.BinaryValue) != string(w.BinaryValue) {
			h.Fatalf("attribute %d = %+v, want %+v", i, a, w)
		}
	}
	if !m.SentAt.Equal(Start) || !m.FirstReceiveAt.Equal(Start.Add(time.Second)) || m.ReceiveCount != 1 {
		h.Fatalf("SentAt %v FirstReceiveAt %v ReceiveCount %d", m.SentAt, m.FirstReceiveAt, m.ReceiveCount)
	}
	if m.ReceiptHandle == "" || len(m.ReceiptHandle) > 1024 {
		h.Fatalf("receipt handle %q", m.ReceiptHandle)
	}
	h.ReceiveNone("q")

	if errs := h.Delete("q", m.ReceiptHandle); errs[0] != nil {
		h.Fatalf("delete: %v", errs[0])
	}
	h.WantStats("q", 0, 0, 0)
	h.Clk.Advance(time.Hour)
	h.ReceiveNone("q")
	h.WantStats("q", 0, 0, 0)
}

func testReceiveMax(h *H) {
	h.Create("q", nil)
	var bodies []string
	for i := range 15 {
		bodies = append(bodies, fmt.Sprint("m", i))
	}
	h.SendBodies("q", bodies[:10]...)
	h.SendBodies("q", bodies[10:]...)
	h.WantStats("q", 15, 0, 0)
	seen := map[string]bool{}
	for _, want := range []int{10, 5, 0} {
		msgs := h.Receive("q", engine.ReceiveRequest{Max: 10})
		if len(msgs) != want {
			h.Fatalf("received %d, want %d", len(msgs), want)
		}
		for _, m := range msgs {
			if seen[m.MessageID] {
				h.Fatalf("message %s received twice", m.MessageID)
			}
			seen[m.MessageID] = true
		}
	}
	h.WantStats("q", 0, 15, 0)
	if got := h.Receive("q", engine.ReceiveRequest{Max: 1}); len(got) != 0 {
		h.Fatalf("received %d after all were taken", len(got))
	}
}

// testReceivedIndependent: each received message owns its data; growing
// one message's attributes leaves the others alone.
func testReceivedIndependent(h *H) {
	h.Create("q", nil)
	var sent []engine.NewMessage
	for i, body := range []string{"a", "bb", "ccc"} {
		m := engine.NewMessage{Body: body}
		for j := range i + 1 {
			m.Attributes = append(m.Attributes, engine.MessageAttribute{Name: fmt.Sprint("n", j), DataType: "String", StringValue: body})
		}
		sent = append(sent, m)
	}
	sent = append(sent, engine.NewMessage{Body: "no attributes"})
	h.Send("q", sent...)
	got := h.Receive("q", engine.ReceiveRequest{})
	if len(got) != len(sent) {
		h.Fatalf("received %d of %d", len(got), len(sent))
	}
	handles := map[string]bool{}
	for i, m := range got {
		if m.Body != sent[i].Body || !sameAttributes(m.Attributes, sent[i].Attributes) {
			h.Errorf("message %d = %q %v, want %q %v", i, m.Body, m.Attributes, sent[i].Body, sent[i].Attributes)
		}
		if handles[m.ReceiptHandle] {
			h.Errorf("message %d: repeated handle %q", i, m.ReceiptHandle)
		}
		handles[m.ReceiptHandle] = true
	}
	got[1].Attributes = append(got[1].Attributes, engine.MessageAttribute{Name: "x"})
	got[0].Attributes[0].StringValue = "changed"
	if !sameAttributes(got[2].Attributes, sent[2].Attributes) {
		h.Errorf("message 2 attributes changed to %v", got[2].Attributes)
	}
	// Nor does it change what the store keeps.
	errs, err := h.B.ChangeVisibility(h.Ctx, Account, "q", []engine.VisibilityChange{{ReceiptHandle: got[0].ReceiptHandle}})
	if err != nil || errs[0] != nil {
		h.Fatalf("change: %v %v", errs, err)
	}
	if m := h.ReceiveOne("q", engine.ReceiveRequest{}); !sameAttributes(m.Attributes, sent[0].Attributes) {
		h.Errorf("stored attributes changed to %v", m.Attributes)
	}
}

// sameAttributes compares attribute lists, an empty binary value equal to
// a nil one.
func sameAttributes(got, want []engine.MessageAttribute) bool {
	return slices.EqualFunc(got, want, func(a, w engine.MessageAttribute) bool {
		return a.Name == w.Name && a.DataType == w.DataType && a.StringValue == w.StringValue && string(a.BinaryValue) == string(w.BinaryValue)
	})
}

func testEmptyCalls(h *H) {
	h.Create("q", nil)
	if res, err := h.B.Send(h.Ctx, Account, "q", nil); err != nil || len(res) != 0 {
		h.Fatalf("empty send: %v, %v", res, err)
	}
	if errs, err := h.B.Delete(h.Ctx, Account, "q", nil); err != nil || len(errs) != 0 {
		h.Fatalf("empty delete: %v, %v", errs, err)
	}
	if errs, err := h.B.ChangeVisibility(h.Ctx, Account, "q", nil); err != nil || len(errs) != 0 {
		h.Fatalf("empty change: %v, %v", errs, err)
	}
	h.WantStats("q", 0, 0, 0)
}

func testVisibilityExpiry(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	first := h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(29 * time.Second)
	h.WantStats("q", 0, 1, 0)
	h.ReceiveNone("q")
	h.Clk.Advance(time.Second)
	h.WantStats("q", 1, 0, 0)
	again := h.ReceiveOne("q", engine.ReceiveRequest{})
	if again.MessageID != first.MessageID || again.ReceiveCount != 2 || again.ReceiptHandle == first.ReceiptHandle {
		h.Fatalf("second receive: id %s count %d same handle %v", again.MessageID, again.ReceiveCount, again.ReceiptHandle == first.ReceiptHandle)
	}
	if !again.FirstReceiveAt.Equal(first.FirstReceiveAt) {
		h.Fatalf("FirstReceiveAt moved: %v then %v", first.FirstReceiveAt, again.FirstReceiveAt)
	}
	h.WantStats("q", 0, 1, 0)
}

func testReceiveVisibilityOverride(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a", "b")
	ten := 10 * time.Second
	h.ReceiveOne("q", engine.ReceiveRequest{Max: 1, Visibility: &ten})
	zero := time.Duration(0)
	m := h.ReceiveOne("q", engine.ReceiveRequest{Max: 1, Visibility: &zero})
	// Visibility 0: visible again at once.
	h.WantStats("q", 1, 1, 0)
	again := h.ReceiveOne("q", engine.ReceiveRequest{Max: 1})
	if again.MessageID != m.MessageID || again.ReceiveCount != 2 {
		h.Fatalf("after a 0 visibility: id %s count %d", again.MessageID, again.ReceiveCount)
	}
	h.Clk.Advance(ten)
	h.WantStats("q", 1, 1, 0)
}

func testQueueDelay(h *H) {
	h.Create("q", func(s *engine.QueueSettings) { s.Delay = 30 * time.Second })
	h.SendBodies("q", "a")
	h.WantStats("q", 0, 0, 1)
	h.ReceiveNone("q")
	// A new delay applies only to later sends.
	if err := h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Settings.Delay = 0
		return nil
	}); err != nil {
		h.Fatal(err)
	}
	h.WantStats("q", 0, 0, 1)
	h.SendBodies("q", "b")
	h.WantStats("q", 1, 0, 1)
	h.Clk.Advance(29 * time.Second)
	h.WantStats("q", 1, 0, 1)
	h.Clk.Advance(time.Second)
	h.WantStats("q", 2, 0, 0)
	m := h.Receive("q", engine.ReceiveRequest{})
	if len(m) != 2 || m[0].ReceiveCount != 1 {
		h.Fatalf("received %d", len(m))
	}
	h.WantStats("q", 0, 2, 0)
}

func testMessageDelay(h *H) {
	h.Create("q", func(s *engine.QueueSettings) { s.Delay = time.Minute })
	zero, ten := time.Duration(0), 10*time.Second
	h.Send("q",
		engine.NewMessage{Body: "now", Delay: &zero},
		engine.NewMessage{Body: "ten", Delay: &ten},
		engine.NewMessage{Body: "queue"})
	h.WantStats("q", 1, 0, 2)
	if m := h.ReceiveOne("q", engine.ReceiveRequest{}); m.Body != "now" {
		h.Fatalf("received %q first", m.Body)
	}
	h.Clk.Advance(ten)
	h.WantStats("q", 1, 1, 1)
	if m := h.ReceiveOne("q", engine.ReceiveRequest{}); m.Body != "ten" {
		h.Fatalf("received %q second", m.Body)
	}
	// At 60s the queue delay ends and both receipts (30s each) have expired.
	h.Clk.Advance(50 * time.Second)
	h.WantStats("q", 3, 0, 0)
}

func testRetention(h *H) {
	h.Create("q", func(s *engine.QueueSettings) { s.Retention = 2 * time.Minute })
	h.SendBodies("q", "a")
	h.Clk.Advance(time.Minute)
	h.SendBodies("q", "b", "c")
	hour := time.Hour
	msgs := h.Receive("q", engine.ReceiveRequest{Max: 1, Visibility: &hour})
	if len(msgs) != 1 {
		h.Fatal("no message")
	}
	inflight := msgs[0]
	delay := 10 * time.Minute
	h.Send("q", engine.NewMessage{Body: "d", Delay: &delay})
	h.WantStats("q", 2, 1, 1)

	// The first message expires exactly at SentAt + Retention, in flight or not.
	h.Clk.Advance(time.Minute - time.Nanosecond)
	h.WantStats("q", 2, 1, 1)
	h.Clk.Advance(time.Nanosecond)
	var want engine.Stats
	if inflight.Body == "a" {
		want = engine.Stats{Visible: 2, Delayed: 1}
	} else {
		want = engine.Stats{Visible: 1, NotVisible: 1, Delayed: 1}
	}
	h.WantStats("q", want.Visible, want.NotVisible, want.Delayed)
	// The rest were sent a minute later; the delayed one expires unseen.
	h.Clk.Advance(time.Minute - time.Nanosecond)
	h.WantStats("q", want.Visible, want.NotVisible, want.Delayed)
	h.Clk.Advance(time.Nanosecond)
	h.WantStats("q", 0, 0, 0)
	h.ReceiveNone("q")
	// Handles of expired messages do nothing.
	if errs := h.Delete("q", inflight.ReceiptHandle); errs[0] != nil {
		h.Fatalf("delete expired: %v", errs[0])
	}
	wantErr(h.T, "change expired", h.ChangeVisibility("q", inflight.ReceiptHandle, time.Minute), engine.ErrMessageNotInflight)
	h.WantStats("q", 0, 0, 0)
}

func testRetentionReduced(h *H) {
	h.Create("q", func(s *engine.QueueSettings) { s.Retention = time.Hour })
	h.SendBodies("q", "old")
	h.Clk.Advance(10 * time.Minute)
	h.SendBodies("q", "new")
	h.WantStats("q", 2, 0, 0)
	if err := h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Settings.Retention = 5 * time.Minute
		return nil
	}); err != nil {
		h.Fatal(err)
	}
	h.WantStats("q", 1, 0, 0)
	if m := h.ReceiveOne("q", engine.ReceiveRequest{}); m.Body != "new" {
		h.Fatalf("received %q", m.Body)
	}
	h.Clk.Advance(5 * time.Minute)
	h.WantStats("q", 0, 0, 0)

	// Raising it keeps what is stored for longer.
	h.SendBodies("q", "kept")
	if err := h.B.UpdateQueue(h.Ctx, Account, "q", func(q *engine.Queue) error {
		q.Settings.Retention = time.Hour
		return nil
	}); err != nil {
		h.Fatal(err)
	}
	h.Clk.Advance(30 * time.Minute)
	h.WantStats("q", 1, 0, 0)
}

// forge changes one character in the middle of a handle.
func forge(s string) string {
	i := len(s) / 2
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func testHandleInvalid(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	bad := []string{
		"",
		"x",
		"not a receipt handle!",
		strings.Repeat("A", 2000),
		m.ReceiptHandle[:len(m.ReceiptHandle)-1],
		m.ReceiptHandle + "A",
		forge(m.ReceiptHandle),
		strings.ToUpper(m.ReceiptHandle),
		"\xff\xfe\x00",
	}
	for _, hd := range bad {
		if hd == m.ReceiptHandle {
			continue
		}
		if errs := h.Delete("q", hd); !errors.Is(errs[0], engine.ErrReceiptHandleInvalid) {
			h.Errorf("Delete(%.40q) = %v, want ErrReceiptHandleInvalid", hd, errs[0])
		}
		if err := h.ChangeVisibility("q", hd, 0); !errors.Is(err, engine.ErrReceiptHandleInvalid) {
			h.Errorf("ChangeVisibility(%.40q) = %v, want ErrReceiptHandleInvalid", hd, err)
		}
	}
	// Nothing was touched; the batch reports per entry.
	h.WantStats("q", 0, 1, 0)
	errs := h.Delete("q", "garbage", m.ReceiptHandle)
	if !errors.Is(errs[0], engine.ErrReceiptHandleInvalid) || errs[1] != nil {
		h.Fatalf("mixed batch: %v", errs)
	}
	h.WantStats("q", 0, 0, 0)
}

func testHandleOtherQueue(h *H) {
	h.Create("a", nil)
	h.Create("b", nil)
	h.SendBodies("a", "x")
	h.SendBodies("b", "y")
	ma := h.ReceiveOne("a", engine.ReceiveRequest{})
	h.ReceiveOne("b", engine.ReceiveRequest{})
	if errs := h.Delete("b", ma.ReceiptHandle); !errors.Is(errs[0], engine.ErrReceiptHandleInvalid) {
		h.Fatalf("delete on the other queue: %v", errs[0])
	}
	wantErr(h.T, "change on the other queue", h.ChangeVisibility("b", ma.ReceiptHandle, 0), engine.ErrReceiptHandleInvalid)
	h.WantStats("a", 0, 1, 0)
	h.WantStats("b", 0, 1, 0)

	// A queue recreated under the same name is another queue.
	if err := h.B.DeleteQueue(h.Ctx, Account, "a"); err != nil {
		h.Fatal(err)
	}
	h.Clk.Advance(engine.RecreateDelay)
	h.Create("a", nil)
	if errs := h.Delete("a", ma.ReceiptHandle); !errors.Is(errs[0], engine.ErrReceiptHandleInvalid) {
		h.Fatalf("delete on the recreated queue: %v", errs[0])
	}
}

func testHandleStale(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	old := h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(30 * time.Second)
	cur := h.ReceiveOne("q", engine.ReceiveRequest{})

	// A superseded handle: delete succeeds without deleting; change fails.
	if errs := h.Delete("q", old.ReceiptHandle); errs[0] != nil {
		h.Fatalf("stale delete: %v", errs[0])
	}
	h.WantStats("q", 0, 1, 0)
	wantErr(h.T, "stale change", h.ChangeVisibility("q", old.ReceiptHandle, time.Minute), engine.ErrMessageNotInflight)
	h.WantStats("q", 0, 1, 0)

	if errs := h.Delete("q", cur.ReceiptHandle, cur.ReceiptHandle); errs[0] != nil || errs[1] != nil {
		h.Fatalf("delete: %v", errs)
	}
	h.WantStats("q", 0, 0, 0)
	// Deleted: delete again succeeds, change fails.
	if errs := h.Delete("q", cur.ReceiptHandle); errs[0] != nil {
		h.Fatalf("second delete: %v", errs[0])
	}
	wantErr(h.T, "change deleted", h.ChangeVisibility("q", cur.ReceiptHandle, time.Minute), engine.ErrMessageNotInflight)
}

func testDeleteAfterExpiry(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(time.Minute)
	h.WantStats("q", 1, 0, 0)
	// Nobody received it since: the handle still deletes it.
	if errs := h.Delete("q", m.ReceiptHandle); errs[0] != nil {
		h.Fatal(errs[0])
	}
	h.WantStats("q", 0, 0, 0)
	h.ReceiveNone("q")
}

func testChangeVisibility(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(20 * time.Second)
	// Counts from now: hidden until 20s + 60s.
	if err := h.ChangeVisibility("q", m.ReceiptHandle, time.Minute); err != nil {
		h.Fatal(err)
	}
	h.Clk.Advance(59 * time.Second)
	h.WantStats("q", 0, 1, 0)
	// Shortening works too.
	if err := h.ChangeVisibility("q", m.ReceiptHandle, 5*time.Second); err != nil {
		h.Fatal(err)
	}
	h.Clk.Advance(4 * time.Second)
	h.WantStats("q", 0, 1, 0)
	h.Clk.Advance(time.Second)
	h.WantStats("q", 1, 0, 0)
	again := h.ReceiveOne("q", engine.ReceiveRequest{})
	if again.ReceiveCount != 2 {
		h.Fatalf("ReceiveCount %d", again.ReceiveCount)
	}
}

func testChangeVisibilityZero(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a", "b")
	msgs := h.Receive("q", engine.ReceiveRequest{})
	if len(msgs) != 2 {
		h.Fatalf("received %d", len(msgs))
	}
	errs, err := h.B.ChangeVisibility(h.Ctx, Account, "q", []engine.VisibilityChange{
		{ReceiptHandle: msgs[0].ReceiptHandle, Timeout: 0},
		{ReceiptHandle: "bogus", Timeout: 0},
	})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], engine.ErrReceiptHandleInvalid) {
		h.Fatalf("change: %v %v", errs, err)
	}
	h.WantStats("q", 1, 1, 0)
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	if m.MessageID != msgs[0].MessageID || m.ReceiveCount != 2 {
		h.Fatalf("received %s count %d", m.MessageID, m.ReceiveCount)
	}
	// The superseded handle can no longer change anything.
	wantErr(h.T, "superseded", h.ChangeVisibility("q", msgs[0].ReceiptHandle, 0), engine.ErrMessageNotInflight)
}

func testChangeVisibilityLimit(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	twelve := engine.MaxVisibility
	m := h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &twelve})
	wantErr(h.T, "beyond at once", h.ChangeVisibility("q", m.ReceiptHandle, twelve+time.Second), engine.ErrVisibilityLimit)
	h.Clk.Advance(6 * time.Hour)
	wantErr(h.T, "6h+1s after 6h", h.ChangeVisibility("q", m.ReceiptHandle, 6*time.Hour+time.Second), engine.ErrVisibilityLimit)
	if err := h.ChangeVisibility("q", m.ReceiptHandle, 6*time.Hour); err != nil {
		h.Fatalf("exactly at the limit: %v", err)
	}
	h.Clk.Advance(6*time.Hour - time.Second)
	h.WantStats("q", 0, 1, 0)
	h.Clk.Advance(time.Second)
	h.WantStats("q", 1, 0, 0)
	// The limit counts from the latest receive.
	m = h.ReceiveOne("q", engine.ReceiveRequest{})
	if err := h.ChangeVisibility("q", m.ReceiptHandle, twelve); err != nil {
		h.Fatalf("after a new receive: %v", err)
	}
}

func testChangeVisibilityAfterExpiry(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	h.Clk.Advance(time.Minute)
	h.WantStats("q", 1, 0, 0)
	// Nobody received it since: it is hidden again, counting from now.
	if err := h.ChangeVisibility("q", m.ReceiptHandle, time.Minute); err != nil {
		h.Fatal(err)
	}
	h.WantStats("q", 0, 1, 0)
	h.ReceiveNone("q")
	h.Clk.Advance(time.Minute)
	h.WantStats("q", 1, 0, 0)
}

func testPurge(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a", "b")
	delay := time.Minute
	h.Send("q", engine.NewMessage{Body: "late", Delay: &delay})
	m := h.ReceiveOne("q", engine.ReceiveRequest{Max: 1})
	h.WantStats("q", 1, 1, 1)
	if err := h.B.Purge(h.Ctx, Account, "q"); err != nil {
		h.Fatal(err)
	}
	h.WantStats("q", 0, 0, 0)
	h.ReceiveNone("q")
	if errs := h.Delete("q", m.ReceiptHandle); errs[0] != nil {
		h.Fatalf("delete purged: %v", errs[0])
	}
	wantErr(h.T, "change purged", h.ChangeVisibility("q", m.ReceiptHandle, 0), engine.ErrMessageNotInflight)
	q, err := h.B.GetQueue(h.Ctx, Account, "q")
	if err != nil || !q.LastPurge.Equal(Start) {
		h.Fatalf("LastPurge = %v, %v", q.LastPurge, err)
	}

	// Sends after a purge are kept.
	h.SendBodies("q", "after")
	h.WantStats("q", 1, 0, 0)
	h.Clk.Advance(engine.PurgeInterval - time.Second)
	wantErr(h.T, "purge within the interval", h.B.Purge(h.Ctx, Account, "q"), engine.ErrPurgeInProgress)
	h.WantStats("q", 1, 0, 0)
	h.Clk.Advance(time.Second)
	if err := h.B.Purge(h.Ctx, Account, "q"); err != nil {
		h.Fatalf("purge after the interval: %v", err)
	}
	h.WantStats("q", 0, 0, 0)
	// Nothing purged comes back when its deadlines pass.
	h.Clk.Advance(time.Hour)
	h.WantStats("q", 0, 0, 0)
	h.ReceiveNone("q")
}

func testLongPollSend(h *H) {
	h.Create("q", nil)
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	ids := h.SendBodies("q", "a")
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != ids[0] || r.Msgs[0].ReceiveCount != 1 {
		h.Fatalf("long poll: %+v", r)
	}
	h.WantStats("q", 0, 1, 0)
	if errs := h.Delete("q", r.Msgs[0].ReceiptHandle); errs[0] != nil {
		h.Fatal(errs[0])
	}
	h.WantStats("q", 0, 0, 0)
}

// testLongPollServedWhole: a long poll that a send serves gets the
// messages whole, as a later receive reads them from the store, whether it
// takes all of them or some.
func testLongPollServedWhole(h *H) {
	sent := []engine.NewMessage{
		{Body: "plain"},
		{Body: "with attributes", Attributes: []engine.MessageAttribute{
			{Name: "b", DataType: "Binary", BinaryValue: []byte{0, 1, 2}},
			{Name: "s", DataType: "String", StringValue: "v"},
		}, MD5OfBody: "0123456789abcdef0123456789abcdef", MD5OfAttrs: "fedcba9876543210fedcba9876543210"},
		{Body: "traced", TraceHeader: "Root=1-5759e988-bd862e3fe1be46a994272793", MessageGroupID: "g", SenderID: "AIDA"},
	}
	for _, max := range []int{10, 2, 1} {
		name := fmt.Sprint("q", max)
		h.Create(name, nil)
		ch := h.StartWait(h.Ctx, name, engine.ReceiveRequest{Max: max, Wait: time.Minute})
		ids := h.Send(name, sent...)
		r := h.Await(ch)
		if r.Err != nil || len(r.Msgs) == 0 || len(r.Msgs) > max {
			h.Fatalf("max %d: long poll = %d messages, %v", max, len(r.Msgs), r.Err)
		}
		// The same messages read from the store: made visible again (those
		// handed out) or never taken.
		var changes []engine.VisibilityChange
		for _, m := range r.Msgs {
			changes = append(changes, engine.VisibilityChange{ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := h.B.ChangeVisibility(h.Ctx, Account, name, changes); err != nil {
			h.Fatal(err)
		}
		stored := h.Receive(name, engine.ReceiveRequest{})
		if len(stored) != len(sent) {
			h.Fatalf("max %d: received %d from the store, want %d", max, len(stored), len(sent))
		}
		byID := map[string]engine.Message{}
		for _, m := range stored {
			byID[m.MessageID] = m
		}
		for i, m := range r.Msgs {
			if m.MessageID != ids[i] || m.ReceiveCount != 1 || !m.FirstReceiveAt.Equal(h.Clk.Now()) {
				h.Errorf("max %d, message %d: id %s (want %s), receive count %d, first receive %v",
					max, i, m.MessageID, ids[i], m.ReceiveCount, m.FirstReceiveAt)
			}
			want := byID[m.MessageID]
			want.ReceiptHandle, want.ReceiveCount = m.ReceiptHandle, m.ReceiveCount
			if !reflect.DeepEqual(m, want) {
				h.Errorf("max %d, message %d handed over\n %+v\nstored\n %+v", max, i, m, want)
			}
		}
	}
}

func testLongPollVisibility(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	ten := 10 * time.Second
	first := h.ReceiveOne("q", engine.ReceiveRequest{Visibility: &ten})
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	h.Clk.Advance(ten)
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != first.MessageID || r.Msgs[0].ReceiveCount != 2 {
		h.Fatalf("long poll: %+v", r)
	}
	h.WantStats("q", 0, 1, 0)
}

func testLongPollDelay(h *H) {
	h.Create("q", func(s *engine.QueueSettings) { s.Delay = 15 * time.Second })
	ids := h.SendBodies("q", "a")
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	h.Clk.Advance(15 * time.Second)
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != ids[0] {
		h.Fatalf("long poll: %+v", r)
	}
}

func testLongPollChangeVisibility(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	m := h.ReceiveOne("q", engine.ReceiveRequest{})
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	if err := h.ChangeVisibility("q", m.ReceiptHandle, 0); err != nil {
		h.Fatal(err)
	}
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != m.MessageID || r.Msgs[0].ReceiveCount != 2 {
		h.Fatalf("long poll: %+v", r)
	}
}

func testLongPollCancel(h *H) {
	h.Create("q", nil)
	ctx, cancel := context.WithCancel(h.Ctx)
	ch := h.StartWait(ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	cancel()
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 0 {
		h.Fatalf("cancelled long poll: %+v", r)
	}
	// The cancelled receive took nothing.
	h.SendBodies("q", "a")
	h.WantStats("q", 1, 0, 0)
	h.ReceiveOne("q", engine.ReceiveRequest{})
}

func testLongPollTimeout(h *H) {
	h.Create("q", nil)
	// Still waiting a second before its end: a send is what it returns (a
	// poll that had ended early would have returned nothing).
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	h.Clk.Advance(19 * time.Second)
	ids := h.SendBodies("q", "a")
	if r := h.Await(ch); r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].MessageID != ids[0] {
		h.Fatalf("long poll a second before its end: %+v", r)
	}
	// At its end it returns nothing.
	ch = h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	h.Clk.Advance(20 * time.Second)
	r := h.Await(ch)
	if r.Err != nil || len(r.Msgs) != 0 {
		h.Fatalf("timed-out long poll: %+v", r)
	}
	h.SendBodies("q", "b")
	h.WantStats("q", 1, 1, 0)
}

func testLongPollQueueDeleted(h *H) {
	h.Create("q", nil)
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	if err := h.B.DeleteQueue(h.Ctx, Account, "q"); err != nil {
		h.Fatal(err)
	}
	if r := h.Await(ch); len(r.Msgs) != 0 {
		h.Fatalf("long poll on a deleted queue: %+v", r)
	}
}

func testReceiveCancelled(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a")
	ctx, cancel := context.WithCancel(h.Ctx)
	cancel()
	msgs, err := h.B.Receive(ctx, Account, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	if err != nil || len(msgs) != 0 {
		h.Fatalf("receive with a cancelled context: %d messages, %v", len(msgs), err)
	}
	h.WantStats("q", 1, 0, 0)
}

// testConcurrent runs many long-polling receivers against many senders: every
// message must be handed out exactly once (the visibility outlasts the test
// and the clock stands still).
func testConcurrent(h *H) {
	h.Create("q", nil)
	const (
		senders   = 4
		receivers = 8
		batches   = 40
		perBatch  = 5
		total     = senders * batches * perBatch
	)
	ctx, cancel := context.WithCancel(h.Ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		received = map[string]int{}
		dupes    []string
	)
	hour := time.Hour
	var rwg sync.WaitGroup
	for range receivers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for ctx.Err() == nil {
				msgs, err := h.B.Receive(ctx, Account, "q", engine.ReceiveRequest{Max: 3, Wait: 20 * time.Second, Visibility: &hour})
				if err != nil {
					h.Errorf("receive: %v", err)
					return
				}
				mu.Lock()
				for _, m := range msgs {
					if received[m.MessageID]++; received[m.MessageID] > 1 {
						dupes = append(dupes, m.MessageID)
					}
				}
				mu.Unlock()
			}
		}()
	}
	sent := make(chan string, total)
	var swg sync.WaitGroup
	for s := range senders {
		swg.Add(1)
		go func() {
			defer swg.Done()
			for i := range batches {
				msgs := make([]engine.NewMessage, perBatch)
				for j := range msgs {
					msgs[j] = engine.NewMessage{Body: fmt.Sprint(s, "-", i, "-", j)}
				}
				res, err := h.B.Send(ctx, Account, "q", msgs)
				if err != nil {
					h.Errorf("send: %v", err)
					return
				}
				for _, r := range res {
					sent <- r.MessageID
				}
			}
		}()
	}
	swg.Wait()
	close(sent)
	testwait.Eventually(h, "every message to be received", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) >= total
	})
	cancel()
	rwg.Wait()
	if len(dupes) > 0 {
		h.Fatalf("%d messages handed out twice, e.g. %s", len(dupes), dupes[0])
	}
	for id := range sent {
		if received[id] != 1 {
			h.Fatalf("message %s received %d times", id, received[id])
		}
	}
	if len(received) != total {
		h.Fatalf("received %d distinct messages, sent %d", len(received), total)
	}
	h.WantStats("q", 0, total, 0)
}

func testClose(h *H) {
	h.Create("q", nil)
	ch := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 10, Wait: 20 * time.Second})
	if err := h.B.Close(); err != nil {
		h.Fatal(err)
	}
	if r := h.Await(ch); len(r.Msgs) != 0 {
		h.Fatalf("long poll across Close: %+v", r)
	}
	_, err := h.B.Send(h.Ctx, Account, "q", []engine.NewMessage{{Body: "x"}})
	wantErr(h.T, "send after close", err, engine.ErrClosed)
	_, err = h.B.Stats(h.Ctx, Account, "q")
	wantErr(h.T, "stats after close", err, engine.ErrClosed)
	_, err = h.B.Accounts(h.Ctx)
	wantErr(h.T, "accounts after close", err, engine.ErrClosed)
	wantErr(h.T, "put a record after close", h.B.PutRecord(h.Ctx, "k", "key", nil), engine.ErrClosed)
	_, err = h.B.Records(h.Ctx, "k")
	wantErr(h.T, "records after close", err, engine.ErrClosed)
	wantErr(h.T, "put metric points after close", h.B.PutMetricPoints(h.Ctx, []engine.MetricPoint{Point(1, "AWS/SQS", "m", "q", 1)}), engine.ErrClosed)
	_, err = h.B.MetricPoints(h.Ctx, 0)
	wantErr(h.T, "metric points after close", err, engine.ErrClosed)
	if err := h.B.Close(); err != nil {
		h.Fatalf("second close: %v", err)
	}
}
