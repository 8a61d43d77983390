package sns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// fanoutWorkers bounds the goroutines that serve subscriptions of
// publishes besides the publishers themselves. They outlive a publish: a
// goroutine per subscription paid, on every publish, for starting and for
// growing its stack into the engine's write path. Copies for FIFO queues and
// delivery queues are engine writes that share the store's group commit,
// so copies written at once cost about one commit's wait; those for the
// account's standard queues are one write by the publisher (fanout).
const fanoutWorkers = 64

// signer returns the signing key and SigningCertURL, where subscribers
// fetch its certificate.
func (s *Service) signer() (*Signer, string, error) {
	k, err := s.keys.get()
	if err != nil {
		return nil, "", err
	}
	return k, s.baseURL + "/" + k.CertFileName(), nil
}

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
		UnsubscribeURL:    s.unsubscribeURL(subARN),
		MessageAttributes: m.deliveredAttrs(),
	}
	if t.FIFO {
		return n, nil
	}
	signer, certURL, err := s.signer()
	if err != nil {
		return nil, err
	}
	n.SigningCertURL = certURL
	// The signature covers no per-subscription field: sign each text once.
	m.sigMu.Lock()
	defer m.sigMu.Unlock()
	key := n.SignatureVersion + "\x00" + text
	if sig, ok := m.sigs[key]; ok {
		n.Signature = sig
		return n, nil
	}
	if err := n.Sign(signer); err != nil {
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
	subs := s.activeSubs(t)
	if len(subs) == 0 {
		return nil
	}
	// Once begun, a fan-out finishes even if the publisher goes away, so
	// that subscribers are not served by halves.
	f := &fan{ctx: context.WithoutCancel(ctx), t: t, msgs: msgs}
	// The publisher writes the copies for standard queues of this account
	// itself, all in one engine write: one commit and fsync instead of one
	// each. The others go to the workers; without joint copies the
	// publisher serves the first itself, and any the workers have no room
	// for.
	n := 0
	for i, sub := range subs {
		if jointSQS(sub) {
			subs[n], subs[i] = subs[i], subs[n]
			n++
		}
	}
	joint, rest := subs[:n], subs[n:]
	var own *subscription
	if len(joint) == 0 {
		own, rest = rest[0], rest[1:]
	}
	for _, sub := range rest {
		if !s.handOff(f, sub) {
			f.serve(s, sub)
		}
	}
	if own != nil {
		f.serve(s, own)
	} else if err := s.deliverJointSQS(f.ctx, t, joint, msgs); err != nil {
		f.fail(err)
	}
	f.wg.Wait()
	return errors.Join(f.errs...)
}

// activeSubs are the confirmed subscriptions of t.
func (s *Service) activeSubs(t *topic) []*subscription {
	s.mu.RLock()
	defer s.mu.RUnlock()
	all := s.topicSubs[t.ARN]
	if len(all) == 0 {
		return nil
	}
	subs := make([]*subscription, 0, len(all))
	for _, sub := range all {
		if sub.active() {
			subs = append(subs, sub)
		}
	}
	return subs
}

// fan is one fan-out under way.
type fan struct {
	ctx  context.Context
	t    *topic
	msgs []*message
	wg   sync.WaitGroup // the subscriptions handed to workers
	mu   sync.Mutex
	errs []error
}

// serve delivers the fan-out's messages to one subscription.
func (f *fan) serve(s *Service, sub *subscription) {
	if err := s.deliverTo(f.ctx, f.t, sub, f.msgs); err != nil {
		f.fail(fmt.Errorf("subscription %s: %w", sub.ARN, err))
	}
}

func (f *fan) fail(err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
}

// fanJob is one subscription's part of a fan-out, for a worker.
type fanJob struct {
	f   *fan
	sub *subscription
}

// handOff gives sub's part of f to an idle fan-out worker, or to a new
// one while there are fewer than fanoutWorkers. It reports false when all
// are busy: the caller serves sub itself.
func (s *Service) handOff(f *fan, sub *subscription) bool {
	f.wg.Add(1)
	j := fanJob{f: f, sub: sub}
	select {
	case s.fanq <- j:
		return true
	default:
	}
	if s.fanWorkers.Add(1) > fanoutWorkers {
		s.fanWorkers.Add(-1)
		f.wg.Done()
		return false
	}
	go s.fanWorker(j)
	return true
}

