package enginetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// SendMany: each part is answered as Send would answer it alone.

// SendMany sends the parts, checking that each has its outcome and each
// outcome without an error a result per message.
func (h *H) SendMany(sends ...engine.QueueSend) []engine.SendOutcome {
	h.Helper()
	outs, err := h.B.SendMany(h.Ctx, sends)
	if err != nil {
		h.Fatalf("SendMany: %v", err)
	}
	if len(outs) != len(sends) {
		h.Fatalf("SendMany: %d outcomes for %d parts", len(outs), len(sends))
	}
	for i, o := range outs {
		if o.Err == nil && len(o.Results) != len(sends[i].Msgs) {
			h.Fatalf("SendMany part %d (%s): %d results for %d messages", i, sends[i].Name, len(o.Results), len(sends[i].Msgs))
		}
	}
	return outs
}

// Part is one queue's part of a SendMany, of Account.
func Part(name string, msgs ...engine.NewMessage) engine.QueueSend {
	return engine.QueueSend{Account: Account, Name: name, Msgs: msgs}
}

// Plain is a standard queue's message.
func Plain(body string) engine.NewMessage {
	return engine.NewMessage{Body: body, MD5OfBody: "md5-" + body}
}

// sendManyStandard sends the parts of testSendMany: parts to standard
// queues "a" and "b" (delayed 30 s), to a missing queue, to a queue of
// another account that exists only in Account, and an empty part.
func sendManyStandard(h *H) ([]engine.QueueSend, []engine.SendOutcome) {
	h.Helper()
	h.Create("a", nil)
	h.Create("b", func(s *engine.QueueSettings) { s.Delay = 30 * time.Second })
	sends := []engine.QueueSend{
		Part("a", Plain("a1"), Plain("a2")),
		Part("missing", Plain("lost")),
		Part("b", Plain("b1")),
		Part("a", Plain("a3")),
		{Account: "000000000000", Name: "a", Msgs: []engine.NewMessage{Plain("elsewhere")}},
		Part("a"),
	}
	outs := h.SendMany(sends...)
	ids := map[string]bool{}
	for i, o := range outs {
		missing := sends[i].Name == "missing" || sends[i].Account != Account
		if missing {
			wantErr(h.T, fmt.Sprintf("part %d (%s)", i, sends[i].Name), o.Err, engine.ErrQueueNotFound)
			continue
		}
		if o.Err != nil {
			h.Fatalf("part %d (%s): %v", i, sends[i].Name, o.Err)
		}
		for _, r := range o.Results {
			if r.MessageID == "" || ids[r.MessageID] || r.Duplicate || r.SequenceNumber != "" {
				h.Fatalf("part %d (%s): result %+v", i, sends[i].Name, r)
			}
			ids[r.MessageID] = true
		}
	}
	return sends, outs
}

// wantSendManyStandard checks what sendManyStandard's call left in its
// queues: every message of a part where it was sent, in order, with the
// queue's delay applied.
func wantSendManyStandard(h *H, outs []engine.SendOutcome) {
	h.Helper()
	h.WantStats("a", 3, 0, 0)
	h.WantStats("b", 0, 0, 1)
	got := h.WantBodies("a", engine.ReceiveRequest{}, "a1", "a2", "a3")
	for i, id := range []string{outs[0].Results[0].MessageID, outs[0].Results[1].MessageID, outs[3].Results[0].MessageID} {
		if got[i].MessageID != id || got[i].MD5OfBody != "md5-"+got[i].Body {
			h.Fatalf("queue a, message %d: %+v, want id %s", i, got[i], id)
		}
	}
	h.Clk.Advance(30 * time.Second)
	if m := h.ReceiveOne("b", engine.ReceiveRequest{}); m.Body != "b1" || m.MessageID != outs[2].Results[0].MessageID {
		h.Fatalf("queue b after its delay: %+v", m)
	}
}

func testSendMany(h *H) {
	_, outs := sendManyStandard(h)
	wantSendManyStandard(h, outs)
}

