package enginetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// Peeking (engine.Peeker): pages of a queue's messages that change
// nothing, reading and deleting messages by reference, and move tasks
// limited to chosen messages.

var peekTests = []test{
	{"PeekPages", testPeekPages},
	{"PeekStates", testPeekStates},
	{"PeekChangesNothing", testPeekChangesNothing},
	{"PeekFields", testPeekFields},
	{"PeekFilters", testPeekFilters},
	{"PeekMaxScan", testPeekMaxScan},
	{"PeekLimits", testPeekLimits},
	{"PeekMissingQueue", testPeekMissingQueue},
	{"PeekRefs", testPeekRefs},
	{"DeleteRefs", testDeleteRefs},
	{"DeleteRefsFIFO", testDeleteRefsFIFO},
	{"MoveTaskRefs", testMoveTaskRefs},
	{"MoveTaskRefsCancel", testMoveTaskRefsCancel},
	{"MoveTaskRefsRestart", testMoveTaskRefsRestart},
	{"MoveTaskRefsFIFO", testMoveTaskRefsFIFO},
}

// Peeker returns the store as an engine.Peeker.
func (h *H) Peeker() engine.Peeker { return h.B }

// Peek returns one page.
func (h *H) Peek(name string, req engine.PeekRequest) engine.PeekPage {
	h.Helper()
	page, err := h.Peeker().Peek(h.Ctx, Account, name, req)
	if err != nil {
		h.Fatalf("Peek(%s, %+v): %v", name, req, err)
	}
	if len(page.Messages) > req.Limit {
		h.Fatalf("Peek(%s, %+v) returned %d messages", name, req, len(page.Messages))
	}
	return page
}

// PeekAll walks the queue page by page from req.After and returns every
// message the pages held, and how many pages it took. The walk must end
// within what the queue holds: each page examines at least one message.
func (h *H) PeekAll(name string, req engine.PeekRequest) ([]engine.PeekedMessage, int) {
	h.Helper()
	var all []engine.PeekedMessage
	pages := 0
	for {
		page := h.Peek(name, req)
		pages++
		all = append(all, page.Messages...)
		if page.Next == "" {
			return all, pages
		}
		if page.Next == req.After {
			h.Fatalf("Peek(%s) returned its own cursor %q as Next", name, page.Next)
		}
		if pages > 10000 {
			h.Fatalf("Peek(%s): the walk does not end", name)
		}
		req.After = page.Next
	}
}

// peekBodies lists the peeked messages' bodies.
func peekBodies(ms []engine.PeekedMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}

// byBody indexes peeked messages by body.
func byBody(h *H, ms []engine.PeekedMessage) map[string]engine.PeekedMessage {
	h.Helper()
	out := map[string]engine.PeekedMessage{}
	for _, m := range ms {
		if _, dup := out[m.Body]; dup {
			h.Fatalf("message %q peeked twice", m.Body)
		}
		out[m.Body] = m
	}
	return out
}

// refsOf returns the refs of the named bodies, in that order.
func refsOf(h *H, ms []engine.PeekedMessage, bodies ...string) []string {
	h.Helper()
	idx := byBody(h, ms)
	refs := make([]string, len(bodies))
	for i, b := range bodies {
		m, ok := idx[b]
		if !ok {
			h.Fatalf("no message %q was peeked", b)
		}
		refs[i] = m.Ref
	}
	return refs
}

// testPeekPages: a walk with any Limit reaches every message once, in
// send order; on a FIFO queue in sequence order across groups.
func testPeekPages(h *H) {
	const n = 23
	h.Create("std", nil)
	h.Create("q.fifo", FIFO)
	var want []string
	var fifoSeq []string
	for i := range n {
		b := fmt.Sprintf("m%02d", i)
		want = append(want, b)
		h.SendBodies("std", b)
		// Groups interleave, so that group order and sequence order differ.
		res := h.SendResults("q.fifo", Msg(fmt.Sprint("g", i%3), b))
		fifoSeq = append(fifoSeq, res[0].SequenceNumber)
		if i%5 == 0 {
			h.Clk.Advance(time.Second)
		}
	}
	for _, name := range []string{"std", "q.fifo"} {
		for _, limit := range []int{1, 2, 7, n - 1, n, n + 1, engine.PeekMaxLimit} {
			got, pages := h.PeekAll(name, engine.PeekRequest{Limit: limit})
			if b := peekBodies(got); !slices.Equal(b, want) {
				h.Fatalf("%s, limit %d: walked %q, want %q", name, limit, b, want)
			}
			// At most one trailing empty page.
			if most := (n+limit-1)/limit + 1; pages > most {
				h.Fatalf("%s, limit %d: %d pages, want at most %d", name, limit, pages, most)
			}
			refs := map[string]bool{}
			for i, m := range got {
				if m.Ref == "" || refs[m.Ref] {
					h.Fatalf("%s: message %s has ref %q, empty or seen before", name, m.Body, m.Ref)
				}
				refs[m.Ref] = true
				if name == "q.fifo" && m.SequenceNumber != fifoSeq[i] {
					h.Fatalf("%s: message %s has sequence number %s, sent as %s", name, m.Body, m.SequenceNumber, fifoSeq[i])
				}
			}
		}
		// A page's Next continues exactly after it.
		first := h.Peek(name, engine.PeekRequest{Limit: 10})
		second := h.Peek(name, engine.PeekRequest{Limit: 10, After: first.Next})
		if b := peekBodies(slices.Concat(first.Messages, second.Messages)); !slices.Equal(b, want[:20]) {
			h.Fatalf("%s: two pages of 10 hold %q", name, b)
		}
		// A message deleted under the cursor does not break the walk.
		m := h.ReceiveOne(name, engine.ReceiveRequest{Max: 1})
		h.DeleteAll(name, []engine.Message{m})
		rest, _ := h.PeekAll(name, engine.PeekRequest{Limit: 5, After: first.Next})
		if b := peekBodies(rest); !slices.Equal(b, want[10:]) {
			h.Fatalf("%s: after a delete, the walk from the first page's Next found %q", name, b)
		}
		if first.Next == "" {
			h.Fatalf("%s: a first page of 10 of %d messages has no Next", name, n)
		}
	}
	// An empty queue: one empty page without a Next.
	h.Create("empty", nil)
	if p := h.Peek("empty", engine.PeekRequest{Limit: 10}); len(p.Messages) != 0 || p.Next != "" {
		h.Fatalf("empty queue: %+v", p)
	}
}

