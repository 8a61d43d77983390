package postgres

import (
	"context"
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// peekFixture is a standard queue "q" of six messages, bodies m0..m5 in
// send order: m0 in flight (received by a consumer, so it has a story),
// m4 delayed a minute, m1 with the String attribute color=red, m2 the
// Number attribute size=42, m3 the Binary attribute color, m5's body
// holding a NUL byte.
type peekFixture struct {
	s    *Store
	clk  *clock.Fake
	ids  []string // message ids, in send order
	m0RH string   // m0's receipt handle
}

func newPeekFixture(t *testing.T) peekFixture {
	t.Helper()
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	createQueue(t, s, "q")
	ctx := context.Background()
	minute := time.Minute
	msgs := []engine.NewMessage{
		{Body: "m0"},
		{Body: "m1", Attributes: []engine.MessageAttribute{{Name: "color", DataType: "String", StringValue: "red"}}},
		{Body: "m2", Attributes: []engine.MessageAttribute{{Name: "size", DataType: "Number.int", StringValue: "42"}}},
		{Body: "m3", Attributes: []engine.MessageAttribute{{Name: "color", DataType: "Binary", BinaryValue: []byte("red")}}},
		{Body: "m4", Delay: &minute},
		{Body: "m5\x00tail"},
	}
	f := peekFixture{s: s, clk: clk}
	for _, m := range msgs { // one send each: the order of sends
		res, err := s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{m})
		if err != nil {
			t.Fatal(err)
		}
		f.ids = append(f.ids, res[0].MessageID)
	}
	got, err := s.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 1, Consumer: &engine.Consumer{SourceIP: "10.0.0.1"}})
	if err != nil || len(got) != 1 || got[0].Body != "m0" {
		t.Fatalf("receive = %+v, %v", got, err)
	}
	f.m0RH = got[0].ReceiptHandle
	return f
}

func (f peekFixture) peek(t *testing.T, req engine.PeekRequest) engine.PeekPage {
	t.Helper()
	page, err := f.s.Peek(context.Background(), enginetest.Account, "q", req)
	if err != nil {
		t.Fatalf("Peek(%+v): %v", req, err)
	}
	return page
}

func peekedBodies(ms []engine.PeekedMessage) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, strings.TrimSuffix(m.Body, "\x00tail"))
	}
	return out
}

// A peek shows every message in send order, with its state, and changes
// nothing.
func TestPeekShowsTheQueue(t *testing.T) {
	f := newPeekFixture(t)
	ctx := context.Background()
	before, err := f.s.Stats(ctx, enginetest.Account, "q")
	if err != nil {
		t.Fatal(err)
	}
	page := f.peek(t, engine.PeekRequest{Limit: 100})
	if got, want := peekedBodies(page.Messages), []string{"m0", "m1", "m2", "m3", "m4", "m5"}; !slices.Equal(got, want) {
		t.Fatalf("peek = %v, want %v", got, want)
	}
	if page.Next != "" || page.Scanned != 6 {
		t.Errorf("Next %q, Scanned %d; want none, 6", page.Next, page.Scanned)
	}
	now := f.clk.Now()
	wantStates := []struct {
		state   engine.MessageState
		visible time.Time
	}{
		{engine.StateInFlight, now.Add(30 * time.Second)}, {engine.StateVisible, time.Time{}}, {engine.StateVisible, time.Time{}},
		{engine.StateVisible, time.Time{}}, {engine.StateDelayed, now.Add(time.Minute)}, {engine.StateVisible, time.Time{}},
	}
	for i, m := range page.Messages {
		w := wantStates[i]
		if m.State != w.state || !m.VisibleAt.Equal(w.visible) || m.MessageID != f.ids[i] || m.Ref == "" ||
			m.ReceiptHandle != "" || m.History != nil || !m.SentAt.Equal(now) {
			t.Errorf("message %d = %+v; want state %s visible at %v", i, m, w.state, w.visible)
		}
	}
	if m := page.Messages[0]; m.ReceiveCount != 1 || !m.FirstReceiveAt.Equal(now) {
		t.Errorf("m0 received %d times, first at %v", m.ReceiveCount, m.FirstReceiveAt)
	}
	if a := page.Messages[2].Attributes; len(a) != 1 || a[0].Name != "size" || a[0].StringValue != "42" {
		t.Errorf("m2 attributes %+v", a)
	}
	if page.Messages[5].Body != "m5\x00tail" {
		t.Errorf("m5 body %q", page.Messages[5].Body)
	}
	// Nothing changed: a second look sees the same, the counts are the same,
	// and the in-flight message's handle still works.
	again := f.peek(t, engine.PeekRequest{Limit: 100})
	for i := range again.Messages {
		if a, b := again.Messages[i], page.Messages[i]; a.Ref != b.Ref || a.State != b.State || a.ReceiveCount != b.ReceiveCount ||
			!a.VisibleAt.Equal(b.VisibleAt) {
			t.Errorf("second peek %d = %+v, first %+v", i, a, b)
		}
	}
	after, err := f.s.Stats(ctx, enginetest.Account, "q")
	if err != nil || after != before {
		t.Errorf("stats %+v after peeks, %+v before (%v)", after, before, err)
	}
	errs, err := f.s.ChangeVisibility(ctx, enginetest.Account, "q", []engine.VisibilityChange{{ReceiptHandle: f.m0RH, Timeout: time.Minute}})
	if err != nil || errs[0] != nil {
		t.Errorf("change visibility of m0 after peeks: %v, %v", errs, err)
	}
}