// testSendManyFIFO: FIFO parts deduplicate against each other as
// successive sends would, in both scopes, and keep their order.
func testSendManyFIFO(h *H) {
	h.Create("f.fifo", FIFO)
	h.Create("g.fifo", FIFOWith(func(s *engine.QueueSettings) { s.DeduplicationScope = engine.DeduplicationScopeMessageGroup }))
	h.Create("std", nil)
	outs := h.SendMany(
		Part("f.fifo", Msg("g1", "f1"), Msg("g2", "f2")),
		Part("std", Plain("s")),
		Part("g.fifo", Msg("g1", "k"), Msg("g2", "k")),
		Part("f.fifo", Msg("other", "f1"), Msg("g1", "f3")),
		Part("g.fifo", Msg("g1", "k"), Msg("g3", "k")),
	)
	for i, o := range outs {
		if o.Err != nil {
			h.Fatalf("part %d: %v", i, o.Err)
		}
	}
	f, g := slices.Concat(outs[0].Results, outs[3].Results), slices.Concat(outs[2].Results, outs[4].Results)
	// Queue scope: f1 again, in another group, is f1.
	if f[0].Duplicate || f[1].Duplicate || !f[2].Duplicate || f[3].Duplicate ||
		f[2].MessageID != f[0].MessageID || f[2].SequenceNumber != f[0].SequenceNumber {
		h.Fatalf("f.fifo results %+v", f)
	}
	if !seqLess(f[0].SequenceNumber, f[1].SequenceNumber) || !seqLess(f[1].SequenceNumber, f[3].SequenceNumber) {
		h.Fatalf("f.fifo sequence numbers do not grow in call order: %+v", f)
	}
	// Group scope: k in g1 again is g1's k, in g3 a new message.
	if g[0].Duplicate || g[1].Duplicate || !g[2].Duplicate || g[3].Duplicate || g[2].MessageID != g[0].MessageID ||
		g[1].MessageID == g[0].MessageID {
		h.Fatalf("g.fifo results %+v", g)
	}
	if r := outs[1].Results[0]; r.Duplicate || r.SequenceNumber != "" {
		h.Fatalf("standard part %+v", r)
	}
	h.WantBodies("f.fifo", engine.ReceiveRequest{}, "f1", "f3", "f2")
	h.WantStats("g.fifo", 3, 0, 0)
	// The window holds after the call as after a Send.
	if r := h.SendResults("f.fifo", Msg("g1", "f2"))[0]; !r.Duplicate || r.MessageID != f[1].MessageID {
		h.Fatalf("send after the call = %+v", r)
	}
}

func testSendManyEmpty(h *H) {
	if outs, err := h.B.SendMany(h.Ctx, nil); err != nil || len(outs) != 0 {
		h.Fatalf("SendMany(nil) = %+v, %v", outs, err)
	}
	h.Create("q", nil)
	outs := h.SendMany(Part("q"), Part("missing"))
	if outs[0].Err != nil || len(outs[0].Results) != 0 {
		h.Fatalf("empty part: %+v", outs[0])
	}
	wantErr(h.T, "empty part to a missing queue", outs[1].Err, engine.ErrQueueNotFound)
	h.WantStats("q", 0, 0, 0)
}

// Parts of a SendMany wake receives waiting on their queues.
func testSendManyWakesWaiters(h *H) {
	names := []string{"q0", "q1", "q2"}
	var waits []<-chan Result
	var sends []engine.QueueSend
	for _, n := range names {
		h.Create(n, nil)
		waits = append(waits, h.StartWait(h.Ctx, n, engine.ReceiveRequest{Max: 10, Wait: time.Minute}))
		sends = append(sends, Part(n, Plain("to "+n)))
	}
	outs := h.SendMany(sends...)
	for i, ch := range waits {
		r := h.Await(ch)
		if r.Err != nil || len(r.Msgs) != 1 || r.Msgs[0].Body != "to "+names[i] || r.Msgs[0].MessageID != outs[i].Results[0].MessageID {
			h.Fatalf("long poll on %s: %+v", names[i], r)
		}
	}
}
