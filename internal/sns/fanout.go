package sns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// fanoutWorkers bounds the goroutines that serve subscriptions of
// publishes besides the publishers themselves. They outlive a publish: a
// goroutine per subscription paid, on every publish, for starting and for
// growing its stack into the engine's write path. Copies for FIFO queues and
// delivery queues are engine writes that share the store's group commit,
// so copies written at once cost about one commit's wait; those for
// standard queues are one write by the publisher (fanout).
const fanoutWorkers = 64

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
	// The publisher writes the copies for standard queues itself, all in
	// one engine write: one commit and fsync instead of one each. The others go to the workers; without joint copies the
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

// fanPool is the fan-out workers: q hands them subscriptions, n counts
// them, and they end with ctx.
type fanPool struct {
	q      chan fanJob
	n      atomic.Int32
	ctx    context.Context
	cancel context.CancelFunc
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
	case s.fan.q <- j:
		return true
	default:
	}
	if s.fan.n.Add(1) > fanoutWorkers {
		s.fan.n.Add(-1)
		f.wg.Done()
		return false
	}
	go s.fanWorker(j)
	return true
}

// fanWorker serves fan-out jobs until the service closes. Close does not
// wait for it: the job in hand has a publisher waiting on it.
func (s *Service) fanWorker(j fanJob) {
	defer s.fan.n.Add(-1)
	for {
		j.f.serve(s, j.sub)
		j.f.wg.Done()
		j = fanJob{} // an idle worker keeps nothing of the publish it served
		select {
		case j = <-s.fan.q:
		case <-s.fan.ctx.Done():
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
	r := fp.Evaluate(m.TextFor(sub.Protocol), m.Attributes)
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
	case sub.Protocol == delivery.ProtoSQS:
		return s.deliverSQS(ctx, t, sub, pass)
	case delivery.NeedsQueue(sub.Protocol):
		ms := make([]*delivery.Message, len(pass))
		for i, m := range pass {
			ms[i] = &m.Message
		}
		return s.delivery.Enqueue(ctx, sub.delivery(), ms)
	default:
		ds := sub.delivery()
		behind := behindRetries(t, sub)
		var rs []retry
		for _, m := range pass {
			if behind {
				rs = append(rs, retry{m: m})
				continue
			}
			f := delivery.Faulted{Copies: 1}
			if s.delivery.FaultsActive() {
				f = s.delivery.Fault(ds, m.ID)
			}
			if f.Retry {
				rs = append(rs, retry{m: m, f: &f, at: s.clock.Now()})
				behind = t.FIFO
				continue
			}
			if f.Refused {
				s.count(sub, cFailed, 1)
				sub.state.failed(delivery.Failure{At: s.clock.Now(), Status: f.Status, Error: f.Answer, Endpoint: delivery.MaskEndpoint(sub.Endpoint)})
				if err := s.delivery.GiveUp(ctx, t.delivery, ds, &m.Message, m.groupID, m.dedupID, func(c delivery.Counter, n int) { s.count(sub, deliveryCounters[c], n) }); err != nil {
					return err
				}
				continue
			}
			for range f.Copies {
				if err := s.delivery.RecordNotification(t.delivery, ds, &m.Message); err != nil {
					return err
				}
			}
			s.count(sub, cDelivered, 1)
		}
		return s.retry(ctx, t, sub, rs)
	}
}

// sqsCopy is the SQS message one subscription receives for m. err is
// SQS's refusal of it (delivery.Refusal), or a failure to build the
// envelope.
func (s *Service) sqsCopy(t *topic, sub *subscription, m *message) (nm engine.NewMessage, err error) {
	if sub.raw() {
		nm, err = s.rawSQS(m)
	} else {
		n, nerr := s.delivery.Notification(t.delivery, &m.Message, m.TextFor(delivery.ProtoSQS), sub.ARN)
		if nerr != nil {
			return nm, nerr
		}
		body, jerr := n.JSON()
		if jerr != nil {
			return nm, jerr
		}
		nm, err = s.sqs.Message(string(body), nil, delivery.SenderID)
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
		if m.Structured() {
			attrs = nil
		}
		m.raw, m.rawRefused = s.sqs.Message(m.TextFor(delivery.ProtoSQS), attrs, delivery.SenderID)
	})
	return m.raw, m.rawRefused
}