// Pages follow the cursor; filters and MaxScan bound what a call
// returns and examines.
func TestPeekPagesAndFilters(t *testing.T) {
	f := newPeekFixture(t)
	type page struct {
		bodies  []string
		scanned int
		more    bool
	}
	tests := []struct {
		name  string
		req   engine.PeekRequest
		pages []page
	}{
		{"pages of two", engine.PeekRequest{Limit: 2}, []page{
			{[]string{"m0", "m1"}, 2, true}, {[]string{"m2", "m3"}, 2, true}, {[]string{"m4", "m5"}, 2, false}}},
		{"a page of five", engine.PeekRequest{Limit: 5}, []page{
			{[]string{"m0", "m1", "m2", "m3", "m4"}, 5, true}, {[]string{"m5"}, 1, false}}},
		{"body", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{BodyContains: "m3"}}, []page{{[]string{"m3"}, 6, false}}},
		{"body with NUL", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{BodyContains: "\x00t"}}, []page{{[]string{"m5"}, 6, false}}},
		{"body is case-sensitive", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{BodyContains: "M3"}}, []page{{[]string{}, 6, false}}},
		{"attribute name", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{AttributeName: "color"}}, []page{{[]string{"m1", "m3"}, 6, false}}},
		{"attribute String value", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{AttributeName: "color", AttributeValue: "re"}},
			[]page{{[]string{"m1"}, 6, false}}},
		{"attribute Number value", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{AttributeName: "size", AttributeValue: "4"}},
			[]page{{[]string{"m2"}, 6, false}}},
		{"attribute value not held", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{AttributeName: "size", AttributeValue: "5"}},
			[]page{{[]string{}, 6, false}}},
		{"message id", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{MessageID: f.ids[2]}}, []page{{[]string{"m2"}, 6, false}}},
		{"in flight", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{State: engine.StateInFlight}}, []page{{[]string{"m0"}, 6, false}}},
		{"delayed", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{State: engine.StateDelayed}}, []page{{[]string{"m4"}, 6, false}}},
		{"visible", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{State: engine.StateVisible}}, []page{{[]string{"m1", "m2", "m3", "m5"}, 6, false}}},
		// The limit reached: the page ends at its last match.
		{"visible, two a page", engine.PeekRequest{Limit: 2, Filter: engine.PeekFilter{State: engine.StateVisible}}, []page{
			{[]string{"m1", "m2"}, 3, true}, {[]string{"m3", "m5"}, 3, false}}},
		// The scan bound reached: pages with no match still go on.
		{"delayed, two examined a call", engine.PeekRequest{Limit: 10, MaxScan: 2, Filter: engine.PeekFilter{State: engine.StateDelayed}},
			[]page{{[]string{}, 2, true}, {[]string{}, 2, true}, {[]string{"m4"}, 2, false}}},
		{"every filter", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{BodyContains: "m", AttributeName: "color",
			AttributeValue: "red", MessageID: f.ids[1], State: engine.StateVisible}}, []page{{[]string{"m1"}, 6, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			for i, want := range tc.pages {
				got := f.peek(t, req)
				if b := peekedBodies(got.Messages); !slices.Equal(b, want.bodies) || got.Scanned != want.scanned || (got.Next != "") != want.more {
					t.Fatalf("page %d = %v, scanned %d, next %q; want %v, scanned %d, more %v",
						i, b, got.Scanned, got.Next, want.bodies, want.scanned, want.more)
				}
				req.After = got.Next
			}
		})
	}
}

