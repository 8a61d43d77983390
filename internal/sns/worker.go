package sns

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// A worker delivers one subscription's queued messages: it receives (long
// poll), delivers, deletes on success, and on failure makes the message
// visible again after the delivery policy's next delay. The engine counts
// receives, so a message's receive count is its attempt number, and its
// timers bring retries back on the service's clock, across restarts.
type worker struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Worker timing.
const (
	workerPoll      = 20 * time.Second // long poll of a delivery queue
	workerBatch     = 10
	workerErrorWait = time.Second // pause after an unexpected engine error
	// redriveTries is how often a worker tries a dead-letter queue that
	// fails for another reason than being gone, a second apart.
	redriveTries = 3
)

// startWorker starts sub's worker unless it runs already.
func (s *Service) startWorker(sub *subscription) {
	s.mu.Lock()
	if _, ok := s.workers[sub.ARN]; ok || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	w := &worker{cancel: cancel, done: make(chan struct{})}
	s.workers[sub.ARN] = w
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer close(w.done)
		s.runWorker(ctx, sub.ARN, sub.Queue)
	}()
}

// stopWorker stops sub's worker and waits for it. The caller must not
// hold mu.
func (s *Service) stopWorker(arn string) {
	s.mu.Lock()
	w := s.workers[arn]
	delete(s.workers, arn)
	s.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// sleep waits d on the service's clock; false if ctx ended first.
func (s *Service) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	ch := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// throttle spaces deliveries at most perSecond apart.
type throttle struct {
	mu   sync.Mutex
	next time.Time
}

// wait blocks until the next delivery may start.
func (th *throttle) wait(ctx context.Context, s *Service, perSecond int) bool {
	if perSecond <= 0 {
		return true
	}
	gap := time.Second / time.Duration(perSecond)
	th.mu.Lock()
	now := s.clock.Now()
	at := th.next
	if at.Before(now) {
		at = now
	}
	th.next = at.Add(gap)
	th.mu.Unlock()
	return s.sleep(ctx, at.Sub(now))
}

// runWorker keeps up to workerBatch deliveries of the subscription in
// flight: a slow endpoint gets several at once, as SNS sends them, and
// never holds up other subscriptions, which have workers of their own.
func (s *Service) runWorker(ctx context.Context, subARN, queue string) {
	vis := deliveryVisibility
	th := &throttle{}
	slots := make(chan struct{}, workerBatch)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < workerBatch {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		msgs, err := s.backend.Receive(ctx, DeliveryAccount, queue, engine.ReceiveRequest{Max: n, Wait: workerPoll, Visibility: &vis})
		for range n - len(msgs) {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, engine.ErrClosed) {
				return
			}
			if errors.Is(err, engine.ErrQueueNotFound) {
				sub := s.liveSubscription(subARN)
				if sub == nil || sub.Queue != queue {
					return
				}
				if err = s.ensureQueue(ctx, sub); err == nil {
					continue
				}
			}
			s.log.Warn("sns: receive deliveries", "subscription", subARN, "err", err)
			s.sleep(ctx, workerErrorWait)
			continue
		}
		for i := range msgs {
			inflight.Add(1)
			go func() {
				defer func() { <-slots; inflight.Done() }()
				s.handle(ctx, subARN, queue, &msgs[i], th)
			}()
		}
	}
}

// quietDeliveryError reports errors of a delivery's bookkeeping not worth a
// line each: the queue went with its subscription, or the disk is full
// (the store logs that once; the message is delivered again once its
// visibility runs out: at least once).
func quietDeliveryError(err error) bool {
	return errors.Is(err, engine.ErrQueueNotFound) || errors.Is(err, engine.ErrStoreFull)
}

// liveSubscription is the subscription as it is now; nil once it is gone.
func (s *Service) liveSubscription(arn string) *subscription {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub := s.subs[arn]
	if sub == nil || sub.Deleted {
		return nil
	}
	return sub
}

// outcome is how one delivery attempt went.
type outcome int

const (
	delivered outcome = iota
	retryable         // server-side: try again per the policy
	permanent         // client-side: no retry
)

// handle makes one delivery attempt of a queued message.
func (s *Service) handle(ctx context.Context, subARN, queue string, msg *engine.Message, th *throttle) {
	done := func() {
		if _, err := s.backend.Delete(context.WithoutCancel(ctx), DeliveryAccount, queue, []string{msg.ReceiptHandle}); err != nil && !quietDeliveryError(err) {
			s.log.Warn("sns: delete delivered message", "subscription", subARN, "err", err)
		}
	}
	later := func(d time.Duration) {
		ch := []engine.VisibilityChange{{ReceiptHandle: msg.ReceiptHandle, Timeout: d}}
		if _, err := s.backend.ChangeVisibility(context.WithoutCancel(ctx), DeliveryAccount, queue, ch); err != nil && !quietDeliveryError(err) {
			s.log.Warn("sns: schedule retry", "subscription", subARN, "err", err)
		}
	}
	var j job
	if err := json.Unmarshal([]byte(msg.Body), &j); err != nil {
		s.log.Error("sns: unreadable delivery dropped", "subscription", subARN, "err", err)
		done()
		return
	}
	sub := s.liveSubscription(subARN)
	if sub == nil {
		done()
		return
	}
	s.mu.RLock()
	t := s.topics[sub.TopicARN]
	s.mu.RUnlock()
	if t == nil {
		done()
		return
	}
	notification := j.Type == TypeNotification
	if !notification && !sub.Pending {
		done() // confirmed meanwhile: the confirmation is moot
		return
	}
	isHTTP := sub.Protocol == protoHTTP || sub.Protocol == protoHTTPS
	policy := customerManaged
	if isHTTP {
		d := s.deliveryPolicy(sub)
		policy = d.retry
		if !th.wait(ctx, s, d.maxPerSecond) {
			return // stopping: the message comes back after a restart
		}
	}
	handoff := s.clock.Now()
	ar := s.attempt(ctx, t, sub, &j)
	res := ar.outcome
	if ctx.Err() != nil && res != delivered {
		return // stopping: not an endpoint failure
	}
	if notification && t.logsFor(sub.Protocol) {
		s.logAttempt(t, sub, &attemptStatus{messageID: j.MessageID, text: j.Message, published: j.Timestamp, handoff: handoff,
			attempts: msg.ReceiveCount, success: res == delivered, status: ar.status, response: ar.answer})
	}
	if res == delivered {
		if notification {
			s.count(sub, cDelivered, 1)
		}
		done()
		return
	}
	// Failures are counted once the retry is scheduled, so that a count
	// tells the retry's timer is set.
	if notification && isHTTP {
		defer s.count(sub, cFailed, 1)
	}
	if res == retryable && msg.ReceiveCount <= policy.Retries {
		later(policy.delay(msg.ReceiveCount, s.jitter))
		return
	}
	if !notification {
		s.log.Warn("sns: confirmation not delivered", "subscription", sub.ARN, "endpoint", maskEndpoint(sub.Endpoint))
		done()
		return
	}
	if !isHTTP {
		s.count(sub, cFailed, 1)
	}
	nm, err := s.deadLetterCopy(t, sub, &j)
	if err != nil {
		s.log.Error("sns: build dead-letter copy", "subscription", sub.ARN, "err", err)
		done()
		return
	}
	if s.redrive(ctx, sub, []engine.NewMessage{nm}, redriveTries) {
		done()
	}
}
