package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// SNS delivers to SQS queues, Lambda, Firehose, SMS and mobile push at
// once, in the publish. Only a fault rule (internal/faults) fails such a
// delivery server-side; its retries then ride on a retry queue of the
// subscription, made when first needed, which the worker of the HTTP/S
// delivery queues drains: each retry on the protocol's policy
// (atOncePolicy), on the service's clock, across restarts, and given up
// into the subscription's dead-letter queue.

// retryQueuePrefix starts the names of the retry queues.
const retryQueuePrefix = "retries-"

// RetryQueueName names the retry queue of the at-once subscription subARN.
func RetryQueueName(subARN string) string {
	return retryQueuePrefix + subARN[strings.LastIndexByte(subARN, ':')+1:]
}

// Retry puts m, whose first attempt to the at-once subscription sub a
// fault failed server-side (f, handed off at began), into the
// subscription's retry queue, and starts its worker. group and dedup are
// the message's FIFO ids.
func (d *Service) Retry(ctx context.Context, sub *Subscription, m *Message, group, dedup string, f Faulted, began time.Time) error {
	p := atOncePolicy(sub.Protocol)
	j := newJob(sub, m)
	j.Group, j.Dedup, j.Tried = group, dedup, 1
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode retry: %w", err)
	}
	wait := p.delay(1, d.jitter)
	nm := engine.NewMessage{Body: string(b), SenderID: SenderID, Delay: &wait}
	if d.history {
		nm.History = &engine.MessageHistory{Events: []engine.HistoryEvent{*attemptEvent(sub, p, 1, began, d.clock.Now(), f.result())}}
	}
	queue := RetryQueueName(sub.ARN)
	batch := []engine.NewMessage{nm}
	_, err = d.backend.Send(ctx, QueueAccount, queue, batch)
	if errors.Is(err, engine.ErrQueueNotFound) {
		if err = d.CreateQueue(ctx, queue); err == nil {
			_, err = d.backend.Send(ctx, QueueAccount, queue, batch)
		}
	}
	if err != nil {
		return fmt.Errorf("schedule retry: %w", err)
	}
	d.subs.Failed(sub.ARN, Failure{At: d.clock.Now(), Status: f.Status, Error: f.Answer, Endpoint: MaskEndpoint(sub.Endpoint), Retry: true})
	d.startWorker(sub.ARN, queue)
	return nil
}

// RetryQueues are the names of the retry queues the store keeps, for
// starting their workers (StartRetries).
func (d *Service) RetryQueues(ctx context.Context) (map[string]bool, error) {
	qs, err := d.backend.ListQueues(ctx, QueueAccount, retryQueuePrefix)
	if err != nil {
		return nil, fmt.Errorf("list retry queues: %w", err)
	}
	names := make(map[string]bool, len(qs))
	for _, q := range qs {
		names[q.Name] = true
	}
	return names, nil
}

// StartRetries starts the worker of an at-once subscription's retry
// queue unless it runs already.
func (d *Service) StartRetries(sub *Subscription) {
	d.startWorker(sub.ARN, RetryQueueName(sub.ARN))
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