// A peek at a queue that is not there, or with a cursor or state that is
// not one, fails.
func TestPeekRefused(t *testing.T) {
	f := newPeekFixture(t)
	ctx := context.Background()
	if _, err := f.s.Peek(ctx, enginetest.Account, "none", engine.PeekRequest{Limit: 10}); !errors.Is(err, engine.ErrQueueNotFound) {
		t.Errorf("peek into no queue: %v", err)
	}
	if _, err := f.s.PeekRefs(ctx, enginetest.Account, "none", []string{"1"}); !errors.Is(err, engine.ErrQueueNotFound) {
		t.Errorf("peek refs of no queue: %v", err)
	}
	if _, err := f.s.DeleteRefs(ctx, enginetest.Account, "none", []string{"1"}); !errors.Is(err, engine.ErrQueueNotFound) {
		t.Errorf("delete refs of no queue: %v", err)
	}
	if _, err := f.s.Peek(ctx, enginetest.Account, "q", engine.PeekRequest{Limit: 10, After: "x"}); err == nil {
		t.Error("peek with a cursor that is none: no error")
	}
	if _, err := f.s.Peek(ctx, enginetest.Account, "q", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{State: "gone"}}); err == nil {
		t.Error("peek for a state that is none: no error")
	}
}

// PeekRefs returns what its refs name, in their order, with the stories;
// DeleteRefs deletes them whatever their state.
func TestPeekRefsAndDeleteRefs(t *testing.T) {
	f := newPeekFixture(t)
	ctx := context.Background()
	all := f.peek(t, engine.PeekRequest{Limit: 100}).Messages
	refs := []string{all[4].Ref, "garbage", all[0].Ref, "999999", all[1].Ref, all[0].Ref}
	got, err := f.s.PeekRefs(ctx, enginetest.Account, "q", refs)
	if err != nil {
		t.Fatal(err)
	}
	if b := peekedBodies(got); !slices.Equal(b, []string{"m4", "m0", "m1"}) {
		t.Fatalf("PeekRefs = %v", b)
	}
	if h := got[1].History; h == nil || len(h.Events) != 1 || h.Events[0].Kind != engine.HistoryReceive ||
		h.Events[0].Consumer.SourceIP != "10.0.0.1" {
		t.Errorf("m0's story %+v", h)
	}
	if got[0].History != nil || got[0].State != engine.StateDelayed || got[1].State != engine.StateInFlight {
		t.Errorf("PeekRefs = %+v", got)
	}

	// m0 in flight, m4 delayed, m1 visible; an unknown and a repeated ref
	// delete nothing more.
	n, err := f.s.DeleteRefs(ctx, enginetest.Account, "q", refs)
	if err != nil || n != 3 {
		t.Fatalf("DeleteRefs = %d, %v; want 3", n, err)
	}
	if b := peekedBodies(f.peek(t, engine.PeekRequest{Limit: 100}).Messages); !slices.Equal(b, []string{"m2", "m3", "m5"}) {
		t.Errorf("left %v", b)
	}
	if st, err := f.s.Stats(ctx, enginetest.Account, "q"); err != nil || st.Visible != 3 || st.NotVisible != 0 || st.Delayed != 0 {
		t.Errorf("stats %+v, %v", st, err)
	}
	errs, err := f.s.ChangeVisibility(ctx, enginetest.Account, "q", []engine.VisibilityChange{{ReceiptHandle: f.m0RH, Timeout: time.Minute}})
	if err != nil || !errors.Is(errs[0], engine.ErrMessageNotInflight) {
		t.Errorf("change visibility of deleted m0: %v, %v", errs, err)
	}
	if got, err := f.s.PeekRefs(ctx, enginetest.Account, "q", refs); err != nil || len(got) != 0 {
		t.Errorf("PeekRefs of the deleted = %v, %v", peekedBodies(got), err)
	}
	if n, err := f.s.DeleteRefs(ctx, enginetest.Account, "q", refs); err != nil || n != 0 {
		t.Errorf("DeleteRefs again = %d, %v", n, err)
	}
}

