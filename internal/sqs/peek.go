package sqs

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/internal/engine"
)

// The console's way into a queue's messages: it finds them by looking
// (engine.Peeker) rather than by receiving them, and acts on what it
// found as the API acts on received messages: a delete counts as
// DeleteMessage's, a move of chosen messages is checked as
// StartMessageMoveTask checks a move.

// ErrNoPeeker: the store cannot peek (engine.Peeker).
var ErrNoPeeker = errors.New("this store cannot look at messages without receiving them")

// DeleteRefs deletes the messages refs name from owner's queue (the
// store's key, region.Owner) and counts them in the queue's metrics as
// DeleteMessage counts its deletes. It returns how many it deleted.
func (p *Port) DeleteRefs(ctx context.Context, owner, name string, refs []string) (int, error) {
	pk, ok := p.backend.(engine.Peeker)
	if !ok {
		return 0, ErrNoPeeker
	}
	n, err := pk.DeleteRefs(ctx, owner, name, refs)
	if err != nil {
		return n, fmt.Errorf("delete from %s: %w", name, err)
	}
	p.recordDeleted(owner, name, n)
	return n, nil
}

// moveRefsKey carries the refs of WithMoveRefs.
type moveRefsKey struct{}

// WithMoveRefs limits a StartMessageMoveTask run in-process with the
// returned context (protocol.Handler.Invoke) to the messages refs name
// (engine.MoveTask.Refs): the console's redrive of chosen messages, which
// the wire cannot ask for. The task is checked as any other.
func WithMoveRefs(ctx context.Context, refs []string) context.Context {
	return context.WithValue(ctx, moveRefsKey{}, refs)
}

func moveRefs(ctx context.Context) []string {
	refs, _ := ctx.Value(moveRefsKey{}).([]string)
	return refs
}

// SystemAttributes are the system attributes a receive asking for All
// would return with m, by SQS's names and in its formats (SentTimestamp
// in epoch milliseconds, ...), but for ApproximateFirstReceiveTimestamp
// while m has never been received.
func SystemAttributes(m *engine.Message) map[string]string {
	attrs := renderMessage(m, sysAll, attributeFilter{}).Attributes
	if m.FirstReceiveAt.IsZero() {
		delete(attrs, "ApproximateFirstReceiveTimestamp")
	}
	return attrs
}
