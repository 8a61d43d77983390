package sns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
)

// fanoutWorkers bounds the subscriptions one publish serves at once. SQS
// copies are engine writes that share the store's group commit, so a small
// pool keeps a publish to many subscriptions fast without a goroutine per
// subscription.
const fanoutWorkers = 16

// certURL is where subscribers fetch the signing certificate.
func (s *Service) certURL() string { return s.baseURL + "/" + s.signer.CertFileName() }

// notification is m's envelope for one subscription.
func (s *Service) notification(t *topic, m *message, text, subARN string) (*Notification, error) {
	n := &Notification{
		MessageID:         m.id,
		SequenceNumber:    m.sequence,
		TopicARN:          t.ARN,
		Subject:           m.subject,
		Message:           text,
		Timestamp:         m.timestamp,
		SignatureVersion:  t.signatureVersion(),
		SigningCertURL:    s.certURL(),
		UnsubscribeURL:    s.unsubscribeURL(subARN),
		MessageAttributes: m.deliveredAttrs(),
	}
	if t.FIFO {
		return n, nil
	}
	// The signature covers no per-subscription field: sign each text once.
	m.sigMu.Lock()
	defer m.sigMu.Unlock()
	key := n.SignatureVersion + "\x00" + text
	if sig, ok := m.sigs[key]; ok {
		n.Signature = sig
		return n, nil
	}
	if err := n.Sign(s.signer); err != nil {
		return nil, err
	}
	if m.sigs == nil {
		m.sigs = map[string]string{}
	}
	m.sigs[key] = n.Signature
	return n, nil
}