// On a FIFO queue a peek shows the sequence numbers in their order, and
// deleting a group's message in flight frees the group as a delete by
// receipt handle does.
func TestPeekFIFO(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	createFIFOQueue(t, s, "q.fifo")
	ctx := context.Background()
	var sent []engine.SendResult
	for i, g := range []string{"a", "b", "a"} {
		res, err := s.Send(ctx, enginetest.Account, "q.fifo", []engine.NewMessage{{Body: g + string(rune('0'+i)), MessageGroupID: g,
			DeduplicationID: "d" + string(rune('0'+i))}})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res[0])
	}
	got, err := s.Receive(ctx, enginetest.Account, "q.fifo", engine.ReceiveRequest{Max: 1})
	if err != nil || len(got) != 1 || got[0].Body != "a0" {
		t.Fatalf("receive = %+v, %v", got, err)
	}
	page, err := s.Peek(ctx, enginetest.Account, "q.fifo", engine.PeekRequest{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if b := peekedBodies(page.Messages); !slices.Equal(b, []string{"a0", "b1", "a2"}) {
		t.Fatalf("peek = %v", b)
	}
	for i, m := range page.Messages {
		if m.SequenceNumber != sent[i].SequenceNumber || m.DeduplicationID != "d"+string(rune('0'+i)) || m.MessageGroupID == "" {
			t.Errorf("message %d = %+v", i, m)
		}
	}
	// Group a is held by a0: b1 goes first.
	got, err = s.Receive(ctx, enginetest.Account, "q.fifo", engine.ReceiveRequest{Max: 10})
	if err != nil || len(got) != 1 || got[0].Body != "b1" {
		t.Fatalf("receive = %+v, %v", got, err)
	}
	if n, err := s.DeleteRefs(ctx, enginetest.Account, "q.fifo", []string{page.Messages[0].Ref}); err != nil || n != 1 {
		t.Fatalf("DeleteRefs(a0) = %d, %v", n, err)
	}
	got, err = s.Receive(ctx, enginetest.Account, "q.fifo", engine.ReceiveRequest{Max: 10})
	if err != nil || len(got) != 1 || got[0].Body != "a2" {
		t.Fatalf("receive after the delete = %+v, %v", got, err)
	}
}

// A peek and a delete see the messages of both slots of the rotated
// tables, and a ref stays good across a rotation.
func TestPeekAcrossRotation(t *testing.T) {
	clk := clock.NewFake(enginetest.Start)
	s := openFresh(t, clk)
	createQueue(t, s, "q")
	ctx := context.Background()
	send := func(body string) {
		if _, err := s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: body}}); err != nil {
			t.Fatal(err)
		}
	}
	send("m0")
	send("m1")
	before := queueRefs(t, s)
	// The new current slot is the other: m0 and m1 stay in theirs.
	if r, err := s.rotate(ctx, 10); err != nil || !r.done {
		t.Fatalf("rotate: %+v, %v", r, err)
	}
	send("m2")
	send("m3")
	var slots []int16
	if err := s.pool.QueryRow(ctx, `SELECT array_agg(slot ORDER BY seq) FROM messages`).Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if slots[0] == slots[3] {
		t.Fatalf("slots %v: the messages are all in one", slots)
	}
	page, err := s.Peek(ctx, enginetest.Account, "q", engine.PeekRequest{Limit: 3})
	if err != nil || !slices.Equal(peekedBodies(page.Messages), []string{"m0", "m1", "m2"}) || page.Next == "" {
		t.Fatalf("peek = %v, next %q, %v", peekedBodies(page.Messages), page.Next, err)
	}
	if page.Messages[0].Ref != before[0] {
		t.Errorf("m0's ref %s, %s before the rotation", page.Messages[0].Ref, before[0])
	}
	// The second rotation moves m0 and m1 into the slot of m2 and m3.
	if r, err := s.rotate(ctx, 10); err != nil || !r.done || r.moved == 0 {
		t.Fatalf("rotate: %+v, %v", r, err)
	}
	rest, err := s.Peek(ctx, enginetest.Account, "q", engine.PeekRequest{Limit: 3, After: page.Next})
	if err != nil || !slices.Equal(peekedBodies(rest.Messages), []string{"m3"}) || rest.Next != "" {
		t.Fatalf("next page = %v, next %q, %v", peekedBodies(rest.Messages), rest.Next, err)
	}
	if n, err := s.DeleteRefs(ctx, enginetest.Account, "q", []string{before[0], rest.Messages[0].Ref}); err != nil || n != 2 {
		t.Fatalf("DeleteRefs = %d, %v", n, err)
	}
	if got, err := s.PeekRefs(ctx, enginetest.Account, "q", before); err != nil || !slices.Equal(peekedBodies(got), []string{"m1"}) {
		t.Fatalf("PeekRefs = %v, %v", peekedBodies(got), err)
	}
}