// jointSQS reports whether sub's copies go into a standard queue, which
// deliverJointSQS writes together with others. FIFO queues keep a send of
// their own: the engine writes each under its queue's deduplication, and
// apart they share fsyncs through group commit instead of waiting on one
// another.
func jointSQS(sub *subscription) bool {
	return sub.Protocol == delivery.ProtoSQS && !delivery.FIFOQueue(sub.Endpoint)
}

// sqsDelivery is one subscription's copies of a fan-out for its queue.
type sqsDelivery struct {
	sub     *subscription
	logs    bool
	handoff time.Time
	batch   []engine.NewMessage // to send
	sent    []*message          // the messages of batch, when logs need them
	refused []engine.NewMessage // refused before the send
	// status and why tell the latest refusal (delivery.Failure).
	status int
	why    string
	// Faults (internal/faults): copies lost, which SNS counts delivered,
	// and second copies, which it does not count.
	dropped, doubled int
	// retries go to the retry queue once the batch is sent, so that what
	// the batch holds of a FIFO group is in the queue before them.
	retries []retry
}

// deliverSQS writes the messages into the subscribed queue in one send.
// A missing queue, or a copy SQS refuses, is a client-side error: no
// retry, the subscription's dead-letter queue if it has one.
func (s *Service) deliverSQS(ctx context.Context, t *topic, sub *subscription, msgs []*message) error {
	d := &sqsDelivery{sub: sub}
	if err := s.sqsDelivery(ctx, t, d, msgs, make([]engine.NewMessage, 0, len(msgs))); err != nil {
		return err
	}
	var res []engine.SendResult
	var err error
	if len(d.batch) > 0 {
		res, err = s.sqs.Send(ctx, sub.Endpoint, d.batch)
	}
	return s.settleSQS(ctx, t, d, res, err)
}

