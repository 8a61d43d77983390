package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func ptr[T any](v T) *T { return &v }

// scaleBody is a 256-byte body, unique within the run.
func scaleBody(run string, seq int64) string {
	head := run + "-" + strconv.FormatInt(seq, 10) + "-"
	return head + strings.Repeat("x", max(0, 256-len(head)))
}

// createQueues creates n queues of the run, Concurrency at a time, and
// returns their URLs in order. Nothing removes them: the store goes with
// the step.
func (s *scaleRun) createQueues(ctx context.Context, n int, prefix string) ([]string, error) {
	urls := make([]string, n)
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(n, s.cfg.Concurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				name := s.e.name(fmt.Sprintf("%s-%d", prefix, i))
				out, err := s.e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("CreateQueue %s: %w", name, err)
					}
					mu.Unlock()
					return
				}
				urls[i] = aws.ToString(out.QueueUrl)
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return urls, first
}

// traffic is the load of the queues and backlog axes: every client, in
// turn over the queues, sends a batch of 10, receives up to 10 (no wait)
// and deletes what it received, for Duration. It records the rate of
// deleted messages, the latency of every request and the broker's CPU per
// deleted message, and returns how many messages it sent and deleted.
func (s *scaleRun) traffic(ctx context.Context, urls []string) (sent, deleted int64) {
	var lat Latencies
	var requests, seq atomic.Int64
	var sentN, deletedN atomic.Int64
	cpu0, cpuErr := s.proc.cpu()
	c := s.cfg.Concurrency
	elapsed := s.e.loop(ctx, c, s.cfg.Duration, func(ctx context.Context, w int) bool {
		i := w
		return func() bool {
			url := aws.String(urls[i%len(urls)])
			i += c
			entries := make([]types.SendMessageBatchRequestEntry, 10)
			for k := range entries {
				entries[k] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String(scaleBody(s.e.run, seq.Add(1)))}
			}
			t := time.Now()
			out, err := s.e.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries})
			lat.Add(time.Since(t))
			requests.Add(1)
			if err != nil {
				s.e.fail(fmt.Errorf("SendMessageBatch: %w", err))
				return true
			}
			sentN.Add(int64(len(out.Successful)))
			if len(out.Failed) > 0 {
				s.e.fail(fmt.Errorf("SendMessageBatch: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Code)))
			}
			t = time.Now()
			rcv, err := s.e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
			lat.Add(time.Since(t))
			requests.Add(1)
			if err != nil {
				s.e.fail(fmt.Errorf("ReceiveMessage: %w", err))
				return true
			}
			if len(rcv.Messages) == 0 {
				return true
			}
			del := make([]types.DeleteMessageBatchRequestEntry, len(rcv.Messages))
			for k, m := range rcv.Messages {
				del[k] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), ReceiptHandle: m.ReceiptHandle}
			}
			t = time.Now()
			dout, err := s.e.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: del})
			lat.Add(time.Since(t))
			requests.Add(1)
			if err != nil {
				s.e.fail(fmt.Errorf("DeleteMessageBatch: %w", err))
				return true
			}
			deletedN.Add(int64(len(dout.Successful)))
			if len(dout.Failed) > 0 {
				s.e.fail(fmt.Errorf("DeleteMessageBatch: %d entries failed: %s", len(dout.Failed), aws.ToString(dout.Failed[0].Code)))
			}
			return true
		}()
	})
	sent, deleted = sentN.Load(), deletedN.Load()
	s.step.Unit = "msgs/s"
	s.step.Rate = ptr(Rate(deleted, elapsed))
	s.step.Requests = requests.Load()
	if sum := lat.Summary(); sum.N > 0 {
		s.step.P50ms, s.step.P99ms = ptr(ms(sum.P50)), ptr(ms(sum.P99))
	}
	if cpuErr == nil {
		s.step.CPUus = s.cpuSince(cpu0, deleted)
	}
	return sent, deleted
}

// queues creates n queues and runs the batch traffic over all of them.
func (s *scaleRun) queues(ctx context.Context, n int) error {
	start := time.Now()
	urls, err := s.createQueues(ctx, n, "q")
	if err != nil {
		return err
	}
	s.step.FillSeconds = ptr(time.Since(start).Seconds())
	s.traffic(ctx, urls)
	s.rss(ctx)
	return s.restart(ctx, urls[len(urls)-1])
}

