package embedded

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/handle"
)

// Receive implements engine.Backend. Messages over the redrive policy's
// receive count are moved to the dead-letter queue on the way and do not
// count towards req.Max; a long poll that found only such messages keeps
// waiting.
func (e *Engine) Receive(ctx context.Context, account, name string, req engine.ReceiveRequest) ([]engine.Message, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	q, err := e.lookup(account, name)
	if err != nil {
		e.leave()
		return nil, err
	}
	maxMsgs := max(req.Max, 1)
	attemptID := ""
	if q.fifo {
		attemptID = req.AttemptID
	}
	var vis *time.Duration
	if req.Visibility != nil {
		v := *req.Visibility
		vis = &v
	}

	// expired is closed when the wait is over; nil until the wait starts.
	var expired <-chan struct{}
	var deadline *clock.Deadline
	defer func() {
		if deadline != nil {
			deadline.Stop(ctx)
		}
	}()
	// Every round starts entered.
	for round := 0; ; round++ {
		woken := false
		q.mu.Lock()
		if q.deleted {
			q.mu.Unlock()
			e.leave()
			if round == 0 {
				return nil, engine.ErrQueueNotFound
			}
			return nil, nil
		}
		now := e.now()
		q.polled = now
		q.advanceLocked(now)
		if round == 0 && attemptID != "" {
			if got := q.retryAttemptLocked(attemptID, now, vis); got != nil {
				q.rearmLocked(now)
				q.mu.Unlock()
				defer e.leave()
				return e.fetch(q, got, req.History)
			}
		}
		var (
			got  []taken
			job  *redriveJob
			terr error
		)
		if q.takeableLocked() || req.Wait <= 0 {
			got, job, terr = q.takeLocked(now, maxMsgs, vis, req.Consumer)
			q.rearmLocked(now)
			q.mu.Unlock()
		} else {
			w := &waiter{ctx: ctx, max: maxMsgs, vis: vis, consumer: req.Consumer, done: make(chan struct{})}
			w.elem = q.waiters.PushBack(w)
			// The holds the caller came with; a message served from now
			// on hands its own (serveLocked).
			release := clock.DetachHolds(ctx)
			q.mu.Unlock()
			e.leave() // Close must not wait for a long poll
			if deadline == nil {
				// Its end is work of the step that reaches it: a caller
				// holding the clock's steps (clock.Holds) polls again
				// before the next step.
				deadline = clock.NewDeadline(e.clock, req.Wait)
				expired = deadline.C
			}
			release() // waiting: the step that called may end
			select {
			case <-w.done:
			case <-ctx.Done():
			case <-expired:
			}
			q.mu.Lock()
			if w.elem != nil {
				q.waiters.Remove(w.elem)
				w.elem = nil
			}
			got, job = w.got, w.job
			q.mu.Unlock()
			if e.enter() != nil {
				// Closed: what was taken stays in the store as it was.
				return nil, nil
			}
			woken = len(got) > 0
		}
		restored := 0
		if job != nil {
			restored = e.redrive(job)
		}
		if terr != nil {
			e.leave()
			return nil, fmt.Errorf("embedded: receive: %w", terr)
		}
		if woken && len(got) < maxMsgs && e.gather > 0 && terr == nil {
			var open bool
			if got, open = e.gatherMore(ctx, q, got, maxMsgs, vis, req.Consumer, expired); !open {
				return nil, nil
			}
		}
		if len(got) > 0 {
			defer e.leave()
			if attemptID != "" {
				q.mu.Lock()
				if !q.deleted {
					now := e.now()
					q.attempts.put(attemptID, got, now)
					q.rearmLocked(now)
				}
				q.mu.Unlock()
			}
			return e.fetch(q, got, req.History)
		}
		// Nothing taken. Without a move this is an empty short poll, or a
		// wait that ended (time, cancel, queue deleted, engine closed).
		// After a move, a short poll has seen every visible message and
		// looks again only at those whose dead-letter queue has gone (two
		// queues that are each other's dead-letter queue would otherwise
		// keep it busy); a long poll goes on waiting.
		if job == nil || ctx.Err() != nil || isClosed(expired) || (req.Wait <= 0 && restored == 0) {
			e.leave()
			return nil, nil
		}
	}
}