// fanWorker serves fan-out jobs until the service closes. Close does not
// wait for it: the job in hand has a publisher waiting on it.
func (s *Service) fanWorker(j fanJob) {
	defer s.fanWorkers.Add(-1)
	for {
		j.f.serve(s, j.sub)
		j.f.wg.Done()
		j = fanJob{} // an idle worker keeps nothing of the publish it served
		select {
		case j = <-s.fanq:
		case <-s.ctx.Done():
			return
		}
	}
}

// passes applies the subscription's filter policy, counting what it keeps
// back.
func (s *Service) passes(sub *subscription, m *message) bool {
	fp := sub.filter
	if fp == nil {
		return true
	}
	r := fp.Evaluate(m.textFor(sub.Protocol), m.attrs)
	if r == filterpolicy.Pass {
		return true
	}
	s.countFiltered(sub, fp.Scope(), r)
	return false
}

// passing are the messages sub's filter policy lets through: msgs itself
// when it lets all through (it is only read).
func (s *Service) passing(sub *subscription, msgs []*message) []*message {
	var pass []*message // nil while every message passed
	for i, m := range msgs {
		switch {
		case !s.passes(sub, m):
			if pass == nil {
				pass = append(make([]*message, 0, len(msgs)-1), msgs[:i]...)
			}
		case pass != nil:
			pass = append(pass, m)
		}
	}
	if pass == nil {
		return msgs
	}
	return pass
}