// testPeekStates: visible, in flight (with when it becomes visible) and
// delayed (with when its delay ends); a FIFO message behind its group's
// in-flight head is visible.
func testPeekStates(h *H) {
	for _, name := range []string{"q", "q.fifo"} {
		if strings.HasSuffix(name, ".fifo") {
			h.Create(name, FIFO)
		} else {
			h.Create(name, nil)
		}
		t0 := h.Clk.Now()
		thirty, delay := 30*time.Second, time.Minute
		msg := func(b string) engine.NewMessage {
			m := Msg("g", b)
			if name == "q" {
				m = Plain(b)
			}
			return m
		}
		h.Send(name, msg("inflight"), msg("visible"))
		d := msg("delayed")
		d.MessageGroupID = "other"
		if name == "q.fifo" {
			// FIFO queues take the queue's delay only.
			if err := h.B.UpdateQueue(h.Ctx, Account, name, func(q *engine.Queue) error {
				q.Settings.Delay = delay
				return nil
			}); err != nil {
				h.Fatal(err)
			}
		} else {
			d.Delay = &delay
		}
		h.Send(name, d)
		h.WantBodies(name, engine.ReceiveRequest{Max: 1, Visibility: &thirty}, "inflight")
		wantStates := func(when string, want map[string]engine.MessageState, at map[string]time.Time) {
			h.Helper()
			got, _ := h.PeekAll(name, engine.PeekRequest{Limit: 10})
			if len(got) != len(want) {
				h.Fatalf("%s, %s: peeked %q", name, when, peekBodies(got))
			}
			for _, m := range got {
				if m.State != want[m.Body] || !m.VisibleAt.Equal(at[m.Body]) {
					h.Fatalf("%s, %s: %s is %s visible at %v, want %s at %v", name, when, m.Body, m.State, m.VisibleAt, want[m.Body], at[m.Body])
				}
			}
			filtered, _ := h.PeekAll(name, engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{State: engine.StateInFlight}})
			var inflight []string
			for b, s := range want {
				if s == engine.StateInFlight {
					inflight = append(inflight, b)
				}
			}
			if b := peekBodies(filtered); !slices.Equal(b, inflight) {
				h.Fatalf("%s, %s: the in-flight filter found %q, want %q", name, when, b, inflight)
			}
		}
		wantStates("at first",
			map[string]engine.MessageState{"inflight": engine.StateInFlight, "visible": engine.StateVisible, "delayed": engine.StateDelayed},
			map[string]time.Time{"inflight": t0.Add(thirty), "delayed": t0.Add(delay)})
		h.Clk.Advance(thirty)
		wantStates("once the visibility ran out",
			map[string]engine.MessageState{"inflight": engine.StateVisible, "visible": engine.StateVisible, "delayed": engine.StateDelayed},
			map[string]time.Time{"delayed": t0.Add(delay)})
		h.Clk.Advance(delay - thirty)
		wantStates("once the delay ended",
			map[string]engine.MessageState{"inflight": engine.StateVisible, "visible": engine.StateVisible, "delayed": engine.StateVisible},
			nil)
	}
}

// testPeekChangesNothing: peeks, filtered or not, leave receive counts,
// visibility, stats, histories and FIFO groups as they were.
func testPeekChangesNothing(h *H) {
	for _, name := range []string{"q", "q.fifo"} {
		fifo := strings.HasSuffix(name, ".fifo")
		if fifo {
			h.Create(name, FIFO)
		} else {
			h.Create(name, nil)
		}
		var msgs []engine.NewMessage
		for i := range 6 {
			m := Msg(fmt.Sprint("g", i%2), fmt.Sprint("m", i))
			if !fifo {
				m = Plain(fmt.Sprint("m", i))
			}
			msgs = append(msgs, m)
		}
		h.Send(name, msgs...)
		h.Clk.Advance(time.Second)
		thirty := 30 * time.Second
		consumer := &engine.Consumer{SourceIP: "192.0.2.1", UserAgent: "peek-test"}
		first := h.ReceiveOne(name, engine.ReceiveRequest{Max: 1, Visibility: &thirty, Consumer: consumer})
		before, err := h.B.Stats(h.Ctx, Account, name)
		if err != nil {
			h.Fatal(err)
		}
		story, found, err := h.B.MessageHistory(h.Ctx, Account, name, first.MessageID)
		if err != nil || !found {
			h.Fatalf("MessageHistory: %v %v", found, err)
		}
		for _, req := range []engine.PeekRequest{
			{Limit: 100},
			{Limit: 1},
			{Limit: 100, Filter: engine.PeekFilter{BodyContains: "m"}},
			{Limit: 100, Filter: engine.PeekFilter{State: engine.StateInFlight}},
			{Limit: 100, Filter: engine.PeekFilter{MessageID: first.MessageID}},
		} {
			for range 3 {
				h.PeekAll(name, req)
			}
		}
		all, _ := h.PeekAll(name, engine.PeekRequest{Limit: 100})
		if _, err := h.Peeker().PeekRefs(h.Ctx, Account, name, refsOf(h, all, "m0", "m1", "m5")); err != nil {
			h.Fatal(err)
		}
		after, err := h.B.Stats(h.Ctx, Account, name)
		if err != nil {
			h.Fatal(err)
		}
		if !reflect.DeepEqual(before, after) {
			h.Fatalf("%s: Stats %+v before the peeks, %+v after", name, before, after)
		}
		story2, _, err := h.B.MessageHistory(h.Ctx, Account, name, first.MessageID)
		if err != nil || !reflect.DeepEqual(story, story2) {
			h.Fatalf("%s: history %+v before the peeks, %+v after (%v)", name, story, story2, err)
		}
		// A receive hands out what it would have without the peeks: on the
		// FIFO queue the other group's head (m1's group was not blocked by
		// a peek), then nothing of the first group while m0 is in flight.
		got := h.Receive(name, engine.ReceiveRequest{Max: 10, Visibility: &thirty})
		wantB := []string{"m1", "m2", "m3", "m4", "m5"}
		if fifo {
			wantB = []string{"m1", "m3", "m5"}
		}
		if b := Bodies(got); !slices.Equal(b, wantB) {
			h.Fatalf("%s: received %q after the peeks, want %q", name, b, wantB)
		}
		for _, m := range got {
			if m.ReceiveCount != 1 || !m.FirstReceiveAt.Equal(h.Clk.Now()) {
				h.Fatalf("%s: %s received with count %d first at %v", name, m.Body, m.ReceiveCount, m.FirstReceiveAt)
			}
		}
		// The in-flight message is still in flight until its own timeout,
		// and its handle still works.
		if err := h.ChangeVisibility(name, first.ReceiptHandle, thirty); err != nil {
			h.Fatalf("%s: the handle of the peeked in-flight message: %v", name, err)
		}
		h.DeleteAll(name, slices.Concat([]engine.Message{first}, got))
		if fifo {
			h.WantBodies(name, engine.ReceiveRequest{Max: 10}, "m2", "m4")
		}
	}
}