// backlog fills one queue with n messages, runs the traffic on top of
// them, checks the broker's count of what is left, and restarts on it.
func (s *scaleRun) backlog(ctx context.Context, n int) error {
	urls, err := s.createQueues(ctx, 1, "backlog")
	if err != nil {
		return err
	}
	url := urls[0]
	s.cfg.logf("  backlog %d: filling", n)
	start := time.Now()
	if err := s.fillQueue(ctx, url, n); err != nil {
		return err
	}
	s.step.FillSeconds = ptr(time.Since(start).Seconds())
	s.cfg.logf("  backlog %d: filled in %s", n, time.Since(start).Round(time.Millisecond))
	// A fast fill leaves the store compacting for a while; measured
	// through that, the load's CPU per message would be the fill's
	// compactions spread over a few seconds of traffic. The load measures
	// the broker once it is idle again.
	start = time.Now()
	if err := s.settle(ctx); err != nil {
		return err
	}
	s.step.SettleSeconds = ptr(time.Since(start).Seconds())
	sent, deleted := s.traffic(ctx, urls)
	// The broker's own count must be what the clients left behind: the
	// backlog, plus what was sent, less what was deleted.
	var lat Latencies
	var held int64
	for range 20 {
		t := time.Now()
		h, err := s.e.heldOnce(ctx, url)
		lat.Add(time.Since(t))
		if err != nil {
			return err
		}
		held = h
	}
	s.step.AttrsP99ms = ptr(ms(lat.Summary().P99))
	if want := int64(n) + sent - deleted; held != want {
		s.e.fail(fmt.Errorf("the queue holds %d messages, want %d (%d + %d sent - %d deleted)", held, want, n, sent, deleted))
	}
	s.rss(ctx)
	return s.restart(ctx, url)
}

// settleLimit bounds the wait for the store's compactions after a fill.
const settleLimit = 15 * time.Minute

// settle waits until the broker is idle, under 5% of a core for two
// seconds in a row: the compactions a fill leaves behind have finished.
// (The store's compaction debt is no signal: it stays above zero at rest.)
// After settleLimit it notes that it gave up.
func (s *scaleRun) settle(ctx context.Context) error {
	deadline := time.Now().Add(settleLimit)
	prev, err := s.proc.cpu()
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	quiet := 0
	for quiet < 2 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := s.proc.cpu()
		if err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		if now-prev < 0.05 {
			quiet++
		} else {
			quiet = 0
		}
		prev = now
		if time.Now().After(deadline) {
			s.e.note("the broker was still busy (compacting) %s after the fill", settleLimit)
			return nil
		}
	}
	return nil
}

// fillQueue sends n messages to url in batches of 10 from four times as
// many clients as the load has: more sends share each fsync.
func (s *scaleRun) fillQueue(ctx context.Context, url string, n int) error {
	var next atomic.Int64
	var sent atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	batches := int64((n + 9) / 10)
	for range 4 * s.cfg.Concurrency {
		wg.Go(func() {
			for {
				b := next.Add(1) - 1
				if b >= batches || ctx.Err() != nil {
					return
				}
				k := min(10, n-int(b)*10)
				entries := make([]types.SendMessageBatchRequestEntry, k)
				for j := range entries {
					entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)),
						MessageBody: aws.String(scaleBody(s.e.run+"f", b*10+int64(j)))}
				}
				out, err := s.e.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Code))
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("fill: SendMessageBatch: %w", err)
					}
					mu.Unlock()
					return
				}
				if done := sent.Add(int64(k)); n >= 1_000_000 && done%1_000_000 < int64(k) {
					s.cfg.logf("  backlog %d: %d sent", n, done)
				}
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// wakeSends is how many messages the polls axis sends, one at a time, to
// measure how fast a send wakes a waiting poll.
const wakeSends = 200