func (s *Service) deliverTo(ctx context.Context, t *topic, sub *subscription, msgs []*message) error {
	pass := s.passing(sub, msgs)
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

// sqsCopy is the SQS message one subscription receives for m. err is
// SQS's refusal of it (see refusal), or a failure to build the envelope.
func (s *Service) sqsCopy(t *topic, sub *subscription, m *message) (nm engine.NewMessage, err error) {
	if sub.raw() {
		nm, err = s.rawSQS(m)
	} else {
		n, nerr := s.notification(t, m, m.textFor(protoSQS), sub.ARN)
		if nerr != nil {
			return nm, nerr
		}
		body, jerr := n.JSON()
		if jerr != nil {
			return nm, jerr
		}
		nm, err = s.sqs.Message(string(body), nil, snsSenderID)
	}
	// SQS drops the deduplication id for a standard queue.
	nm.MessageGroupID, nm.DeduplicationID = m.groupID, m.dedupID
	return nm, err
}

// rawSQS is the SQS message every raw SQS copy of m is, and SQS's refusal
// of it, built (digests included) once for all of them; the copies share
// its attribute list, which nobody modifies.
func (s *Service) rawSQS(m *message) (engine.NewMessage, error) {
	m.rawOnce.Do(func() {
		attrs := m.attrList
		if m.structured() {
			attrs = nil
		}
		m.raw, m.rawRefused = s.sqs.Message(m.textFor(protoSQS), attrs, snsSenderID)
	})
	return m.raw, m.rawRefused
}

// refusal is err as SQS's refusal of a message, a client-side error that
// SNS does not retry; nil for any other error.
func refusal(err error) *protocol.Error {
	if err == nil {
		return nil // before perr, which As moves to the heap
	}
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return nil
}

// jointSQS reports whether sub's copies go into a standard queue, which
// deliverJointSQS writes together with others. FIFO queues keep a send of
// their own: the engine writes each under its queue's deduplication, and
// apart they share fsyncs through group commit instead of waiting on one
// another.
func jointSQS(sub *subscription) bool {
	return sub.Protocol == protoSQS && !fifoQueue(sub.Endpoint)
}

// sqsDelivery is one subscription's copies of a fan-out for its queue.
type sqsDelivery struct {
	sub     *subscription
	logs    bool
	handoff time.Time
	batch   []engine.NewMessage // to send
	sent    []*message          // the messages of batch, when logs need them
	refused []engine.NewMessage // refused before the send
}

// deliverSQS writes the messages into the subscribed queue in one send.
// A missing queue, or a copy SQS refuses, is a client-side error: no
// retry, the subscription's dead-letter queue if it has one.
func (s *Service) deliverSQS(ctx context.Context, t *topic, sub *subscription, msgs []*message) error {
	d, err := s.sqsDelivery(t, sub, msgs)
	if err != nil {
		return err
	}
	var res []engine.SendResult
	if len(d.batch) > 0 {
		res, err = s.sqs.Send(ctx, sub.Endpoint, d.batch)
	}
	return s.settleSQS(ctx, t, d, res, err)
}

// deliverJointSQS is deliverSQS for several subscriptions whose queues
// (standard: jointSQS) take their copies in one engine write.
func (s *Service) deliverJointSQS(ctx context.Context, t *topic, subs []*subscription, msgs []*message) error {
	ds := make([]*sqsDelivery, 0, len(subs))
	queues := make([]string, 0, len(subs))
	batches := make([][]engine.NewMessage, 0, len(subs))
	var errs []error
	for _, sub := range subs {
		pass := s.passing(sub, msgs)
		if len(pass) == 0 {
			continue
		}
		d, err := s.sqsDelivery(t, sub, pass)
		if err != nil {
			errs = append(errs, fmt.Errorf("subscription %s: %w", sub.ARN, err))
			continue
		}
		ds = append(ds, d)
		queues = append(queues, sub.Endpoint)
		batches = append(batches, d.batch)
	}
	if len(ds) == 0 {
		return errors.Join(errs...)
	}
	outs, err := s.sqs.SendMany(ctx, queues, batches)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i, d := range ds {
		o := &outs[i]
		if err := s.settleSQS(ctx, t, d, o.Results, o.Err); err != nil {
			errs = append(errs, fmt.Errorf("subscription %s: %w", d.sub.ARN, err))
		}
	}
	return errors.Join(errs...)
}

// sqsDelivery makes sub's copies of msgs, setting aside (and logging)
// those SQS refuses.
func (s *Service) sqsDelivery(t *topic, sub *subscription, msgs []*message) (*sqsDelivery, error) {
	d := &sqsDelivery{sub: sub, logs: t.logsFor(protoSQS)}
	if d.logs {
		d.handoff = s.clock.Now()
	}
	d.batch = make([]engine.NewMessage, 0, len(msgs))
	for _, m := range msgs {
		nm, err := s.sqsCopy(t, sub, m)
		if perr := refusal(err); perr != nil {
			d.refused = append(d.refused, nm)
			if d.logs {
				s.logSQS(t, sub, m, d.handoff, 400, sqsRefusal(perr))
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		d.batch = append(d.batch, nm)
		if d.logs {
			d.sent = append(d.sent, m)
		}
	}
	return d, nil
}

// settleSQS counts and logs the outcome of d's send (res, err; neither
// when its batch was empty) and hands what the queue did not take to the
// dead-letter queue. Only an unexpected engine error is returned.
func (s *Service) settleSQS(ctx context.Context, t *topic, d *sqsDelivery, res []engine.SendResult, err error) error {
	sub, refused := d.sub, d.refused
	if len(d.batch) > 0 {
		switch perr := refusal(err); {
		case err == nil:
			s.count(sub, cDelivered, len(d.batch))
			for i, m := range d.sent {
				s.logSQS(t, sub, m, d.handoff, 200, sqsResponse(res[i].MessageID))
			}
		case perr != nil:
			refused = append(refused, d.batch...)
			for _, m := range d.sent {
				s.logSQS(t, sub, m, d.handoff, 400, sqsRefusal(perr))
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

// redrive puts given-up messages, in the form the subscriber would have
// received them, into the subscription's dead-letter queue, or drops them
// when it has none. A queue SQS refuses them for (a missing one) drops
// them at once; another failure is tried again, a second apart, up to
// tries times. Messages that do not make it are counted as failed to
// redrive. It reports false when ctx ended first, the messages neither
// written nor dropped.
func (s *Service) redrive(ctx context.Context, sub *subscription, msgs []engine.NewMessage, tries int) bool {
	if sub.redrive == "" {
		return true
	}
	for try := 1; ; try++ {
		_, err := s.sqs.Send(ctx, sub.redrive, msgs)
		switch {
		case err == nil:
			s.count(sub, cRedriven, len(msgs))
			return true
		case ctx.Err() != nil:
			return false
		case refusal(err) != nil:
			s.log.Warn("sns: dead-letter queue is missing; messages dropped", "subscription", sub.ARN, "queue", sub.redrive, "messages", len(msgs), "err", err)
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
		ARN:     "arn:" + arn.Partition(s.region) + ":sqs:" + s.region + ":" + DeliveryAccount + ":" + sub.Queue,
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
