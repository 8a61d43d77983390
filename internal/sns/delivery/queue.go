package delivery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// QueueAccount is the engine account of the delivery queues. SQS serves
// one account only, so its clients never see them.
const QueueAccount = "sns-delivery"

// Delivery queue settings: a message in delivery is invisible long enough
// for any attempt to end; retries set their own visibility; a message is
// kept past the longest policy's retries (the AWS-managed, about 23 days),
// so that it ends delivered or given up, never expired.
const (
	queueVisibility = 2 * time.Minute
	queueRetention  = 30 * 24 * time.Hour
	// queueMaxSize is four times the largest message SNS publishes (256
	// KiB): room for any job.
	queueMaxSize = 1 << 20
)

// NeedsQueue reports whether deliveries of a protocol ride on a delivery
// queue: they can fail and be retried.
func NeedsQueue(protocol string) bool {
	switch protocol {
	case ProtoHTTP, ProtoHTTPS, ProtoEmail, ProtoEmailJSON:
		return true
	}
	return false
}

// NewQueueName names the delivery queue of the subscription subARN: its
// id and a random suffix, so that a restored subscription never waits for
// its old queue's name to be free again.
func NewQueueName(subARN string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return subARN[strings.LastIndexByte(subARN, ':')+1:] + "-" + hex.EncodeToString(b[:])
}

// job is a delivery waiting in a subscription's delivery queue. It holds
// what the subscriber gets; the envelope is built (and signed) when it is
// delivered, with the subscription's settings of that moment.
type job struct {
	Type       string                            `json:"type"`
	MessageID  string                            `json:"id"`
	Message    string                            `json:"message,omitempty"`
	Subject    string                            `json:"subject,omitempty"`
	Timestamp  time.Time                         `json:"ts"`
	Attributes map[string]filterpolicy.Attribute `json:"attrs,omitempty"`
	Sequence   string                            `json:"seq,omitempty"`
	Token      string                            `json:"token,omitempty"`
	// An at-once delivery's retry (Retry): its FIFO ids, and the attempts
	// made before it entered the queue.
	Group string `json:"group,omitempty"`
	Dedup string `json:"dedup,omitempty"`
	Tried int    `json:"tried,omitempty"`
}

// message turns a queued notification back into the message it was.
func (j *job) message() *Message {
	return &Message{ID: j.MessageID, Body: j.Message, Subject: j.Subject, Timestamp: j.Timestamp, Attributes: j.Attributes, Sequence: j.Sequence}
}

// newJob is the notification of m that sub receives.
func newJob(sub *Subscription, m *Message) job {
	return job{Type: TypeNotification, MessageID: m.ID, Message: m.TextFor(sub.Protocol), Subject: m.Subject,
		Timestamp: m.Timestamp, Attributes: m.Delivered(), Sequence: m.Sequence}
}

// Enqueue writes the messages into the subscription's delivery queue.
func (d *Service) Enqueue(ctx context.Context, sub *Subscription, msgs []*Message) error {
	batch := make([]engine.NewMessage, len(msgs))
	for i, m := range msgs {
		j := newJob(sub, m)
		b, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("encode delivery: %w", err)
		}
		batch[i] = engine.NewMessage{Body: string(b), SenderID: SenderID}
	}
	return d.sendJobs(ctx, sub, batch)
}

// Confirm queues a SubscriptionConfirmation for a pending subscription.
func (d *Service) Confirm(ctx context.Context, sub *Subscription) error {
	j := job{Type: TypeSubscriptionConfirmation, MessageID: uuid.NewString(), Timestamp: d.now(), Token: sub.Token}
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode confirmation: %w", err)
	}
	return d.sendJobs(ctx, sub, []engine.NewMessage{{Body: string(b), SenderID: SenderID}})
}