// gatherMore lets a long poll that was woken by an arrival linger for more
// before it answers. A waiter is served the moment one message is visible,
// so under a steady flow of single sends every receive would carry one or
// two messages, and each message would pay a receive and a delete round
// trip of its own. SQS answers "when at least one message is available",
// not necessarily with the first, so while sends flow (the last two came
// within a window) the poll waits a window for the next arrival, again
// after each arrival, and answers as soon as a window passes without one
// and without sends on their way into the queue (see arriving), Max is
// reached, the whole gather has taken gatherWindows windows (bounding what
// the first message waits) or the request's wait is over.
// A poll also gathers when, at its wake-up, another send to the queue is
// already on its way (see arriving): in a durable store sends arrive one
// WAL sync apart, more than a window, so that a flow of them never looked
// like one and each of its receives carried a message or two (an SNS
// fan-out's copies, one per publish in every subscribed queue, arrive so).
// A lone message is answered at once: the timer a window takes fires late
// on an idle machine (a millisecond or more), and no second message would
// come. Nor does a receive that found messages at once linger: it was not
// waiting for the flow. While it gathers, the poll is served before older
// waiters, so that arrivals fill one answer instead of waking every waiter
// with one message each.
//
// got is what the wake-up took; the call is entered and leaves entered. It
// returns false, and nothing, when the engine closed meanwhile (what was
// taken stays in the store as it was, as for a closed wait).
func (e *Engine) gatherMore(ctx context.Context, q *queue, got []taken, maxMsgs int, vis *time.Duration, c *engine.Consumer, expired <-chan struct{}) ([]taken, bool) {
	q.mu.Lock()
	if q.deleted || !q.flowingLocked(e.gather) && !q.arrivingLocked() {
		q.mu.Unlock()
		return got, true
	}
	// Windows pace answers, not broker time: they pass on the wall clock
	// even while an operator holds Ferry's time.
	wall := clock.WallOf(e.clock)
	deadline := wall.Now().UnixNano() + int64(gatherWindows*e.gather)
	w := &waiter{ctx: ctx, max: maxMsgs - len(got), vis: vis, consumer: c, done: make(chan struct{}), more: make(chan struct{}, 1)}
	w.elem = q.waiters.PushFront(w)
	q.mu.Unlock()
	e.leave()
	for window := e.gather; window > 0 && !isClosed(expired); window = min(e.gather, time.Duration(deadline-wall.Now().UnixNano())) {
		quiet := make(chan struct{})
		t := wall.AfterFunc(window, func() { close(quiet) })
		goOn := false
		select {
		case <-w.more:
			goOn = true
		case <-w.done:
		case <-quiet:
			// A quiet window while sends are being written (or synced)
			// is no end of the flow: wait on for them.
			goOn = e.arriving(q)
		case <-ctx.Done():
		case <-expired:
		}
		t.Stop()
		if !goOn {
			break
		}
	}
	q.mu.Lock()
	if w.elem != nil {
		q.waiters.Remove(w.elem)
		w.elem = nil
	}
	more, job := w.got, w.job
	q.mu.Unlock()
	if e.enter() != nil {
		return nil, false
	}
	if job != nil {
		e.redrive(job)
	}
	return append(got, more...), true
}

// arriving reports whether sends to q are on their way into its index: a
// quiet window does not end a gather then. In a durable store the sends
// that flow arrive in groups, one for each WAL sync, and a sync can
// outlast a window: the gather waits for the group being synced instead.
func (e *Engine) arriving(q *queue) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.arrivingLocked()
}

func isClosed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// fetch reads the bodies of taken messages and makes their handles. One
// bodyReader serves the whole receive, in ascending seq order. The
// records and handles are gathered into one buffer that every message's
// strings are cut from.
//
// With withHistory, the stories of the messages that have one are read
// too, each with a point read: only SNS delivery workers ask, and only
// deliveries that failed before have one.
func (e *Engine) fetch(q *queue, got []taken, withHistory bool) ([]engine.Message, error) {
	if len(got) == 0 {
		return nil, nil
	}
	type place struct {
		i          int // index in got
		start, end int // the record in raw; end 0 when not found
	}
	places := make([]place, len(got))
	for i := range places {
		places[i].i = i
	}
	slices.SortFunc(places, func(a, b place) int { return cmp.Compare(got[a.i].seq, got[b.i].seq) })
	var raw []byte
	found := 0
	r := bodyReader{q: q} // for the records not in hand
	defer r.close()
	for j := range places {
		p := &places[j]
		v := got[p.i].rec
		if v == nil {
			var err error
			if v, err = r.read(got[p.i].seq); err != nil {
				return nil, err
			}
			if v == nil {
				continue // purged or expired since it was taken
			}
		}
		if raw == nil {
			raw = make([]byte, 0, len(got)*(len(v)+handle.Len))
		}
		p.start = len(raw)
		raw = append(raw, v...)
		p.end = len(raw)
		found++
	}
	if found == 0 {
		return nil, nil
	}
	// Back in the receive's order; the handles follow the records.
	slices.SortFunc(places, func(a, b place) int { return cmp.Compare(a.i, b.i) })
	hs := len(raw)
	for _, p := range places {
		if p.end > 0 {
			t := got[p.i]
			raw = e.signer.AppendSigned(raw, handle.Receipt{Queue: q.id, Seq: t.seq, Gen: t.gen})
		}
	}
	// raw is complete and never written again: its string view needs no
	// copy (as strings.Builder does).
	s := unsafe.String(unsafe.SliceData(raw), len(raw))
	out := make([]engine.Message, 0, found)
	attrs := &attrArena{left: found}
	for _, p := range places {
		if p.end == 0 {
			continue
		}
		t := got[p.i]
		out = append(out, engine.Message{})
		m := &out[len(out)-1]
		if err := decodeMessageShared(raw[p.start:p.end], s[p.start:p.end], m, attrs); err != nil {
			return nil, fmt.Errorf("embedded: message %d of queue %d: %w", t.seq, q.id, err)
		}
		attrs.left--
		m.ReceiptHandle = s[hs : hs+handle.Len]
		hs += handle.Len
		if q.fifo {
			m.SequenceNumber = engine.FormatSequenceNumber(t.seq)
		}
		m.ReceiveCount = int(t.receiveCount)
		m.FirstReceiveAt = fromNanos(t.firstReceiveAt)
		if withHistory && (t.history || t.pending) {
			h, ok, err := e.story(q.id, t.seq, t.history, t.pending)
			if err != nil {
				return nil, fmt.Errorf("embedded: history of message %d of queue %d: %w", t.seq, q.id, err)
			}
			if ok {
				h.MessageID = m.MessageID
				m.History = &h
			}
		}
	}
	return out, nil
}