// polls holds n long polls waiting on up to 100 queues, measures the
// broker's CPU while they wait, then sends messages one at a time and
// measures how long each took from the start of its SendMessage to the
// return of the poll that got it. (From the send's acknowledgement, most
// would read zero: the broker wakes the poll before it answers the send.)
func (s *scaleRun) polls(ctx context.Context, n int) error {
	// The sockets the broker holds before any client connects: its
	// listeners. The clients that create the queues keep their connections
	// idle, and the polls take them over.
	base, err := s.proc.conns()
	if err != nil {
		return err
	}
	urls, err := s.createQueues(ctx, min(n, 100), "poll")
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		began   = map[string]time.Time{} // body → when its send began
		arrived = map[string]time.Time{} // body → when it was received, if before its send returned
		lat     Latencies
		got     = make(chan struct{}, wakeSends)
		waiting atomic.Int64
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	defer cancel()
	for i := range n {
		// Thousands of connections dialled at once overflow the listen
		// backlog, and the dials that time out would count as errors: the
		// polls start in waves, each once the broker holds the last one's
		// sockets.
		if i > 0 && i%polWave == 0 {
			if err := s.waitConns(ctx, base+i); err != nil {
				return err
			}
		}
		url := aws.String(urls[i%len(urls)])
		wg.Go(func() {
			first := true
			for pctx.Err() == nil {
				if first {
					waiting.Add(1)
					first = false
				}
				out, err := s.e.sqs.ReceiveMessage(pctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 20})
				at := time.Now()
				if err != nil {
					if pctx.Err() == nil {
						s.e.fail(fmt.Errorf("ReceiveMessage: %w", err))
						time.Sleep(100 * time.Millisecond) // not a busy loop on a broker that refuses
					}
					continue
				}
				for _, m := range out.Messages {
					body := aws.ToString(m.Body)
					mu.Lock()
					if t, ok := began[body]; ok {
						lat.Add(at.Sub(t))
						delete(began, body)
					} else {
						arrived[body] = at
					}
					mu.Unlock()
					got <- struct{}{}
					if _, err := s.e.sqs.DeleteMessage(pctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil && pctx.Err() == nil {
						s.e.fail(fmt.Errorf("DeleteMessage: %w", err))
					}
				}
			}
		})
	}
	// Each poll has a connection of its own: once the broker holds a
	// socket for each, every poll has been sent; a second later they have
	// all been read and wait.
	for waiting.Load() < int64(n) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := s.waitConns(ctx, base+n); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	cpu0, err := s.proc.cpu()
	if err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.cfg.Duration):
	}
	if cpu1, err := s.proc.cpu(); err == nil {
		s.step.IdleCPU = ptr((cpu1 - cpu0) * 1e3 / time.Since(t0).Seconds())
	}
	s.rss(ctx)
	// One message at a time, each to the next queue, 20 ms apart: each
	// finds polls waiting.
	sent := 0
	for k := range wakeSends {
		body := scaleBody(s.e.run, int64(k))
		start := time.Now()
		_, err := s.e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls[k%len(urls)]), MessageBody: aws.String(body)})
		if err != nil {
			s.e.fail(fmt.Errorf("SendMessage: %w", err))
			continue
		}
		sent++
		mu.Lock()
		if at, ok := arrived[body]; ok {
			lat.Add(at.Sub(start)) // the poll returned before the send did
			delete(arrived, body)
		} else {
			began[body] = start
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	deadline := time.After(30 * time.Second)
	for received := 0; received < sent; received++ {
		select {
		case <-got:
		case <-deadline:
			s.e.fail(fmt.Errorf("%d of %d messages never came out of a waiting poll", sent-received, sent))
			received = sent
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sum := lat.Summary()
	s.step.Requests = int64(sum.N)
	if sum.N > 0 {
		s.step.P50ms, s.step.P99ms = ptr(ms(sum.P50)), ptr(ms(sum.P99))
	}
	return nil
}

// polWave is how many long polls start at once.
const polWave = 500

// waitConns waits until the broker holds at least want sockets.
func (s *scaleRun) waitConns(ctx context.Context, want int) error {
	for {
		c, err := s.proc.conns()
		if err != nil || c >= want {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// subscriptions subscribes n queues (raw delivery) to one topic, publishes
// to it from every client for Duration, and checks that each queue got a
// copy of each acknowledged publish.
func (s *scaleRun) subscriptions(ctx context.Context, n int) error {
	topic, err := s.e.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(s.e.name("topic"))})
	if err != nil {
		return fmt.Errorf("CreateTopic: %w", err)
	}
	arn := topic.TopicArn
	urls, err := s.createQueues(ctx, n, "sub")
	if err != nil {
		return err
	}
	for _, url := range urls {
		qarn, err := s.e.queueArn(ctx, url)
		if err != nil {
			return err
		}
		if _, err := s.e.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: arn, Protocol: aws.String("sqs"),
			Endpoint: aws.String(qarn), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
			return fmt.Errorf("Subscribe: %w", err)
		}
	}
	var lat Latencies
	var published, seq atomic.Int64
	cpu0, cpuErr := s.proc.cpu()
	elapsed := s.e.loop(ctx, s.cfg.Concurrency, s.cfg.Duration, func(ctx context.Context, _ int) bool {
		t := time.Now()
		_, err := s.e.sns.Publish(ctx, &sns.PublishInput{TopicArn: arn, Message: aws.String(scaleBody(s.e.run, seq.Add(1)))})
		lat.Add(time.Since(t))
		if err != nil {
			s.e.fail(fmt.Errorf("Publish: %w", err))
			return true
		}
		published.Add(1)
		return true
	})
	p := published.Load()
	s.step.Unit = "publishes/s"
	s.step.Rate = ptr(Rate(p, elapsed))
	s.step.Requests = seq.Load()
	if cpuErr == nil {
		s.step.CPUus = s.cpuSince(cpu0, p)
	}
	if sum := lat.Summary(); sum.N > 0 {
		s.step.P50ms, s.step.P99ms = ptr(ms(sum.P50)), ptr(ms(sum.P99))
	}
	s.rss(ctx)
	// A publish is acknowledged once its copies are in their queues, so
	// every queue holds exactly one copy of each.
	for _, url := range urls {
		held, err := s.e.heldOnce(ctx, url)
		if err != nil {
			return err
		}
		if held != p {
			s.e.fail(fmt.Errorf("queue %s holds %d copies, want %d", url, held, p))
		}
	}
	return nil
}
