package sqs

import (
	"context"
	"reflect"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/protocol"
)

// ParseQueueURL reads the account, name and region (each "" when the URL
// names none) of a queue URL, as SQS reads QueueUrl.
func ParseQueueURL(url string) (account, name, region string, ok bool) {
	account, name, region, ok = parseQueueRef(url)
	return account, name, region, ok && validAnyQueueName(name)
}

// withFaults wraps every action so that the fault rules of set decide,
// before it runs, whether it waits or fails: one wrapper for all actions,
// which every protocol's request passes through.
func (s *service) withFaults(set *faults.Set, actions []protocol.Action) {
	for i := range actions {
		a := &actions[i]
		// The member naming the action's queue, found once per action.
		urlField, nameField := fieldIndex(a.InputType, "QueueUrl"), fieldIndex(a.InputType, "QueueName")
		name, handle := a.Name, a.Handle
		a.Handle = func(ctx context.Context, in any) (any, error) {
			if !set.Active() {
				return handle(ctx, in)
			}
			ev := faults.SQSEvent{Action: name, Account: s.accountOf(ctx), Region: s.regionOf(ctx)}
			v := reflect.ValueOf(in).Elem()
			switch {
			case urlField != nil:
				s.faultQueue(ctx, &ev, v.FieldByIndex(urlField).String())
			case nameField != nil:
				ev.Queue = v.FieldByIndex(nameField).String()
			}
			f := set.SQS(ev)
			if f.Delay > 0 && !clock.Sleep(ctx, s.clock, f.Delay) {
				// The client left, or the server is stopping.
				return nil, protocol.ErrServiceUnavailable
			}
			if f.Error != "" {
				if e, ok := ErrorByCode(f.Error); ok {
					if e.Message != "" {
						return nil, e // AWS's own wording, in each protocol's
					}
					return nil, e.WithMessage("Fault injected by Ferry (rule %s).", f.Rule)
				}
			}
			return handle(ctx, in)
		}
	}
}

// faultQueue names in ev the queue queueURL designates, as parseTarget
// reads it, without touching the queue.
func (s *service) faultQueue(ctx context.Context, ev *faults.SQSEvent, queueURL string) {
	if queueURL == "" {
		_, queueURL, _ = requestInfo(ctx)
	}
	account, name, reg, ok := parseQueueRef(queueURL)
	if !ok {
		return
	}
	ev.Queue = name
	if account != "" {
		ev.Account = account
	}
	if reg != "" {
		ev.Region = reg
	}
}

// fieldIndex is the index of t's string field name; nil when it has none.
func fieldIndex(t reflect.Type, name string) []int {
	f, ok := t.FieldByName(name)
	if !ok || f.Type.Kind() != reflect.String {
		return nil
	}
	return f.Index
}