// testPeekFields: a peeked message carries everything a receive would
// show of it, without a receipt handle or history.
func testPeekFields(h *H) {
	h.Create("dlq", nil)
	h.Create("src", RedriveTo("dlq", 1))
	h.Create("q.fifo", FIFO)
	in := richMessage("rich")
	in.Attributes = append(in.Attributes, engine.MessageAttribute{Name: "zz", DataType: "Number", StringValue: "42"})
	sentAt := h.Clk.Now()
	ids := h.Send("src", in)
	fin := Msg("g1", "fifo")
	fin.TraceHeader, fin.MD5OfSysAttrs, fin.SenderID = "Root=1-x", "md5s-fifo", "AIDAFIFO"
	fres := h.SendResults("q.fifo", fin)

	check := func(what string, m engine.PeekedMessage, in engine.NewMessage, id string) {
		h.Helper()
		if m.Ref == "" || m.MessageID != id || m.ReceiptHandle != "" || m.History != nil ||
			m.Body != in.Body || m.TraceHeader != in.TraceHeader || m.MessageGroupID != in.MessageGroupID ||
			m.SenderID != in.SenderID || m.MD5OfBody != in.MD5OfBody || m.MD5OfAttrs != in.MD5OfAttrs ||
			m.MD5OfSysAttrs != in.MD5OfSysAttrs || !sameAttributes(m.Attributes, in.Attributes) {
			h.Fatalf("%s: peeked %+v, sent %+v as %s", what, m, in, id)
		}
	}
	one := func(name string) engine.PeekedMessage {
		h.Helper()
		p := h.Peek(name, engine.PeekRequest{Limit: 10})
		if len(p.Messages) != 1 {
			h.Fatalf("Peek(%s) holds %d messages", name, len(p.Messages))
		}
		return p.Messages[0]
	}

	m := one("src")
	check("before a receive", m, in, ids[0])
	if !m.SentAt.Equal(sentAt) || !m.FirstReceiveAt.IsZero() || m.ReceiveCount != 0 || m.DeadLetterSourceARN != "" ||
		m.SequenceNumber != "" || m.State != engine.StateVisible || !m.VisibleAt.IsZero() {
		h.Fatalf("before a receive: %+v", m)
	}
	h.Clk.Advance(time.Second)
	zero := time.Duration(0)
	r := h.ReceiveOne("src", engine.ReceiveRequest{Visibility: &zero})
	m = one("src")
	check("after a receive", m, in, ids[0])
	if !m.SentAt.Equal(sentAt) || !m.FirstReceiveAt.Equal(r.FirstReceiveAt) || !m.FirstReceiveAt.Equal(h.Clk.Now()) ||
		m.ReceiveCount != 1 || m.State != engine.StateVisible {
		h.Fatalf("after a receive: %+v", m)
	}

	// A redrive into the dead-letter queue.
	h.Clk.Advance(time.Second)
	h.ReceiveNone("src")
	m = one("dlq")
	check("in the dead-letter queue", m, in, ids[0])
	if m.DeadLetterSourceARN != ARN("src") || m.ReceiveCount != 1 || !m.SentAt.Equal(sentAt) ||
		!m.FirstReceiveAt.Equal(r.FirstReceiveAt) || m.State != engine.StateVisible {
		h.Fatalf("in the dead-letter queue: %+v", m)
	}

	m = one("q.fifo")
	check("FIFO", m, fin, fres[0].MessageID)
	if m.SequenceNumber != fres[0].SequenceNumber || m.DeduplicationID != fin.DeduplicationID || m.MessageGroupID != "g1" {
		h.Fatalf("FIFO: %+v, sent as %+v", m, fres[0])
	}
	// What a receive shows of the same message.
	got := h.ReceiveOne("q.fifo", engine.ReceiveRequest{})
	if got.SequenceNumber != m.SequenceNumber || got.DeduplicationID != m.DeduplicationID || !got.SentAt.Equal(m.SentAt) {
		h.Fatalf("FIFO: received %+v, peeked %+v", got, m)
	}
}

