package delivery

import (
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// The delivery's part of the failure history (engine.HistoryReader): each
// failed attempt is added to the delivery message's history in the write
// that schedules its retry, and a delivery given up into the
// subscription's dead-letter queue arrives there with its story.

// The phases of a delivery policy an attempt is made in (sns.md §7).
const (
	phaseInitial        = "initial"
	phaseImmediateRetry = "immediate-retry"
	phasePreBackoff     = "pre-backoff"
	phaseBackoff        = "backoff"
	phasePostBackoff    = "post-backoff"
)

// phase is the phase attempt n (1: the first delivery, n: retry n-1) is
// made in under p.
func (p schedule) phase(n int) string {
	r := n - 1
	switch {
	case r <= 0:
		return phaseInitial
	case r <= p.NoDelay:
		return phaseImmediateRetry
	case r <= p.NoDelay+p.MinDelayRetries:
		return phasePreBackoff
	case r <= p.NoDelay+p.MinDelayRetries+p.backoffRetries():
		return phaseBackoff
	}
	return phasePostBackoff
}

// attemptEvent is a failed attempt n, handed off at began and answered at
// ended.
func attemptEvent(sub *Subscription, p schedule, n int, began, ended time.Time, ar attemptResult) *engine.HistoryEvent {
	ev := &engine.HistoryEvent{
		Kind: engine.HistoryDelivery, At: began, ReceiveCount: n, Endpoint: MaskEndpoint(sub.Endpoint),
		Status: ar.status, Latency: ended.Sub(began), Phase: p.phase(n), Fault: "server",
	}
	if ar.status == 0 {
		ev.Error = ar.answer
	}
	if ar.outcome == permanent {
		ev.Fault = "client"
	}
	return ev
}

// deadLetterStory is the story a delivery given up after its last attempt
// ev takes into sub's dead-letter queue: what it had, the attempt, and
// the move.
func deadLetterStory(msg *engine.Message, ev *engine.HistoryEvent, sub *Subscription) *engine.MessageHistory {
	h := &engine.MessageHistory{}
	if msg.History != nil {
		h.Dropped = msg.History.Dropped
		h.Events = append(h.Events, msg.History.Events...)
	}
	h.Events = append(h.Events, *ev, engine.HistoryEvent{
		Kind: engine.HistoryMove, At: ev.At.Add(ev.Latency), ReceiveCount: ev.ReceiveCount,
		From: sub.ARN, To: sub.DeadLetter, Cause: engine.MoveBySNS,
	})
	if n := len(h.Events) - engine.HistoryCap; n > 0 {
		h.Dropped += n
		h.Events = h.Events[n:]
	}
	return h
}
