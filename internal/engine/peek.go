package engine

import (
	"context"
	"time"
)

// Peeking: the console's read path into a queue. A peek shows messages as
// they are, in flight or delayed included, and changes nothing: no receive
// count, visibility, history or metric moves, unlike ReceiveMessage (which
// is why looking at a dead-letter queue in AWS's console can push its
// messages further along).

// MessageState is where a message stands in its queue.
type MessageState string

// The message states a peek reports.
const (
	StateVisible  MessageState = "visible"
	StateInFlight MessageState = "inflight"
	StateDelayed  MessageState = "delayed"
)

// PeekMaxLimit is the most messages one Peek returns.
const PeekMaxLimit = 100

// PeekDefaultScan is how many messages a filtered Peek examines, at most,
// when PeekRequest.MaxScan is 0: one call stays short whatever the
// queue's depth, and the caller follows Next for more.
const PeekDefaultScan = 5000

// PeekFilter keeps only the messages that match every field set.
type PeekFilter struct {
	// BodyContains: the body contains this text (case-sensitive bytes).
	BodyContains string
	// AttributeName: the message has a user attribute of this name;
	// with AttributeValue, one whose string value (String and Number
	// types) contains AttributeValue.
	AttributeName, AttributeValue string
	// MessageID: the message has this id.
	MessageID string
	// State: the message is in this state.
	State MessageState
}

// PeekRequest asks for one page of a queue's messages in the order they
// entered the queue (send order; a FIFO queue's sequence order).
type PeekRequest struct {
	// After is the Next of the previous page; "" starts at the oldest.
	After string
	// Limit is the most messages returned: 1..PeekMaxLimit.
	Limit  int
	Filter PeekFilter
	// MaxScan bounds how many messages the call examines (0:
	// PeekDefaultScan); a page may hold fewer than Limit matches, or none,
	// and still have a Next.
	MaxScan int
}

// PeekedMessage is a message as a peek shows it: no receipt handle, its
// state as of the call.
type PeekedMessage struct {
	// Ref names the message in its queue for PeekRefs, DeleteRefs and a
	// move task's Refs; opaque, the store's own, valid while the message
	// stays in the queue.
	Ref string
	// Message is the message (ReceiptHandle empty; History only from
	// PeekRefs, when the message has one).
	Message
	// MD5OfSysAttrs is the digest of the trace header, when there is one.
	MD5OfSysAttrs string
	State         MessageState
	// VisibleAt is when an in-flight or delayed message becomes visible;
	// zero for a visible one.
	VisibleAt time.Time
}

// PeekPage is one page of a Peek.
type PeekPage struct {
	Messages []PeekedMessage
	// Next continues after the last message examined; "" when the queue
	// has nothing further.
	Next string
	// Scanned is how many messages the call examined.
	Scanned int
}

// Peeker is the console's read path into a queue and what it does to
// messages it has found by looking (rather than by receiving them). Each
// fails with ErrQueueNotFound for a missing queue.
type Peeker interface {
	// Peek returns a page of the queue's messages; it changes nothing.
	Peek(ctx context.Context, account, name string, req PeekRequest) (PeekPage, error)
	// PeekRefs returns the messages refs name that are still in the
	// queue, in the order of refs, each with its History when it has one;
	// it changes nothing. An unknown or malformed ref is left out.
	PeekRefs(ctx context.Context, account, name string, refs []string) ([]PeekedMessage, error)
	// DeleteRefs deletes the messages refs name, whatever their state (an
	// in-flight message's handles stop working), each as a delete by its
	// receipt handle would; it returns how many it deleted (an unknown
	// ref deletes nothing). It returns once durable.
	DeleteRefs(ctx context.Context, account, name string, refs []string) (int, error)
}