// testPeekFilters: each filter field, alone and together.
func testPeekFilters(h *H) {
	h.Create("q", nil)
	str := func(name, v string) engine.MessageAttribute {
		return engine.MessageAttribute{Name: name, DataType: "String", StringValue: v}
	}
	msgs := []engine.NewMessage{
		{Body: "alpha one", Attributes: []engine.MessageAttribute{str("color", "red")}},
		{Body: "beta two", Attributes: []engine.MessageAttribute{str("color", "blue"), {Name: "size", DataType: "Number", StringValue: "42"}}},
		{Body: "gamma", Attributes: []engine.MessageAttribute{{Name: "bin", DataType: "Binary", BinaryValue: []byte("red")}}},
		{Body: "alphabet", Attributes: []engine.MessageAttribute{{Name: "shade", DataType: "String.custom", StringValue: "dark red"}}},
		{Body: "Alpha caps"},
	}
	ids := h.Send("q", msgs...)
	hour := time.Hour
	h.WantBodies("q", engine.ReceiveRequest{Max: 1, Visibility: &hour}, "alpha one")
	delay := time.Minute
	h.Send("q", engine.NewMessage{Body: "alpha later", Delay: &delay})

	for _, tc := range []struct {
		name string
		f    engine.PeekFilter
		want []string
	}{
		{"none", engine.PeekFilter{}, []string{"alpha one", "beta two", "gamma", "alphabet", "Alpha caps", "alpha later"}},
		{"body", engine.PeekFilter{BodyContains: "alpha"}, []string{"alpha one", "alphabet", "alpha later"}},
		{"body case", engine.PeekFilter{BodyContains: "Alpha"}, []string{"Alpha caps"}},
		{"body none", engine.PeekFilter{BodyContains: "delta"}, nil},
		{"attribute", engine.PeekFilter{AttributeName: "color"}, []string{"alpha one", "beta two"}},
		{"attribute value", engine.PeekFilter{AttributeName: "color", AttributeValue: "re"}, []string{"alpha one"}},
		{"attribute value whole", engine.PeekFilter{AttributeName: "color", AttributeValue: "blue"}, []string{"beta two"}},
		{"attribute value none", engine.PeekFilter{AttributeName: "color", AttributeValue: "green"}, nil},
		{"number value", engine.PeekFilter{AttributeName: "size", AttributeValue: "4"}, []string{"beta two"}},
		{"custom type value", engine.PeekFilter{AttributeName: "shade", AttributeValue: "red"}, []string{"alphabet"}},
		{"binary by name", engine.PeekFilter{AttributeName: "bin"}, []string{"gamma"}},
		{"binary value", engine.PeekFilter{AttributeName: "bin", AttributeValue: "red"}, nil},
		{"attribute name case", engine.PeekFilter{AttributeName: "Color"}, nil},
		{"value of another attribute", engine.PeekFilter{AttributeName: "size", AttributeValue: "red"}, nil},
		{"message id", engine.PeekFilter{MessageID: ids[2]}, []string{"gamma"}},
		{"unknown message id", engine.PeekFilter{MessageID: "no-such-id"}, nil},
		{"in flight", engine.PeekFilter{State: engine.StateInFlight}, []string{"alpha one"}},
		{"delayed", engine.PeekFilter{State: engine.StateDelayed}, []string{"alpha later"}},
		{"visible", engine.PeekFilter{State: engine.StateVisible}, []string{"beta two", "gamma", "alphabet", "Alpha caps"}},
		{"body and state", engine.PeekFilter{BodyContains: "alpha", State: engine.StateVisible}, []string{"alphabet"}},
		{"body and attribute", engine.PeekFilter{BodyContains: "a", AttributeName: "color", AttributeValue: "blue"}, []string{"beta two"}},
		{"id and body", engine.PeekFilter{MessageID: ids[2], BodyContains: "alpha"}, nil},
	} {
		for _, limit := range []int{1, 100} {
			got, _ := h.PeekAll("q", engine.PeekRequest{Limit: limit, Filter: tc.f})
			if b := peekBodies(got); !slices.Equal(b, tc.want) && (len(b) != 0 || len(tc.want) != 0) {
				h.Fatalf("%s, limit %d: %q, want %q", tc.name, limit, b, tc.want)
			}
		}
	}
}

// testPeekMaxScan: MaxScan bounds what one filtered page examines; the
// walk goes on through pages without a match and examines every message
// once.
func testPeekMaxScan(h *H) {
	h.Create("q", nil)
	const n = 30
	var want []string
	for i := range n {
		b := fmt.Sprint("miss-", i)
		if i == 24 || i == 25 || i == 28 {
			b = fmt.Sprint("hit-", i)
			want = append(want, b)
		}
		h.SendBodies("q", b)
	}
	for _, tc := range []struct {
		limit, maxScan int
		// minPages is the fewest pages the walk can take.
		minPages int
	}{
		{100, 10, 3},
		{100, 7, 5},
		{1, 10, 4},
		{100, 0, 1},
		{1, 0, 3},
		{2, 100, 2},
	} {
		req := engine.PeekRequest{Limit: tc.limit, MaxScan: tc.maxScan, Filter: engine.PeekFilter{BodyContains: "hit"}}
		bound := tc.maxScan
		if bound == 0 {
			bound = engine.PeekDefaultScan
		}
		var got []string
		scanned, pages, empty := 0, 0, 0
		for {
			p := h.Peek("q", req)
			pages++
			if p.Scanned > bound || p.Scanned < len(p.Messages) {
				h.Fatalf("limit %d, max scan %d: a page scanned %d and holds %d", tc.limit, tc.maxScan, p.Scanned, len(p.Messages))
			}
			if len(p.Messages) == 0 && p.Next != "" {
				empty++
			}
			scanned += p.Scanned
			got = append(got, peekBodies(p.Messages)...)
			if p.Next == "" {
				break
			}
			if pages > n+1 {
				h.Fatalf("limit %d, max scan %d: the walk does not end", tc.limit, tc.maxScan)
			}
			req.After = p.Next
		}
		if !slices.Equal(got, want) || scanned != n || pages < tc.minPages {
			h.Fatalf("limit %d, max scan %d: found %q in %d pages scanning %d, want %q scanning %d",
				tc.limit, tc.maxScan, got, pages, scanned, want, n)
		}
		if tc.maxScan == 10 && tc.limit == 100 && empty < 2 {
			h.Fatalf("max scan 10: %d pages without a match but with a Next, want the first two", empty)
		}
	}
}