// sendJobs writes to the delivery queue, recreating it if it went missing
// (a crash between storing a subscription and creating its queue).
func (d *Service) sendJobs(ctx context.Context, sub *Subscription, batch []engine.NewMessage) error {
	_, err := d.backend.Send(ctx, QueueAccount, sub.Queue, batch)
	if errors.Is(err, engine.ErrQueueNotFound) {
		if err = d.CreateQueue(ctx, sub.Queue); err == nil {
			_, err = d.backend.Send(ctx, QueueAccount, sub.Queue, batch)
		}
	}
	return err
}

// CreateQueue creates a subscription's delivery queue if it is missing; a
// name with FIFO's suffix makes a FIFO queue.
func (d *Service) CreateQueue(ctx context.Context, queue string) error {
	now := d.clock.Now()
	_, _, err := d.backend.CreateQueue(ctx, engine.Queue{
		Account: QueueAccount,
		Name:    queue,
		ARN:     arn.ARN{Partition: arn.Partition(d.region), Service: "sqs", Region: d.region, Account: QueueAccount, Resource: queue}.String(),
		Settings: engine.QueueSettings{
			VisibilityTimeout: queueVisibility,
			Retention:         queueRetention,
			MaximumSize:       queueMaxSize,
			FIFO:              FIFOQueue(queue),
		},
		Created:  now,
		Modified: now,
	})
	if err != nil {
		return fmt.Errorf("create delivery queue %s: %w", queue, err)
	}
	return nil
}

// DeleteQueue removes a subscription's delivery queue; "" is none.
func (d *Service) DeleteQueue(ctx context.Context, queue string) error {
	if queue == "" {
		return nil
	}
	if err := d.backend.DeleteQueue(ctx, QueueAccount, queue); err != nil && !errors.Is(err, engine.ErrQueueNotFound) {
		return fmt.Errorf("delete delivery queue %s: %w", queue, err)
	}
	return nil
}

// Redrive puts given-up messages, in the form the subscriber would have
// received them, into the subscription's dead-letter queue, or drops them
// when it has none, and counts what became of them with count. A queue
// SQS refuses them for (a missing one) drops them at once; another
// failure is tried again, a second apart, up to tries times. It reports
// false when ctx ended first, the messages neither written nor dropped.
func (d *Service) Redrive(ctx context.Context, sub *Subscription, msgs []engine.NewMessage, tries int, count func(Counter, int)) bool {
	return d.redrive(ctx, sub, msgs, tries, count, nil)
}

// redrive is Redrive for the messages of delivery wk, if any, whose waits
// between tries it records.
func (d *Service) redrive(ctx context.Context, sub *Subscription, msgs []engine.NewMessage, tries int, count func(Counter, int), wk *waitKey) bool {
	if sub.DeadLetter == "" {
		return true
	}
	for try := 1; ; try++ {
		// The dead-letter queue's policy decides, as for the subscription's
		// own queue: a refusal is SQS's AccessDenied, not retried.
		allowed, err := d.sqs.MaySNSSend(ctx, sub.TopicARN, sub.DeadLetter)
		if err == nil && !allowed {
			d.log.Warn("sns: dead-letter queue's policy does not allow the topic; messages dropped", "subscription", sub.ARN, "queue", sub.DeadLetter, "messages", len(msgs))
			count(RedriveFailed, len(msgs))
			return true
		}
		if err == nil {
			_, err = d.sqs.Send(ctx, sub.DeadLetter, msgs)
		}
		switch {
		case err == nil:
			count(Redriven, len(msgs))
			return true
		case ctx.Err() != nil:
			return false
		case Refusal(err) != nil:
			d.log.Warn("sns: dead-letter queue is missing; messages dropped", "subscription", sub.ARN, "queue", sub.DeadLetter, "messages", len(msgs), "err", err)
		case try < tries && d.sleep(ctx, time.Second, wk):
			continue
		default:
			d.log.Error("sns: write to dead-letter queue; messages dropped", "subscription", sub.ARN, "messages", len(msgs), "err", err)
		}
		if ctx.Err() != nil {
			return false
		}
		count(RedriveFailed, len(msgs))
		return true
	}
}