// deliverJointSQS is deliverSQS for several subscriptions whose queues
// (standard: jointSQS) take their copies in one engine write.
func (s *Service) deliverJointSQS(ctx context.Context, t *topic, subs []*subscription, msgs []*message) error {
	// The deliveries and their copies are cut from one allocation each
	// for the whole fan-out, not two per subscription.
	ds := make([]sqsDelivery, 0, len(subs))
	copies := make([]engine.NewMessage, 0, len(subs)*len(msgs))
	queues := make([]string, 0, len(subs))
	batches := make([][]engine.NewMessage, 0, len(subs))
	var errs []error
	for _, sub := range subs {
		pass := s.passing(sub, msgs)
		if len(pass) == 0 {
			continue
		}
		ds = append(ds, sqsDelivery{sub: sub})
		d := &ds[len(ds)-1]
		n := len(copies)
		if err := s.sqsDelivery(ctx, t, d, pass, copies[n:n:n+len(pass)]); err != nil {
			ds = ds[:len(ds)-1]
			errs = append(errs, fmt.Errorf("subscription %s: %w", sub.ARN, err))
			continue
		}
		// Duplicates (internal/faults) may have moved the batch out of
		// copies, which then keeps no room for it.
		if len(d.batch) <= len(pass) {
			copies = copies[:n+len(d.batch)]
		}
		if len(d.batch) == 0 {
			// All refused or retried before the send: nothing for the
			// queue.
			if err := s.settleSQS(ctx, t, d, nil, nil); err != nil {
				errs = append(errs, fmt.Errorf("subscription %s: %w", sub.ARN, err))
			}
			ds = ds[:len(ds)-1]
			continue
		}
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
	for i := range ds {
		d, o := &ds[i], &outs[i]
		if err := s.settleSQS(ctx, t, d, o.Results, o.Err); err != nil {
			errs = append(errs, fmt.Errorf("subscription %s: %w", d.sub.ARN, err))
		}
	}
	return errors.Join(errs...)
}

// sqsDelivery makes d.sub's copies of msgs into d, its batch appended to
// buf (which has room for them all), setting aside (and logging) those
// SQS refuses.
func (s *Service) sqsDelivery(ctx context.Context, t *topic, d *sqsDelivery, msgs []*message, buf []engine.NewMessage) error {
	sub := d.sub
	d.logs = t.delivery.LogsFor(delivery.ProtoSQS)
	if d.logs {
		d.handoff = s.clock.Now()
	}
	allowed, err := s.mayDeliver(ctx, t.ARN, sub.Endpoint)
	if err != nil {
		return err
	}
	d.batch = buf
	faulty := s.delivery.FaultsActive()
	behind := behindRetries(t, sub)
	for _, m := range msgs {
		if behind {
			d.retries = append(d.retries, retry{m: m})
			continue
		}
		nm, err := s.sqsCopy(t, sub, m)
		if err == nil && !allowed {
			// The queue's owner has not let the topic in: no copy
			// reaches it, as SQS refuses SNS's send on AWS.
			err = errDeliveryDenied
		}
		if perr := delivery.Refusal(err); perr != nil {
			d.refused = append(d.refused, nm)
			d.status, d.why = 400, perr.Error()
			if d.logs {
				s.logSQS(t, sub, m, d.handoff, 400, delivery.SQSRefusal(perr))
			}
			continue
		}
		if err != nil {
			return err
		}
		f := delivery.Faulted{Copies: 1}
		if faulty {
			f = s.delivery.Fault(sub.delivery(), m.ID)
		}
		if f.Retry {
			// Its retries follow the clock, from the subscription's retry
			// queue.
			if d.logs {
				s.logSQS(t, sub, m, d.handoff, f.Status, f.Answer)
			}
			d.retries = append(d.retries, retry{m: m, f: &f, at: s.clock.Now()})
			behind = t.FIFO
			continue
		}
		if f.Refused {
			d.refused = append(d.refused, nm)
			d.status, d.why = f.Status, f.Answer
			if d.logs {
				s.logSQS(t, sub, m, d.handoff, f.Status, f.Answer)
			}
			continue
		}
		switch f.Copies {
		case 0:
			d.dropped++
		case 2:
			d.doubled++
		}
		for range f.Copies {
			d.batch = append(d.batch, nm)
			if d.logs {
				d.sent = append(d.sent, m)
			}
		}
	}
	return nil
}

// settleSQS counts and logs the outcome of d's send (res, err; neither
// when its batch was empty), hands what the queue did not take to the
// dead-letter queue and the retries to the retry queue. Only an
// unexpected engine error is returned.
func (s *Service) settleSQS(ctx context.Context, t *topic, d *sqsDelivery, res []engine.SendResult, err error) error {
	sub, refused := d.sub, d.refused
	if d.dropped > 0 {
		s.count(sub, cDelivered, d.dropped)
	}
	if len(d.batch) > 0 {
		switch perr := delivery.Refusal(err); {
		case err == nil:
			s.count(sub, cDelivered, len(d.batch)-d.doubled)
			for i, m := range d.sent {
				s.logSQS(t, sub, m, d.handoff, 200, delivery.SQSResponse(res[i].MessageID))
			}
		case perr != nil:
			refused = append(refused, d.batch...)
			d.status, d.why = 400, perr.Error()
			for _, m := range d.sent {
				s.logSQS(t, sub, m, d.handoff, 400, delivery.SQSRefusal(perr))
			}
		default:
			return err
		}
	}
	if len(refused) > 0 {
		s.count(sub, cFailed, len(refused))
		sub.state.failed(delivery.Failure{At: s.clock.Now(), Status: d.status, Error: d.why, Endpoint: sub.Endpoint})
		// A publish does not wait on a failing dead-letter queue.
		s.delivery.Redrive(ctx, sub.delivery(), refused, 1, func(c delivery.Counter, n int) { s.count(sub, deliveryCounters[c], n) })
	}
	return s.retry(ctx, t, sub, d.retries)
}

// logSQS logs the one attempt SNS makes to deliver m to an SQS queue.
func (s *Service) logSQS(t *topic, sub *subscription, m *message, handoff time.Time, status int, response string) {
	s.delivery.LogAttempt(t.delivery, sub.delivery(), &delivery.Attempt{MessageID: m.ID, Text: m.TextFor(delivery.ProtoSQS),
		Published: m.Timestamp, Handoff: handoff, Attempts: 1, Success: status == 200, Status: status, Response: response})
}