// testPeekLimits: a Limit out of range or a malformed cursor is refused
// with an error.
func testPeekLimits(h *H) {
	h.Create("q", nil)
	h.SendBodies("q", "a", "b")
	p := h.Peeker()
	for _, limit := range []int{0, -1, engine.PeekMaxLimit + 1} {
		if _, err := p.Peek(h.Ctx, Account, "q", engine.PeekRequest{Limit: limit}); err == nil || errors.Is(err, engine.ErrQueueNotFound) {
			h.Fatalf("Limit %d: err = %v, want an error", limit, err)
		}
	}
	if page := h.Peek("q", engine.PeekRequest{Limit: engine.PeekMaxLimit}); len(page.Messages) != 2 {
		h.Fatalf("Limit %d: %d messages", engine.PeekMaxLimit, len(page.Messages))
	}
	for _, after := range []string{"not a cursor", "%%%", "\xff\xfe", "-1", "1.5", strings.Repeat("9", 40)} {
		if _, err := p.Peek(h.Ctx, Account, "q", engine.PeekRequest{Limit: 10, After: after}); err == nil {
			h.Fatalf("After %q: no error", after)
		}
	}
	if _, err := p.Peek(h.Ctx, Account, "q", engine.PeekRequest{Limit: 10, Filter: engine.PeekFilter{State: "sleeping"}}); err == nil {
		h.Fatalf("an unknown state: no error")
	}
}

func testPeekMissingQueue(h *H) {
	p := h.Peeker()
	_, err := p.Peek(h.Ctx, Account, "missing", engine.PeekRequest{Limit: 10})
	wantErr(h.T, "Peek", err, engine.ErrQueueNotFound)
	_, err = p.PeekRefs(h.Ctx, Account, "missing", []string{"1"})
	wantErr(h.T, "PeekRefs", err, engine.ErrQueueNotFound)
	_, err = p.DeleteRefs(h.Ctx, Account, "missing", []string{"1"})
	wantErr(h.T, "DeleteRefs", err, engine.ErrQueueNotFound)
	// The queue of another account is not this one.
	if _, _, err := h.B.CreateQueue(h.Ctx, engine.Queue{Account: Other, Name: "theirs", Settings: Settings()}); err != nil {
		h.Fatal(err)
	}
	_, err = p.Peek(h.Ctx, Account, "theirs", engine.PeekRequest{Limit: 10})
	wantErr(h.T, "Peek of another account's queue", err, engine.ErrQueueNotFound)
}

// testPeekRefs: the messages named, in the order named, with their
// histories; what is unknown or gone is left out.
func testPeekRefs(h *H) {
	h.Create("dlq", nil)
	h.Create("q", RedriveTo("dlq", 1))
	h.SendBodies("q", "a", "b", "c", "d", "gone")
	all, _ := h.PeekAll("q", engine.PeekRequest{Limit: 10})
	idx := byBody(h, all)
	h.Clk.Advance(time.Second)
	hour := time.Hour
	a := h.ReceiveOne("q", engine.ReceiveRequest{Max: 1, Visibility: &hour, Consumer: &engine.Consumer{SourceIP: "192.0.2.7"}})
	gone, err := h.Peeker().DeleteRefs(h.Ctx, Account, "q", []string{idx["gone"].Ref})
	if err != nil || gone != 1 {
		h.Fatalf("DeleteRefs: %d, %v", gone, err)
	}
	refs := []string{idx["c"].Ref, "", "no such ref", idx["gone"].Ref, idx["a"].Ref, "\xff", idx["c"].Ref + "0", idx["b"].Ref, "99999999"}
	got, err := h.Peeker().PeekRefs(h.Ctx, Account, "q", refs)
	if err != nil {
		h.Fatal(err)
	}
	if b := peekBodies(got); !slices.Equal(b, []string{"c", "a", "b"}) {
		h.Fatalf("PeekRefs = %q, want c, a, b", b)
	}
	for _, m := range got {
		if m.Ref != idx[m.Body].Ref {
			h.Fatalf("%s: ref %q, peeked as %q", m.Body, m.Ref, idx[m.Body].Ref)
		}
		switch m.Body {
		case "a":
			if m.History == nil || m.History.MessageID != a.MessageID || len(m.History.Events) != 1 ||
				m.History.Events[0].Kind != engine.HistoryReceive || m.History.Events[0].SourceIP != "192.0.2.7" {
				h.Fatalf("a: history %+v", m.History)
			}
			if m.State != engine.StateInFlight || !m.VisibleAt.Equal(h.Clk.Now().Add(hour)) || m.ReceiveCount != 1 {
				h.Fatalf("a: %+v", m)
			}
		default:
			// Peek and PeekRefs show a message alike.
			if m.History != nil || !reflect.DeepEqual(m, idx[m.Body]) {
				h.Fatalf("%s: PeekRefs %+v, Peek %+v", m.Body, m, idx[m.Body])
			}
		}
	}
	if got, err := h.Peeker().PeekRefs(h.Ctx, Account, "q", nil); err != nil || len(got) != 0 {
		h.Fatalf("PeekRefs(nil) = %v, %v", got, err)
	}

	// A message moved by a redrive has a story there.
	zero := time.Duration(0)
	h.ReceiveOne("q", engine.ReceiveRequest{Max: 1, Visibility: &zero, Consumer: &engine.Consumer{SourceIP: "192.0.2.8"}})
	h.Clk.Advance(time.Second)
	if got := Bodies(h.Receive("q", engine.ReceiveRequest{Max: 10, Visibility: &hour})); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"c", "d"}) {
		h.Fatalf("received %q, want c and d, b moved", got)
	}
	dl, _ := h.PeekAll("dlq", engine.PeekRequest{Limit: 10})
	got, err = h.Peeker().PeekRefs(h.Ctx, Account, "dlq", refsOf(h, dl, "b"))
	if err != nil || len(got) != 1 {
		h.Fatalf("PeekRefs(dlq) = %+v, %v", got, err)
	}
	hist := got[0].History
	if hist == nil || len(hist.Events) == 0 || hist.Events[len(hist.Events)-1].Kind != engine.HistoryMove ||
		hist.Events[len(hist.Events)-1].From != ARN("q") {
		h.Fatalf("b in the dead-letter queue: history %+v", hist)
	}
}

