package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// SNS delivers to SQS queues, Lambda, Firehose, SMS and mobile push at
// once, in the publish. Only a fault rule (internal/faults) fails such a
// delivery server-side; its retries then ride on a retry queue of the
// subscription, named in the subscription's record when first needed (so
// that every node serves it and a subscription made again gets a new
// one), which the worker of the delivery queues drains: each retry on the
// protocol's policy (atOncePolicy), on the service's clock, across
// restarts, and given up into the subscription's dead-letter queue.
//
// A FIFO topic's retry queue is a FIFO queue grouped as the topic's
// messages are, and once a subscription has one, every later delivery of
// the subscription goes through it (QueueBehind), behind what its group still
// retries, as SNS holds a group's later messages back.

// fifoSuffix ends the names of FIFO queues.
const fifoSuffix = ".fifo"

// RetryQueueName names a new retry queue of the at-once subscription
// subARN; fifo for a FIFO topic's.
func RetryQueueName(subARN string, fifo bool) string {
	if fifo {
		return NewQueueName(subARN) + fifoSuffix
	}
	return NewQueueName(subARN)
}

// FIFOQueue reports whether a queue, named by its name or its ARN, is a
// FIFO queue: SQS's names of FIFO queues end in .fifo, as do those of
// FIFO retry queues.
func FIFOQueue(queue string) bool { return strings.HasSuffix(queue, fifoSuffix) }

// Retry puts m, whose first attempt to the at-once subscription sub a
// fault failed server-side (f, handed off at began), into the
// subscription's retry queue, sub.Queue. group and dedup are the message's
// FIFO ids.
func (d *Service) Retry(ctx context.Context, sub *Subscription, m *Message, group, dedup string, f Faulted, began time.Time) error {
	p := atOncePolicy(sub.Protocol)
	nm, err := retryJob(sub, m, group, dedup, 1)
	if err != nil {
		return err
	}
	if wait := p.delay(1, d.jitter); wait > 0 {
		nm.Delay = &wait
	}
	if d.history {
		nm.History = &engine.MessageHistory{Events: []engine.HistoryEvent{*attemptEvent(sub, p, 1, began, d.clock.Now(), f.result())}}
	}
	if err := d.sendJobs(ctx, sub, []engine.NewMessage{nm}); err != nil {
		return fmt.Errorf("schedule retry: %w", err)
	}
	d.subs.Failed(sub.ARN, Failure{At: d.clock.Now(), Status: f.Status, Error: f.Answer, Endpoint: MaskEndpoint(sub.Endpoint), Retry: true})
	return nil
}

// QueueBehind puts m, not yet attempted, into the FIFO retry queue of the
// at-once subscription sub, behind the messages of its group there.
func (d *Service) QueueBehind(ctx context.Context, sub *Subscription, m *Message, group, dedup string) error {
	nm, err := retryJob(sub, m, group, dedup, 0)
	if err != nil {
		return err
	}
	if err := d.sendJobs(ctx, sub, []engine.NewMessage{nm}); err != nil {
		return fmt.Errorf("queue behind retries: %w", err)
	}
	return nil
}

// retryJob is m to the at-once subscription sub as its retry queue keeps
// it, tried attempts made.
func retryJob(sub *Subscription, m *Message, group, dedup string, tried int) (engine.NewMessage, error) {
	j := newJob(sub, m)
	j.Group, j.Dedup, j.Tried = group, dedup, tried
	b, err := json.Marshal(j)
	if err != nil {
		return engine.NewMessage{}, fmt.Errorf("encode retry: %w", err)
	}
	nm := engine.NewMessage{Body: string(b), SenderID: SenderID}
	if FIFOQueue(sub.Queue) {
		// The retry queue's own ids: the group orders, the message id
		// is unique to the publish.
		nm.MessageGroupID, nm.DeduplicationID = group, m.ID
	}
	return nm, nil
}

// attemptAtOnce is attempt n of job j to the at-once subscription sub:
// the fault rules decide as for the first (Fault), and what they let
// through is delivered as a publish delivers it.
func (d *Service) attemptAtOnce(ctx context.Context, t *Topic, sub *Subscription, j *job, n int) attemptResult {
	f := d.faultAtOnce(sub, j.MessageID, n)
	if f.Refused || f.Retry {
		return f.result()
	}
	res := attemptResult{outcome: delivered, status: 200, answer: f.Answer}
	m := j.message()
	for range f.Copies {
		err := d.subs.Deliver(ctx, t, sub, m, j.Group, j.Dedup)
		if perr := Refusal(err); perr != nil {
			return attemptResult{outcome: permanent, status: 400, answer: perr.Error()}
		}
		if err != nil {
			return attemptResult{outcome: retryable, answer: err.Error()}
		}
	}
	return res
}
