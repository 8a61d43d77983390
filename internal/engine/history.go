package engine

import (
	"context"
	"time"
)

// Failure history: a message carries the story of what happened to it
// (receives and by whom, moves between queues), stored beside it in the
// store, so that it lives as long as the message, goes with it when it is
// deleted (by a delete, retention, a purge, its queue's delete, a reset)
// and moves with it (a redrive into a dead-letter queue, a move task out
// of one). A receive appends its event in the write the receive makes
// anyway; visibility expiries are not written but derived (Story).

// HistoryCap is how many events a message keeps: a message received
// thousands of times keeps the latest HistoryCap and counts the others
// (MessageHistory.Dropped).
const HistoryCap = 50

// HistoryKind names what an event records.
type HistoryKind string

// The kinds of events. Expiries are never stored: Story derives them.
const (
	HistoryReceive HistoryKind = "receive"
	HistoryExpiry  HistoryKind = "expiry"
	HistoryMove    HistoryKind = "move"
	// HistoryDelivery is an SNS delivery attempt to a subscription's
	// endpoint (the deliveries of HTTP/S and other endpoints are messages
	// in hidden delivery queues).
	HistoryDelivery HistoryKind = "delivery"
)

// MoveCause says what moved a message (HistoryEvent.Cause).
const (
	MoveByRedrive = "redrive"
	MoveByTask    = "move-task"
	// MoveBySNS: SNS gave up a delivery and sent it to the subscription's
	// dead-letter queue (From is the subscription's ARN).
	MoveBySNS = "sns-dead-letter"
)

// Consumer is who received a message, as far as the request shows it.
type Consumer struct {
	SourceIP  string
	UserAgent string
	// AccessKey is the access key id the request was signed with (header
	// or presigned query), whether or not the signature was verified.
	AccessKey string
}

// HistoryEvent is one event of a message's story.
type HistoryEvent struct {
	Kind HistoryKind
	At   time.Time
	// ReceiveCount is the count after a receive, at a move, or of the
	// receive whose visibility ran out (expiry).
	ReceiveCount int
	// VisibleAt (receive, expiry) is when the receive's visibility
	// timeout ran out, as set by the receive.
	VisibleAt time.Time
	Consumer  // receive
	// From and To (move) are the queues' ARNs; Cause is MoveByRedrive or
	// MoveByTask; PreviousID is the message's id in From when a move task
	// gave it a new one.
	From, To   string
	Cause      string
	PreviousID string
	// Delivery (an SNS delivery attempt): the endpoint (credentials
	// masked), the HTTP status it answered (0: none), the error when it
	// answered none, how long the attempt took, the phase of the delivery
	// policy the attempt was made in, and whose fault a failure was
	// ("client": not retried; "server": retried).
	Endpoint string
	Status   int
	Error    string
	Latency  time.Duration
	Phase    string
	Fault    string
}

// MessageHistory is a message's stored story: its events in order
// (receives and moves), of which the first Dropped were dropped to keep
// HistoryCap.
type MessageHistory struct {
	MessageID string
	Events    []HistoryEvent
	Dropped   int
}

// Story returns the events with the visibility expiries derived: a
// receive followed by another receive or by a move (or, for the last
// receive, by nothing until now) lost its visibility at VisibleAt without
// a delete, since a delete would have ended the story.
func (h MessageHistory) Story(now time.Time) []HistoryEvent {
	out := make([]HistoryEvent, 0, 2*len(h.Events))
	for i, ev := range h.Events {
		out = append(out, ev)
		if ev.Kind != HistoryReceive {
			continue
		}
		next := now
		if i+1 < len(h.Events) {
			next = h.Events[i+1].At
		}
		if ev.VisibleAt.After(next) {
			continue // still in flight, or taken again early by a visibility change
		}
		out = append(out, HistoryEvent{Kind: HistoryExpiry, At: ev.VisibleAt, ReceiveCount: ev.ReceiveCount, VisibleAt: ev.VisibleAt})
	}
	return out
}

// HistoryReader reads the stories stored with a queue's messages.
type HistoryReader interface {
	// MessageHistory returns the story of the message messageID of the
	// queue; found is false when the queue has no such message or the
	// message has no story. ErrQueueNotFound for a missing queue.
	MessageHistory(ctx context.Context, account, name, messageID string) (h MessageHistory, found bool, err error)
	// MessageHistories returns the stories of up to limit messages of the
	// queue, newest message first, starting after the cursor (""
	// starts at the newest); next is the cursor of the following page, ""
	// after the last.
	MessageHistories(ctx context.Context, account, name, cursor string, limit int) (hs []MessageHistory, next string, err error)
}