// testDeleteRefs: a delete by reference takes a message whatever its
// state, as a delete by its receipt handle would, durably.
func testDeleteRefs(h *H) {
	h.Create("q", nil)
	t0 := h.Clk.Now()
	h.SendBodies("q", "v1")
	h.Clk.Advance(time.Second)
	t1 := h.Clk.Now()
	h.SendBodies("q", "v2", "inflight", "keep")
	delay := time.Minute
	h.Send("q", engine.NewMessage{Body: "delayed", Delay: &delay})
	hour := time.Hour
	all, _ := h.PeekAll("q", engine.PeekRequest{Limit: 10})
	got := h.Receive("q", engine.ReceiveRequest{Max: 3, Visibility: &hour, Consumer: &engine.Consumer{SourceIP: "192.0.2.1"}})
	if b := Bodies(got); !slices.Equal(b, []string{"v1", "v2", "inflight"}) {
		h.Fatalf("received %q", b)
	}
	inflight := got[2]
	// v1 and v2 become visible again.
	for _, m := range got[:2] {
		if err := h.ChangeVisibility("q", m.ReceiptHandle, 0); err != nil {
			h.Fatal(err)
		}
	}
	h.WantStats("q", 3, 1, 1)
	h.WantOldest("q", t0)

	p := h.Peeker()
	refs := refsOf(h, all, "v1", "inflight", "delayed")
	n, err := p.DeleteRefs(h.Ctx, Account, "q", append(refs, "no such ref", refs[0]))
	if err != nil || n != 3 {
		h.Fatalf("DeleteRefs = %d, %v, want 3", n, err)
	}
	check := func(when string) {
		h.Helper()
		h.WantStats("q", 2, 0, 0)
		h.WantOldest("q", t1)
		rest, _ := h.PeekAll("q", engine.PeekRequest{Limit: 10})
		if b := peekBodies(rest); !slices.Equal(b, []string{"v2", "keep"}) {
			h.Fatalf("%s: the queue holds %q", when, b)
		}
		if _, found, err := h.B.MessageHistory(h.Ctx, Account, "q", inflight.MessageID); err != nil || found {
			h.Fatalf("%s: the deleted message's history: %v, %v", when, found, err)
		}
		if got, err := p.PeekRefs(h.Ctx, Account, "q", refs); err != nil || len(got) != 0 {
			h.Fatalf("%s: PeekRefs of deleted refs = %+v, %v", when, got, err)
		}
	}
	check("after DeleteRefs")
	// The in-flight message's handle reaches nothing.
	if errs := h.Delete("q", inflight.ReceiptHandle); errs[0] != nil {
		h.Fatalf("delete by the handle of a message deleted by ref: %v", errs[0])
	}
	wantErr(h.T, "change the visibility of a message deleted by ref", h.ChangeVisibility("q", inflight.ReceiptHandle, time.Minute), engine.ErrMessageNotInflight)
	// Again, or refs unknown: nothing.
	for _, again := range [][]string{refs, {"no such ref", "", "\xff", "12345678901234567890123"}, nil} {
		if n, err := p.DeleteRefs(h.Ctx, Account, "q", again); err != nil || n != 0 {
			h.Fatalf("DeleteRefs(%q) = %d, %v, want 0", again, n, err)
		}
	}
	h.WantStats("q", 2, 0, 0)
	// Durable.
	if h.d.Reopen != nil {
		h.Restart(0)
		p = h.Peeker()
		check("after a restart")
	}
	h.Clk.Advance(delay)
	// v2 was received before: where it stands among the visible is the
	// store's own.
	if got := Bodies(h.Receive("q", engine.ReceiveRequest{Max: 10})); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"keep", "v2"}) {
		h.Fatalf("received %q at the end", got)
	}
}

// testDeleteRefsFIFO: deleting a group's in-flight head by reference
// frees the group, as its delete would.
func testDeleteRefsFIFO(h *H) {
	h.Create("q.fifo", FIFO)
	h.SendResults("q.fifo", Msg("g1", "a"), Msg("g1", "b"), Msg("g2", "c"), Msg("g1", "d"))
	all, _ := h.PeekAll("q.fifo", engine.PeekRequest{Limit: 10})
	h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "a")
	h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 1}, "c")
	h.ReceiveNone("q.fifo")
	h.WantGroupsInFlight("q.fifo", 2)
	n, err := h.Peeker().DeleteRefs(h.Ctx, Account, "q.fifo", refsOf(h, all, "a"))
	if err != nil || n != 1 {
		h.Fatalf("DeleteRefs = %d, %v", n, err)
	}
	h.WantGroupsInFlight("q.fifo", 1)
	h.WantStats("q.fifo", 2, 1, 0)
	// A visible message in the middle of a group goes too; the group
	// keeps its order.
	if n, err := h.Peeker().DeleteRefs(h.Ctx, Account, "q.fifo", refsOf(h, all, "b")); err != nil || n != 1 {
		h.Fatalf("DeleteRefs(b) = %d, %v", n, err)
	}
	h.WantBodies("q.fifo", engine.ReceiveRequest{Max: 10}, "d")
	h.WantGroupsInFlight("q.fifo", 2)
}

