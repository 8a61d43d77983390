package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
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

// Start starts the worker of a subscription's delivery queue (for an
// at-once subscription its retry queue, Retry) unless it runs already.
func (d *Service) Start(sub *Subscription) {
	d.bg.mu.Lock()
	if _, ok := d.bg.workers[sub.ARN]; ok || d.bg.ctx.Err() != nil {
		d.bg.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(d.bg.ctx)
	w := &worker{cancel: cancel, done: make(chan struct{})}
	d.bg.workers[sub.ARN] = w
	d.bg.wg.Add(1)
	d.bg.mu.Unlock()
	go func() {
		defer d.bg.wg.Done()
		defer close(w.done)
		d.runWorker(ctx, sub.ARN, sub.Queue)
		// A worker whose queue went leaves room for the next one.
		d.bg.mu.Lock()
		if d.bg.workers[sub.ARN] == w {
			delete(d.bg.workers, sub.ARN)
		}
		d.bg.mu.Unlock()
	}()
}

// Stop stops the subscription's worker, if it has one, and waits for it.
func (d *Service) Stop(subARN string) {
	d.bg.mu.Lock()
	w := d.bg.workers[subARN]
	delete(d.bg.workers, subARN)
	d.bg.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
	d.waits.endSubscription(subARN)
}

// throttle spaces deliveries at most perSecond apart.
type throttle struct {
	mu   sync.Mutex
	next time.Time
}

// wait blocks delivery wk until the next delivery may start.
func (th *throttle) wait(ctx context.Context, d *Service, perSecond int, wk waitKey) bool {
	if perSecond <= 0 {
		return true
	}
	gap := time.Second / time.Duration(perSecond)
	th.mu.Lock()
	now := d.clock.Now()
	at := th.next
	if at.Before(now) {
		at = now
	}
	th.next = at.Add(gap)
	th.mu.Unlock()
	return d.sleep(ctx, at.Sub(now), &wk)
}

// runWorker keeps up to workerBatch deliveries of the subscription in
// flight: a slow endpoint gets several at once, as SNS sends them, and
// never holds up other subscriptions, which have workers of their own.
func (d *Service) runWorker(ctx context.Context, subARN, queue string) {
	vis := queueVisibility
	th := &throttle{}
	slots := make(chan struct{}, workerBatch)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	// A retry that a step of a controlled clock made visible holds the
	// step until its attempt is over and the next retry scheduled: the
	// receive hands the hold over in holds (as does the end of a long
	// poll), each delivery keeps one, and the worker keeps holds until its
	// next poll waits (Receive releases them): on PostgreSQL that poll arms
	// the timer of a retry scheduled before it looked.
	var holds clock.Holds
	defer holds.Release()
	rctx := clock.WithHolds(ctx, &holds)
	// A FIFO queue's messages are taken one a receive, as their group's
	// next stays in the queue while one is in flight: a group's messages
	// are delivered one after the other, in order, the groups side by side.
	fifo := FIFOQueue(queue)
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		default:
			holds.Release() // deliveries in flight: they hold the step
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		n := 1
	more:
		for n < workerBatch && !fifo {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		msgs, err := d.backend.Receive(rctx, QueueAccount, queue, engine.ReceiveRequest{Max: n, Wait: workerPoll, Visibility: &vis, History: d.history})
		for range n - len(msgs) {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, engine.ErrClosed) {
				return
			}
			if errors.Is(err, engine.ErrQueueNotFound) {
				var sub Subscription
				ok := false
				if sub, ok, err = d.subs.Stored(ctx, subARN); err == nil {
					if !ok || sub.Queue != queue {
						return
					}
					if err = d.CreateQueue(ctx, queue); err == nil {
						continue
					}
				}
			}
			if !engine.Temporary(err) {
				d.log.Warn("sns: receive deliveries", "subscription", subARN, "err", err)
			}
			d.sleep(rctx, workerErrorWait, nil)
			continue
		}
		if len(msgs) > 0 && holds.Len() == 0 {
			// Messages taken without a step's hold (a receive outside a
			// move of the clock): a move that starts now waits for the
			// next poll to wait, with the timers of the retries set.
			holds.Add(clock.Hold(d.clock))
		}
		for i := range msgs {
			inflight.Add(1)
			mh := &clock.Holds{}
			mh.Add(clock.Hold(d.clock))
			go func() {
				defer func() { mh.Release(); <-slots; inflight.Done() }()
				d.handle(clock.WithHolds(ctx, mh), subARN, queue, &msgs[i], th)
			}()
		}
	}
}

// quietDeliveryError reports errors of a delivery's bookkeeping not worth a
// line each: the queue went with its subscription, or the store cannot
// write for a while (it logs that once; the message is delivered again
// once its visibility runs out: at least once).
func quietDeliveryError(err error) bool {
	return errors.Is(err, engine.ErrQueueNotFound) || engine.Temporary(err)
}

// outcome is how one delivery attempt went.
type outcome int

const (
	delivered outcome = iota
	retryable         // server-side: try again per the policy
	permanent         // client-side: no retry
)