// fanout hands the messages to every confirmed subscription of t whose
// filter lets them through, and returns once each copy is durable: SQS
// copies are in their queues, HTTP/S and email copies in the
// subscriptions' delivery queues, the others recorded. It fails only on
// an unexpected engine error (a missing queue is the subscriber's
// problem, handled by its dead-letter queue).
func (s *Service) fanout(ctx context.Context, t *topic, msgs []*message) error {
	var subs []*subscription
	s.mu.RLock()
	for _, sub := range s.topicSubs[t.ARN] {
		if sub.active() {
			subs = append(subs, sub)
		}
	}
	s.mu.RUnlock()
	if len(subs) == 0 {
		return nil
	}
	// Once begun, a fan-out finishes even if the publisher goes away, so
	// that subscribers are not served by halves.
	ctx = context.WithoutCancel(ctx)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, fanoutWorkers)
	for _, sub := range subs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.deliverTo(ctx, t, sub, msgs); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("subscription %s: %w", sub.ARN, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// passes applies the subscription's filter policy, counting what it keeps
// back.
func (s *Service) passes(sub *subscription, m *message) bool {
	fp := sub.filter
	if fp == nil {
		return true
	}
	r := fp.Evaluate(m.textFor(sub.Protocol), m.attrs)
	if r == FilterPass {
		return true
	}
	s.countFiltered(sub, fp.Scope(), r)
	return false
}

func (s *Service) deliverTo(ctx context.Context, t *topic, sub *subscription, msgs []*message) error {
	var pass []*message
	for _, m := range msgs {
		if s.passes(sub, m) {
			pass = append(pass, m)
		}
	}
	if len(pass) == 0 {
		return nil
	}
	switch {
	case sub.Protocol == protoSQS:
		return s.deliverSQS(ctx, t, sub, pass)
	case sub.Queue != "":
		return s.enqueue(ctx, sub, pass)
	default:
		for _, m := range pass {
			if err := s.record(t, sub, m); err != nil {
				return err
			}
		}
		return nil
	}
}

// sqsCopy is the SQS message one subscription receives for m.
func (s *Service) sqsCopy(t *topic, sub *subscription, m *message, fifoQueue bool) (engine.NewMessage, error) {
	text := m.textFor(protoSQS)
	var nm engine.NewMessage
	if sub.raw() {
		attrs := m.attrList
		if m.structured() {
			attrs = nil
		}
		nm = rawSQSMessage(text, attrs)
	} else {
		n, err := s.notification(t, m, text, sub.ARN)
		if err != nil {
			return nm, err
		}
		body, err := n.JSON()
		if err != nil {
			return nm, err
		}
		nm = envelopeSQSMessage(body)
	}
	nm.MessageGroupID = m.groupID
	if fifoQueue {
		nm.DeduplicationID = m.dedupID
	}
	return nm, nil
}

// localQueue resolves an SQS queue ARN to a queue of this service's
// account and region; ok is false for any other.
func (s *Service) localQueue(ref queueRef) bool {
	return ref.account == s.account && ref.region == s.region
}

// deliverSQS writes the messages into the subscribed queue in one send.
// A missing queue, or a raw copy with more attributes than SQS carries, is
// a client-side error: no retry, the subscription's dead-letter queue if
// it has one.
func (s *Service) deliverSQS(ctx context.Context, t *topic, sub *subscription, msgs []*message) error {
	ref, _ := parseQueueARN(sub.Endpoint)
	fifoQueue := strings.HasSuffix(ref.name, ".fifo")
	logs := t.logsFor(protoSQS)
	var handoff time.Time
	if logs {
		handoff = s.clock.Now()
	}
	batch := make([]engine.NewMessage, 0, len(msgs))
	sent := msgs[:0:0] // the messages of batch, when logs need them
	var refused []engine.NewMessage
	for _, m := range msgs {
		nm, err := s.sqsCopy(t, sub, m, fifoQueue)
		if err != nil {
			return err
		}
		if n := len(nm.Attributes); sub.raw() && n > maxRawSQSAttrs {
			refused = append(refused, nm)
			if logs {
				s.logSQS(t, sub, m, handoff, 400, sqsRefusal("InvalidParameterValue",
					fmt.Sprintf("Number of message attributes [%d] exceeds the maximum allowed [%d].", n, maxRawSQSAttrs)))
			}
			continue
		}
		batch = append(batch, nm)
		if logs {
			sent = append(sent, m)
		}
	}
	if len(batch) > 0 {
		switch res, err := s.sendLocal(ctx, ref, batch); {
		case err == nil:
			s.count(sub, cDelivered, len(batch))
			for i, m := range sent {
				s.logSQS(t, sub, m, handoff, 200, sqsResponse(res[i].MessageID))
			}
		case errors.Is(err, engine.ErrQueueNotFound):
			refused = append(refused, batch...)
			for _, m := range sent {
				s.logSQS(t, sub, m, handoff, 400, sqsRefusal("AWS.SimpleQueueService.NonExistentQueue",
					"The specified queue does not exist or you do not have access to it."))
			}
		default:
			return err
		}
	}
	if len(refused) > 0 {
		s.count(sub, cFailed, len(refused))
		// A publish does not wait on a failing dead-letter queue.
		s.redrive(ctx, sub, refused, 1)
	}
	return nil
}

// logSQS logs the one attempt SNS makes to deliver m to an SQS queue.
func (s *Service) logSQS(t *topic, sub *subscription, m *message, handoff time.Time, status int, response string) {
	s.logAttempt(t, sub, &attemptStatus{messageID: m.id, text: m.textFor(protoSQS), published: m.timestamp,
		handoff: handoff, attempts: 1, success: status == 200, status: status, response: response})
}

// sendLocal sends to a queue of this account; a queue elsewhere cannot be
// reached and counts as missing. What it enqueues counts in the queue's
// SQS metrics, as AWS counts SNS deliveries as sends.
func (s *Service) sendLocal(ctx context.Context, ref queueRef, msgs []engine.NewMessage) ([]engine.SendResult, error) {
	if !s.localQueue(ref) {
		return nil, engine.ErrQueueNotFound
	}
	res, err := s.backend.Send(ctx, ref.account, ref.name, msgs)
	if err == nil {
		s.recordSent(ref.name, msgs, res)
	}
	return res, err
}

// recordSent counts messages SNS enqueued in a queue of the account: a
// FIFO duplicate as deduplicated, the others as sent, as SQS counts its
// own sends.
func (s *Service) recordSent(queue string, msgs []engine.NewMessage, res []engine.SendResult) {
	if s.metrics == nil {
		return
	}
	dim := metrics.Queue(queue)
	for i := range res {
		if res[i].Duplicate {
			s.metrics.Record(metrics.NamespaceSQS, metrics.DeduplicatedSentMessages, dim, 1)
			continue
		}
		s.metrics.Record(metrics.NamespaceSQS, metrics.MessagesSent, dim, 1)
		s.metrics.Record(metrics.NamespaceSQS, metrics.SentMessageSize, dim, float64(metrics.MessageSize(&msgs[i])))
	}
}

// redrive puts given-up messages, in the form the subscriber would have
// received them, into the subscription's dead-letter queue, or drops them
// when it has none. A missing queue drops them at once; another failure
// is tried again, a second apart, up to tries times. Messages that do not
// make it are counted as failed to redrive. It reports false when ctx
// ended first, the messages neither written nor dropped.
func (s *Service) redrive(ctx context.Context, sub *subscription, msgs []engine.NewMessage, tries int) bool {
	if sub.redrive == nil {
		return true
	}
	ref := *sub.redrive
	fifo := strings.HasSuffix(ref.name, ".fifo")
	for i := range msgs {
		if !fifo {
			msgs[i].DeduplicationID = ""
		}
	}
	for try := 1; ; try++ {
		_, err := s.sendLocal(ctx, ref, msgs)
		switch {
		case err == nil:
			s.count(sub, cRedriven, len(msgs))
			return true
		case ctx.Err() != nil:
			return false
		case errors.Is(err, engine.ErrQueueNotFound):
			s.log.Warn("sns: dead-letter queue is missing; messages dropped", "subscription", sub.ARN, "queue", ref.name, "messages", len(msgs))
		case try < tries && s.sleep(ctx, time.Second):
			continue
		default:
			s.log.Error("sns: write to dead-letter queue; messages dropped", "subscription", sub.ARN, "messages", len(msgs), "err", err)
		}
		if ctx.Err() != nil {
			return false
		}
		s.count(sub, cRedriveFailed, len(msgs))
		return true
	}
}

// job is a delivery waiting in a subscription's delivery queue. It holds
// what the subscriber gets; the envelope is built (and signed) when it is
// delivered, with the subscription's settings of that moment.
type job struct {
	Type       string                      `json:"type"`
	MessageID  string                      `json:"id"`
	Message    string                      `json:"message,omitempty"`
	Subject    string                      `json:"subject,omitempty"`
	Timestamp  time.Time                   `json:"ts"`
	Attributes map[string]MessageAttribute `json:"attrs,omitempty"`
	Sequence   string                      `json:"seq,omitempty"`
	Token      string                      `json:"token,omitempty"`
}

// enqueue writes the messages into the subscription's delivery queue.
func (s *Service) enqueue(ctx context.Context, sub *subscription, msgs []*message) error {
	batch := make([]engine.NewMessage, len(msgs))
	for i, m := range msgs {
		j := job{Type: TypeNotification, MessageID: m.id, Message: m.textFor(sub.Protocol), Subject: m.subject,
			Timestamp: m.timestamp, Attributes: m.deliveredAttrs(), Sequence: m.sequence}
		b, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("encode delivery: %w", err)
		}
		batch[i] = engine.NewMessage{Body: string(b), SenderID: snsSenderID}
	}
	return s.sendJobs(ctx, sub, batch)
}