// refsTaskQueues fills the dead-letter queue p+"dlq" with messages
// redriven from p+"s1" and p+"s2", in the order s1-a, s2-a, s1-b, s2-b,
// s1-c, creates p+"dst", and returns the dead-letter queue as peeked.
func refsTaskQueues(h *H, p string) []engine.PeekedMessage {
	h.Helper()
	h.Create(p+"dlq", nil)
	h.Create(p+"dst", nil)
	h.Create(p+"s1", RedriveTo(p+"dlq", 1))
	h.Create(p+"s2", RedriveTo(p+"dlq", 1))
	zero := time.Duration(0)
	for _, b := range []string{"s1-a", "s2-a", "s1-b", "s2-b", "s1-c"} {
		src := p + b[:2]
		h.SendBodies(src, b)
		h.ReceiveOne(src, engine.ReceiveRequest{Visibility: &zero})
		h.ReceiveNone(src)
	}
	h.WantStats(p+"dlq", 5, 0, 0)
	all, _ := h.PeekAll(p+"dlq", engine.PeekRequest{Limit: 10})
	if b := peekBodies(all); !slices.Equal(b, []string{"s1-a", "s2-a", "s1-b", "s2-b", "s1-c"}) {
		h.Fatalf("%sdlq holds %q", p, b)
	}
	return all
}

// testMoveTaskRefs: a task limited to refs moves those of them that are
// visible when it reaches them, in the queue's order, to their sources
// or to a destination, and completes; the others stay.
func testMoveTaskRefs(h *H) {
	for _, p := range []string{"to-sources-", "to-dst-"} {
		toDst := p == "to-dst-"
		all := refsTaskQueues(h, p)
		dlq := p + "dlq"
		hour := time.Hour
		h.WantBodies(dlq, engine.ReceiveRequest{Max: 1, Visibility: &hour}, "s1-a")
		if n, err := h.Peeker().DeleteRefs(h.Ctx, Account, dlq, refsOf(h, all, "s2-b")); err != nil || n != 1 {
			h.Fatalf("DeleteRefs = %d, %v", n, err)
		}
		refs := refsOf(h, all, "s1-c", "s2-b", "s1-a", "s2-a")
		task := engine.MoveTask{SourceName: dlq, Refs: refs}
		if toDst {
			task.DestinationARN = ARN(p + "dst")
		}
		started := h.StartTask(task)
		if started.ToMove != int64(len(refs)) || !slices.Equal(started.Refs, refs) {
			h.Fatalf("%s: started %+v, want ToMove %d and the refs %q", p, started, len(refs), refs)
		}
		ended := h.WaitEnded(dlq, started.ID)
		if ended.Status != engine.MoveTaskCompleted || ended.Moved != 2 || ended.ToMove != int64(len(refs)) ||
			ended.FailureReason != "" || !slices.Equal(ended.Refs, refs) {
			h.Fatalf("%s: ended %+v", p, ended)
		}
		// The in-flight one and the one not chosen stay.
		h.WantStats(dlq, 1, 1, 0)
		rest, _ := h.PeekAll(dlq, engine.PeekRequest{Limit: 10})
		if b := peekBodies(rest); !slices.Equal(b, []string{"s1-a", "s1-b"}) {
			h.Fatalf("%s: the dead-letter queue holds %q", p, b)
		}
		if toDst {
			h.WaitStats(p+"dst", 2, 0, 0)
			h.WantBodies(p+"dst", engine.ReceiveRequest{}, "s2-a", "s1-c")
			h.WantStats(p+"s1", 0, 0, 0)
			h.WantStats(p+"s2", 0, 0, 0)
		} else {
			h.WaitStats(p+"s1", 1, 0, 0)
			h.WaitStats(p+"s2", 1, 0, 0)
			h.WantBodies(p+"s1", engine.ReceiveRequest{}, "s1-c")
			h.WantBodies(p+"s2", engine.ReceiveRequest{}, "s2-a")
			h.WantStats(p+"dst", 0, 0, 0)
		}
	}
	// Refs of which none is there: the task completes having moved none.
	all := refsTaskQueues(h, "none-")
	if n, err := h.Peeker().DeleteRefs(h.Ctx, Account, "none-dlq", refsOf(h, all, "s1-b")); err != nil || n != 1 {
		h.Fatalf("DeleteRefs = %d, %v", n, err)
	}
	t := h.StartTask(engine.MoveTask{SourceName: "none-dlq", DestinationARN: ARN("none-dst"), Refs: refsOf(h, all, "s1-b")})
	if t = h.WaitEnded("none-dlq", t.ID); t.Status != engine.MoveTaskCompleted || t.Moved != 0 || t.ToMove != 1 {
		h.Fatalf("a task whose refs are gone ended %+v", t)
	}
	h.WantStats("none-dlq", 4, 0, 0)
	h.WantStats("none-dst", 0, 0, 0)
}