// handle makes one delivery attempt of a queued message.
func (d *Service) handle(ctx context.Context, subARN, queue string, msg *engine.Message, th *throttle) {
	wk := waitKey{sub: subARN, msg: msg.MessageID}
	retrying := false // the retry's wait outlives this attempt
	defer func() {
		if !retrying {
			d.waits.end(wk)
		}
	}()
	done := func() {
		if _, err := d.backend.Delete(context.WithoutCancel(ctx), QueueAccount, queue, []string{msg.ReceiptHandle}); err != nil && !quietDeliveryError(err) {
			d.log.Warn("sns: delete delivered message", "subscription", subARN, "err", err)
		}
	}
	later := func(wait time.Duration, ev *engine.HistoryEvent) bool {
		ch := []engine.VisibilityChange{{ReceiptHandle: msg.ReceiptHandle, Timeout: wait, Event: ev}}
		_, err := d.backend.ChangeVisibility(context.WithoutCancel(ctx), QueueAccount, queue, ch)
		if err != nil && !quietDeliveryError(err) {
			d.log.Warn("sns: schedule retry", "subscription", subARN, "err", err)
		}
		return err == nil
	}
	var j job
	if err := json.Unmarshal([]byte(msg.Body), &j); err != nil {
		d.log.Error("sns: unreadable delivery dropped", "subscription", subARN, "err", err)
		done()
		return
	}
	sub, t, ok := d.subs.Live(subARN)
	if !ok {
		done()
		return
	}
	count := func(c Counter, n int) { d.subs.Count(subARN, c, n) }
	notification := j.Type == TypeNotification
	if !notification && !sub.Pending {
		done() // confirmed meanwhile: the confirmation is moot
		return
	}
	isHTTP := sub.Protocol == ProtoHTTP || sub.Protocol == ProtoHTTPS
	atOnce := !NeedsQueue(sub.Protocol)
	policy := customerManaged
	n := msg.ReceiveCount + j.Tried // the attempt
	if atOnce {
		policy = atOncePolicy(sub.Protocol)
	}
	if isHTTP {
		p := t.policyFor(sub.Policy)
		policy = p.retry
		if !th.wait(ctx, d, p.maxPerSecond, wk) {
			return // stopping: the message comes back after a restart
		}
	}
	handoff := d.clock.Now()
	var ar attemptResult
	if atOnce {
		ar = d.attemptAtOnce(ctx, t, &sub, &j, n)
	} else {
		ar = d.attemptFaulty(ctx, t, &sub, &j, n, &wk)
	}
	res := ar.outcome
	if ctx.Err() != nil && res != delivered {
		return // stopping: not an endpoint failure
	}
	// The attempt as the message's history tells it, if it failed.
	var ev *engine.HistoryEvent
	if d.history && res != delivered {
		ev = attemptEvent(&sub, policy, n, handoff, d.clock.Now(), ar)
	}
	// A recorded protocol's delivery logs itself (RecordNotification).
	if notification && t.LogsFor(sub.Protocol) && (!atOnce || res != delivered || sub.Protocol == ProtoSQS) {
		d.LogAttempt(t, &sub, &Attempt{MessageID: j.MessageID, Text: j.Message, Published: j.Timestamp, Handoff: handoff,
			Attempts: n, Success: res == delivered, Status: ar.status, Response: ar.answer})
	}
	if res == delivered {
		if notification {
			count(Delivered, 1)
		}
		done()
		return
	}
	// Failures are counted once the retry is scheduled, so that a count
	// tells the retry's timer is set; the retry's wait shows its time only
	// once the failure is counted, so that a wait not yet due tells both.
	failed := func() {
		if notification && isHTTP {
			count(Failed, 1)
		}
	}
	if notification {
		d.subs.Failed(subARN, Failure{At: d.clock.Now(), Status: ar.status, Error: ar.answer, Endpoint: MaskEndpoint(sub.Endpoint),
			Retry: res == retryable && n <= policy.Retries})
	}
	if res == retryable && n <= policy.Retries {
		wait := policy.delay(n, d.jitter)
		hold := d.waits.hold(wk)
		at := d.clock.Now().Add(wait)
		retrying = later(wait, ev)
		failed()
		if retrying {
			d.waits.until(wk, hold, at)
		}
		return
	}
	defer failed()
	if !notification {
		d.log.Warn("sns: confirmation not delivered", "subscription", sub.ARN, "endpoint", MaskEndpoint(sub.Endpoint))
		done()
		return
	}
	if !isHTTP {
		count(Failed, 1)
	}
	nm, err := d.deadLetterCopy(t, &sub, &j)
	if err != nil {
		d.log.Error("sns: build dead-letter copy", "subscription", sub.ARN, "err", err)
		done()
		return
	}
	if ev != nil && sub.DeadLetter != "" {
		nm.History = deadLetterStory(msg, ev, &sub)
	}
	if d.redrive(ctx, &sub, []engine.NewMessage{nm}, redriveTries, count, &wk) {
		done()
	}
}