// sendJobs writes to the delivery queue, recreating it if it went missing
// (a crash between storing a subscription and creating its queue).
func (s *Service) sendJobs(ctx context.Context, sub *subscription, batch []engine.NewMessage) error {
	_, err := s.backend.Send(ctx, DeliveryAccount, sub.Queue, batch)
	if errors.Is(err, engine.ErrQueueNotFound) {
		if err = s.ensureQueue(ctx, sub); err == nil {
			_, err = s.backend.Send(ctx, DeliveryAccount, sub.Queue, batch)
		}
	}
	return err
}

// enqueueConfirmation queues a SubscriptionConfirmation for a pending
// subscription.
func (s *Service) enqueueConfirmation(ctx context.Context, sub *subscription) error {
	j := job{Type: TypeSubscriptionConfirmation, MessageID: newID(), Timestamp: s.clock.Now().UTC(), Token: sub.Token}
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode confirmation: %w", err)
	}
	return s.sendJobs(ctx, sub, []engine.NewMessage{{Body: string(b), SenderID: snsSenderID}})
}

// Delivery queue settings: a message in delivery is invisible long enough
// for any attempt to end; retries set their own visibility.
const (
	deliveryVisibility = 2 * time.Minute
	deliveryRetention  = 14 * 24 * time.Hour
)

// ensureQueue creates the subscription's delivery queue if it is missing.
func (s *Service) ensureQueue(ctx context.Context, sub *subscription) error {
	now := s.clock.Now()
	_, _, err := s.backend.CreateQueue(ctx, engine.Queue{
		Account: DeliveryAccount,
		Name:    sub.Queue,
		ARN:     "arn:" + partitionOf(s.region) + ":sqs:" + s.region + ":" + DeliveryAccount + ":" + sub.Queue,
		Settings: engine.QueueSettings{
			VisibilityTimeout: deliveryVisibility,
			Retention:         deliveryRetention,
			MaximumSize:       4 * maxMessageBytes,
		},
		Created:  now,
		Modified: now,
	})
	if err != nil {
		return fmt.Errorf("create delivery queue %s: %w", sub.Queue, err)
	}
	return nil
}

// deleteQueue removes the subscription's delivery queue, if it has one.
func (s *Service) deleteQueue(ctx context.Context, sub *subscription) error {
	if sub.Queue == "" {
		return nil
	}
	if err := s.backend.DeleteQueue(ctx, DeliveryAccount, sub.Queue); err != nil && !errors.Is(err, engine.ErrQueueNotFound) {
		return fmt.Errorf("delete delivery queue %s: %w", sub.Queue, err)
	}
	return nil
}