// testMoveTaskRefsCancel: a cancelled task limited to refs stops; what
// it moved were the first of its refs in the queue's order.
func testMoveTaskRefsCancel(h *H) {
	h.Create("dlq", nil)
	h.Create("dst", nil)
	h.SendBodies("dlq", "m0", "m1", "m2", "m3", "m4", "m5")
	all, _ := h.PeekAll("dlq", engine.PeekRequest{Limit: 10})
	chosen := []string{"m0", "m2", "m3", "m5"}
	t := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 1, Refs: refsOf(h, all, "m5", "m3", "m2", "m0")})
	h.WaitMoved("dlq", t.ID, 1)
	if _, err := h.B.CancelMoveTask(h.Ctx, Account, "dlq", t.ID); err != nil {
		h.Fatal(err)
	}
	ended := h.WaitEnded("dlq", t.ID)
	if ended.Status != engine.MoveTaskCancelled || ended.Moved < 1 || ended.Moved >= int64(len(chosen)) {
		h.Fatalf("after the cancel: %+v", ended)
	}
	h.Clk.Advance(10 * time.Second)
	if got := h.Task("dlq", t.ID); got.Status != engine.MoveTaskCancelled || got.Moved != ended.Moved {
		h.Fatalf("after the clock moved: %+v, ended as %+v", got, ended)
	}
	h.WaitStats("dst", ended.Moved, 0, 0)
	h.WantBodies("dst", engine.ReceiveRequest{}, chosen[:ended.Moved]...)
	rest, _ := h.PeekAll("dlq", engine.PeekRequest{Limit: 10})
	var want []string
	for _, b := range []string{"m0", "m1", "m2", "m3", "m4", "m5"} {
		if !slices.Contains(chosen[:ended.Moved], b) {
			want = append(want, b)
		}
	}
	if b := peekBodies(rest); !slices.Equal(b, want) {
		h.Fatalf("the dead-letter queue holds %q, want %q", b, want)
	}
	h.CloseMoved("dst", ended.Moved)
}

// testMoveTaskRefsRestart: a RUNNING task limited to refs resumes after
// a restart with the same refs and moves exactly those.
func testMoveTaskRefsRestart(h *H) {
	h.NeedDurable()
	h.Create("dlq", nil)
	h.Create("dst", nil)
	sendN(h, "dlq", 30)
	all, _ := h.PeekAll("dlq", engine.PeekRequest{Limit: 100})
	var refs, chosen, others []string
	for i, m := range all {
		if i%2 == 0 {
			refs = append(refs, m.Ref)
			chosen = append(chosen, m.Body)
		} else {
			others = append(others, m.Body)
		}
	}
	started := h.StartTask(engine.MoveTask{SourceName: "dlq", DestinationARN: ARN("dst"), MaxPerSecond: 5, Refs: refs})
	h.WaitMoved("dlq", started.ID, 5)
	h.Restart(time.Hour)
	t := h.WaitMoved("dlq", started.ID, 10)
	if t.Status != engine.MoveTaskRunning || t.ToMove != 15 || !slices.Equal(t.Refs, refs) || !t.Started.Equal(started.Started) {
		h.Fatalf("resumed task %+v, started as %+v", t, started)
	}
	h.Clk.Advance(time.Second)
	t = h.WaitEnded("dlq", started.ID)
	if t.Status != engine.MoveTaskCompleted || t.Moved != 15 || t.ToMove != 15 {
		h.Fatalf("ended %+v", t)
	}
	h.WaitStats("dst", 15, 0, 0)
	if got := h.ReceiveAll("dst"); !slices.Equal(Bodies(got), chosen) {
		h.Fatalf("the destination received %q, want %q", Bodies(got), chosen)
	}
	rest, _ := h.PeekAll("dlq", engine.PeekRequest{Limit: 100})
	if b := peekBodies(rest); !slices.Equal(b, others) {
		h.Fatalf("the dead-letter queue holds %q, want %q", b, others)
	}
}

// testMoveTaskRefsFIFO: the chosen messages of each group arrive in the
// group's order.
func testMoveTaskRefsFIFO(h *H) {
	h.Create("dlq.fifo", FIFO)
	h.Create("dst.fifo", FIFO)
	var batch []engine.NewMessage
	for i := range 4 {
		batch = append(batch, Msg("g1", fmt.Sprint("a", i)), Msg("g2", fmt.Sprint("b", i)))
	}
	h.SendResults("dlq.fifo", batch...)
	all, _ := h.PeekAll("dlq.fifo", engine.PeekRequest{Limit: 10})
	refs := refsOf(h, all, "a3", "b1", "a0", "a2")
	t := h.StartTask(engine.MoveTask{SourceName: "dlq.fifo", DestinationARN: ARN("dst.fifo"), Refs: refs})
	if t = h.WaitEnded("dlq.fifo", t.ID); t.Status != engine.MoveTaskCompleted || t.Moved != 4 || t.ToMove != 4 {
		h.Fatalf("ended %+v", t)
	}
	h.WaitStats("dst.fifo", 4, 0, 0)
	moved, _ := h.PeekAll("dst.fifo", engine.PeekRequest{Limit: 10})
	if b := peekBodies(moved); !slices.Equal(b, []string{"a0", "b1", "a2", "a3"}) {
		h.Fatalf("the destination holds %q in sequence order", b)
	}
	perGroup := map[string][]string{}
	for _, m := range h.ReceiveAll("dst.fifo") {
		perGroup[m.MessageGroupID] = append(perGroup[m.MessageGroupID], m.Body)
	}
	if !slices.Equal(perGroup["g1"], []string{"a0", "a2", "a3"}) || !slices.Equal(perGroup["g2"], []string{"b1"}) {
		h.Fatalf("received by group %q", perGroup)
	}
	rest, _ := h.PeekAll("dlq.fifo", engine.PeekRequest{Limit: 10})
	if b := peekBodies(rest); !slices.Equal(b, []string{"b0", "a1", "b2", "b3"}) {
		h.Fatalf("the dead-letter queue holds %q", b)
	}
}