// queueRefs is the refs of the queue's messages.
func queueRefs(t *testing.T, s *Store) []string {
	t.Helper()
	page, err := s.Peek(context.Background(), enginetest.Account, "q", engine.PeekRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, m := range page.Messages {
		refs = append(refs, m.Ref)
	}
	return refs
}

// fillPeekQueue gives queue name n messages, in both slots (as rotations
// leave them), each with a small body and one attribute; on a FIFO queue
// in 1,000 groups, with their rows. It analyzes the tables.
func fillPeekQueue(t testing.TB, s *Store, name string, n int, fifo bool) {
	t.Helper()
	fillQueue(t, s, name, n, fifo)
	if _, err := s.pool.Exec(context.Background(), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
}

// fillQueue is fillPeekQueue leaving the statistics as they were.
func fillQueue(t testing.TB, s *Store, name string, n int, fifo bool) {
	t.Helper()
	ctx := context.Background()
	now := s.now()
	_, err := s.pool.Exec(ctx, `
		WITH b AS (
			INSERT INTO message_bodies (id, body, attributes, trace_header, group_id, sender_id, md5_body, md5_attrs, md5_sys, slot)
			SELECT n, convert_to('body ' || n || repeat('x', 200), 'UTF8'),
				convert_to('[{"Name":"n","DataType":"Number","StringValue":"' || n || '","BinaryValue":null}]', 'UTF8'),
				'', CASE WHEN $4 THEN 'g' || n % 1000 ELSE '' END, '', '', '', '', (n / 1000) % 2
			FROM (SELECT nextval('message_seq') AS n FROM generate_series(1, $2::int8)) g
			RETURNING id, slot, group_id
		)
		INSERT INTO messages (queue_id, seq, body_id, message_id, sent_ns, entered_ns, visible_ns, slot, group_id, dedup_id)
		SELECT q.id, b.id, b.id, 'm' || b.id, $3::int8, $3::int8, $3::int8, b.slot, b.group_id, CASE WHEN $4 THEN 'd' || b.id ELSE '' END
		FROM b, queues q WHERE q.name = $1 AND q.deleted_ns IS NULL`, name, n, now, fifo)
	if err == nil && fifo {
		_, err = s.pool.Exec(ctx, `
			INSERT INTO fifo_groups (queue_id, group_id, head_seq, ready_ns)
			SELECT queue_id, group_id, min(seq), min(visible_ns) FROM messages
			WHERE queue_id = (SELECT id FROM queues WHERE name = $1 AND deleted_ns IS NULL) GROUP BY queue_id, group_id`, name)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// peekArgs are peekSQL's arguments for req.
func peekArgs(s *Store, name string, after int64, scan, limit int, f engine.PeekFilter) []any {
	return []any{enginetest.Account, name, s.now(), after, scan, limit, optional(f.MessageID), optional(string(f.State)),
		optionalBytes(f.BodyContains), optional(f.AttributeName), optional(f.AttributeValue)}
}

// The peek statements walk the queue's primary key from the cursor, on a
// queue of 100,000 messages in both slots beside another of 40,000: the
// first page and a page deep in the queue read a page's rows, a filtered
// page the rows it may examine; the refs are probes of the key. The
// plans are logged (go test -v -run TestPeekPlans).
func TestPeekPlans(t *testing.T) {
	s := openFresh(t, clock.NewFake(enginetest.Start))
	createQueue(t, s, "other")
	fillPeekQueue(t, s, "other", 40000, false)
	createFIFOQueue(t, s, "q.fifo")
	fillPeekQueue(t, s, "q.fifo", 40000, true)
	createQueue(t, s, "q")
	fillPeekQueue(t, s, "q", 100000, false)
	var first int64
	if err := s.pool.QueryRow(context.Background(), `SELECT min(seq) FROM messages WHERE queue_id = $1`, queueID(t, s, "q")).Scan(&first); err != nil {
		t.Fatal(err)
	}
	deep := first + 80000
	refs := []int64{first + 10, deep, first + 99999, 1}
	var fifoRefs []int64
	if err := s.pool.QueryRow(context.Background(), `SELECT array_agg(seq) FROM messages WHERE queue_id = $1 AND seq % 10000 = 7`,
		queueID(t, s, "q.fifo")).Scan(&fifoRefs); err != nil {
		t.Fatal(err)
	}
	acct := enginetest.Account
	plans := checkPlans(t, s, []planStep{
		{"the walk's settings", peekSettingsSQL, nil},
		{"first page of 50", peekSQL, peekArgs(s, "q", 0, 50, 50, engine.PeekFilter{})},
		{"a page of 50 deep in the queue", peekSQL, peekArgs(s, "q", deep, 50, 50, engine.PeekFilter{})},
		{"a filtered page examining 5,000 of the last 20,000", peekSQL, peekArgs(s, "q", deep, engine.PeekDefaultScan, 50,
			engine.PeekFilter{State: engine.StateDelayed})},
		{"a filtered page examining 5,000", peekSQL, peekArgs(s, "q", deep-40000, engine.PeekDefaultScan, 50,
			engine.PeekFilter{BodyContains: "no such text"})},
		{"a page filtered by attribute", peekSQL, peekArgs(s, "q", 0, engine.PeekDefaultScan, 50,
			engine.PeekFilter{AttributeName: "n", AttributeValue: "77"})},
		{"peek refs", peekRefsSQL, []any{acct, "q", s.now(), refs}},
		{"move task: the refs to move", refCandidatesSQL, []any{queueID(t, s, "q"), refs, s.now(), int64(4 * 24 * time.Hour), ""}},
		{"delete refs", deleteRefsSQL, []any{acct, "q", refs, s.now()}},
		{"FIFO: lock the refs' groups", lockRefsSQL, []any{acct, "q.fifo", fifoRefs}},
		{"FIFO: delete refs", deleteRefsSQL, []any{acct, "q.fifo", fifoRefs, s.now()}},
		{"FIFO: refresh the groups", refreshSQL, s.refreshArgs(acct, "q.fifo", s.now())},
	}, "messages", "message_bodies", "fifo_groups")
	// The walks (alias m) read what they may examine and one more: the
	// page, or the scan bound; and the look past it a row of each slot.
	for i, bound := range []int{0, 50, 50, 5000, 5000, 5000} {
		if read := walked(plans[i]); read > bound+3 {
			t.Errorf("peek step %d read %d rows of messages, bound %d:\n%s", i, read, bound, plans[i])
		}
	}
}

// walkedRows matches a plan line of an index walk of a slot of messages
// aliased m, and its rows.
var walkedRows = regexp.MustCompile(`Scan using messages_\d_pkey on messages_\d m_\d+ \(actual rows=(\d+)`)

// walked is how many rows of messages a plan's walks read; a bitmap scan
// counts for every row it could read.
func walked(plan string) int {
	if strings.Contains(plan, "Bitmap Index Scan on messages") {
		return math.MaxInt
	}
	n := 0
	for _, m := range walkedRows.FindAllStringSubmatch(plan, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}
