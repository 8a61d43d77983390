package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// scenarioQueue makes the scenario's queue (see createQueue) and prepares
// it for the run's client.
func (e *env) scenarioQueue(ctx context.Context) (clientQueue, error) {
	url, err := e.createQueue(ctx, e.res.Name, nil)
	if err != nil {
		return nil, err
	}
	return e.via.queue(url), nil
}

// runSends: SendMessage of one body per request, or SendMessageBatch of
// ten, from every worker; then the queue is drained to check that each
// acknowledged message is there exactly once.
func runSends(batch bool) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		q, err := e.scenarioQueue(ctx)
		if err != nil {
			return err
		}
		l := NewLedger(1)
		var lat Latencies
		elapsed := e.sendLoop(ctx, q, e.cfg.Concurrency, e.cfg.Duration, func(ctx context.Context, s sender, _ int) bool {
			switch {
			case l.Issued() >= e.cfg.MaxMessages:
				return false
			case batch:
				e.failN(e.sendBatch(ctx, s, l, e.stamps(l, 10), &lat))
			default:
				e.send(ctx, s, l, &lat)
			}
			return true
		})
		e.measured(int64(l.Tally().Acked), elapsed)
		what := "request"
		if batch {
			what = "batch request"
		}
		e.latency(what, lat.Summary())
		e.drain(ctx, q, l, nil)
		e.settle(ctx, l, q.url())
		return nil
	}
}

// runReceiveDelete: a pre-filled queue drained by every worker with long
// polls of 10 and batch deletes; the drain is what is measured.
func runReceiveDelete(ctx context.Context, e *env) error {
	q, err := e.scenarioQueue(ctx)
	if err != nil {
		return err
	}
	l := NewLedger(1)
	e.prefill(ctx, q, l)
	var lat Latencies
	elapsed := e.drain(ctx, q, l, &lat)
	e.measured(l.Tally().Received, elapsed)
	e.latency("receive request", lat.Summary())
	e.settle(ctx, l, q.url())
	return nil
}

// window measures arrivals while producers run: its end moves up when
// they stop early.
type window struct {
	end     atomic.Int64 // unix nanoseconds
	arrived atomic.Int64
}

func newWindow(start time.Time, d time.Duration) *window {
	w := &window{}
	w.end.Store(start.Add(d).UnixNano())
	return w
}

func (w *window) arrive(at time.Time) {
	if at.UnixNano() <= w.end.Load() {
		w.arrived.Add(1)
	}
}

// produceConsume runs producers, each with a sender of its own, for
// Duration while consumers receive from q, then lets the consumers finish
// the backlog within the drain limit. The rate is what arrived while
// producers ran; latencies are end to end, from the start of the send to
// the return of the receive.
func (e *env) produceConsume(ctx context.Context, q clientQueue, l *Ledger, producers int, produce func(ctx context.Context, s sender, worker int), onFirst func(Stamp)) {
	var lat Latencies
	start := time.Now()
	win := newWindow(start, e.cfg.Duration)
	c := newCrew(ctx, e.cfg.Duration+e.drainLimit(), l, true)
	defer c.cancel()
	var consumers sync.WaitGroup
	consumers.Go(func() {
		q.receive(c, max(1, e.cfg.Concurrency/2), nil, func(first []Stamp, at time.Time) {
			for _, st := range first {
				win.arrive(at)
				if st.Sent.IsZero() {
					continue // the ceiling's: nothing to time or order
				}
				if onFirst != nil {
					onFirst(st)
				}
				lat.Add(at.Sub(st.Sent))
			}
		})
	})
	sendElapsed := e.sendLoop(ctx, q, producers, e.cfg.Duration, func(ctx context.Context, s sender, w int) bool {
		if l.Issued() >= e.cfg.MaxMessages {
			return false
		}
		produce(ctx, s, w)
		return true
	})
	win.end.Store(min(win.end.Load(), start.Add(sendElapsed).UnixNano()))
	c.producersDone()
	consumers.Wait()

	e.measured(win.arrived.Load(), min(sendElapsed, e.cfg.Duration))
	e.latency("end-to-end", lat.Summary())
	e.note("sent %s msgs/s", Thousands(Rate(int64(l.Tally().Acked), sendElapsed)))
	e.settle(ctx, l, q.url())
}

// runProduceConsume: single sends, or SendMessageBatch of ten, from half
// the workers, long-poll receives and batch deletes from the other half,
// at once.
func runProduceConsume(batch bool) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		q, err := e.scenarioQueue(ctx)
		if err != nil {
			return err
		}
		l := NewLedger(1)
		produce := func(ctx context.Context, s sender, _ int) { e.send(ctx, s, l, nil) }
		if batch {
			produce = func(ctx context.Context, s sender, _ int) { e.failN(e.sendBatch(ctx, s, l, e.stamps(l, 10), nil)) }
		}
		e.produceConsume(ctx, q, l, max(1, e.cfg.Concurrency/2), produce, nil)
		return nil
	}
}

// wakeupInterval spaces the messages of long-poll-wakeup.
const wakeupInterval = 50 * time.Millisecond

// runLongPollWakeup: one consumer long-polls an empty queue while a
// message is sent every 50 ms; the latency is from the send's
// acknowledgement to the return of the receive that got it.
func runLongPollWakeup(ctx context.Context, e *env) error {
	url, err := e.createQueue(ctx, e.res.Name, nil)
	if err != nil {
		return err
	}
	l := NewLedger(1)
	var mu sync.Mutex
	acked := map[uint64]time.Time{}
	received := map[uint64]time.Time{}
	sentAt := map[uint64]time.Time{}
	c := newCrew(ctx, e.cfg.Duration+e.drainLimit(), l, true)
	defer c.cancel()
	// The sender is a client too: with several nodes, the receiver's
	// wake-up crosses from one node to another.
	sender := e.client(ctx)
	var consumer sync.WaitGroup
	consumer.Go(func() {
		e.receive(c, receiver{url: url, workers: 1, wait: 20, async: true,
			handle: func(msgs []types.Message, at time.Time) {
				for _, st := range e.arrive(l, 0, msgs) {
					mu.Lock()
					received[st.Seq] = at
					mu.Unlock()
				}
			}})
	})

	start := time.Now()
	tick := time.NewTicker(wakeupInterval)
	for end := start.Add(e.cfg.Duration); ctx.Err() == nil && time.Now().Before(end) && l.Issued() < e.cfg.MaxMessages; {
		select {
		case <-ctx.Done():
		case <-tick.C:
			st := e.stamps(l, 1)[0]
			mu.Lock()
			sentAt[st.Seq] = st.Sent
			mu.Unlock()
			if _, err := e.sqs.SendMessage(sender, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(st.Body())}); err != nil {
				if ctx.Err() == nil {
					e.fail(fmt.Errorf("SendMessage: %w", err))
				}
				continue
			}
			mu.Lock()
			acked[st.Seq] = time.Now()
			mu.Unlock()
			l.Ack(st.Seq)
		}
	}
	tick.Stop()
	c.producersDone()
	consumer.Wait()

	// A broker that hands the message to the waiting receiver before it
	// answers the sender wakes it "before" the acknowledgement: that counts
	// as zero, and the note gives the same latency from the send's start.
	var lat, fromStart Latencies
	mu.Lock()
	for seq, at := range received {
		if sent, ok := acked[seq]; ok {
			lat.Add(at.Sub(sent))
		}
		fromStart.Add(at.Sub(sentAt[seq]))
	}
	mu.Unlock()
	e.measured(l.Tally().Received, time.Since(start))
	e.latency("wake-up after the send's acknowledgement", lat.Summary())
	if s := fromStart.Summary(); s.N > 0 {
		e.note("from the send's start: p50 %s p99 %s", FormatMillis(ms(s.P50)), FormatMillis(ms(s.P99)))
	}
	e.settle(ctx, l, url)
	return nil
}

// maxReceiveCount is the redrive policy of dlq-move.
const maxReceiveCount = 2

func redrivePolicy(dlqArn string, maxReceives int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqArn, maxReceives)
}

// runDLQMove: a pre-filled queue with a visibility timeout of 0 and
// maxReceiveCount 2, received by consumers that never delete, so that
// every message moves to the dead-letter queue on its third receive; the
// rate is arrivals in the dead-letter queue. No message may be delivered
// from the source more than twice, and each must reach the dead-letter
// queue exactly once.
func runDLQMove(ctx context.Context, e *env) error {
	dlq, err := e.createQueue(ctx, "dlq-dead", nil)
	if err != nil {
		return err
	}
	dlqArn, err := e.queueArn(ctx, dlq)
	if err != nil {
		return err
	}
	src, err := e.createQueue(ctx, "dlq-source", map[string]string{
		"VisibilityTimeout": "0", "RedrivePolicy": redrivePolicy(dlqArn, maxReceiveCount)})
	if err != nil {
		return feature("CreateQueue with a RedrivePolicy", err)
	}
	l := NewLedger(1)
	e.prefill(ctx, e.sdkQueue(src), l)

	var mu sync.Mutex
	deliveries := map[uint64]int{}
	var over int64
	c := newCrew(ctx, e.drainLimit(), l, false)
	defer c.cancel()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		e.receive(c, receiver{url: src, workers: e.cfg.Concurrency, wait: 20, keep: true,
			handle: func(msgs []types.Message, _ time.Time) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					if st, ok := ParseBody(e.run, aws.ToString(m.Body)); ok {
						deliveries[st.Seq]++
						if deliveries[st.Seq] == maxReceiveCount+1 {
							over++
						}
					}
				}
			}})
	})
	wg.Go(func() {
		e.receive(c, receiver{url: dlq, workers: max(2, e.cfg.Concurrency/4), wait: 20,
			handle: func(msgs []types.Message, _ time.Time) { e.arrive(l, 0, msgs) }})
	})
	wg.Wait()
	e.measured(l.Tally().Received, time.Since(start))
	if over > 0 {
		e.res.Duplicated += over
		e.note("%d messages were delivered from the source more than maxReceiveCount=%d times", over, maxReceiveCount)
	}
	// A message still in the source may simply not have had its third
	// receive yet: slow, not lost. One that a broker never moves shows as
	// delivered more than maxReceiveCount times, counted above.
	e.settle(ctx, l, src, dlq)
	return nil
}

// moveTaskPoll is how often move-task asks for its task's progress.
const moveTaskPoll = 20 * time.Millisecond

// runMoveTask: a pre-filled dead-letter queue moved back with
// StartMessageMoveTask (no rate), timed until ListMessageMoveTasks says
// COMPLETED; then the destination is drained to check every message came.
func runMoveTask(ctx context.Context, e *env) error {
	src, err := e.createQueue(ctx, "move-source", nil)
	if err != nil {
		return err
	}
	srcArn, err := e.queueArn(ctx, src)
	if err != nil {
		return err
	}
	dlq, err := e.createQueue(ctx, "move-dead", nil)
	if err != nil {
		return err
	}
	dlqArn, err := e.queueArn(ctx, dlq)
	if err != nil {
		return err
	}
	if _, err := e.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(src),
		Attributes: map[string]string{"RedrivePolicy": redrivePolicy(dlqArn, 10)}}); err != nil {
		return feature("SetQueueAttributes RedrivePolicy", err)
	}
	list := &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn), MaxResults: aws.Int32(1)}
	// Asked first so that a broker without move tasks is not filled in vain.
	if _, err := e.sqs.ListMessageMoveTasks(ctx, list); err != nil {
		return feature("ListMessageMoveTasks", err)
	}
	l := NewLedger(1)
	acked := e.prefill(ctx, e.sdkQueue(dlq), l)

	start := time.Now()
	if _, err := e.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlqArn), DestinationArn: aws.String(srcArn)}); err != nil {
		return feature("StartMessageMoveTask", err)
	}
	tctx, cancel := context.WithTimeout(ctx, e.drainLimit())
	defer cancel()
	var last types.ListMessageMoveTasksResultEntry
	for {
		out, err := e.sqs.ListMessageMoveTasks(tctx, list)
		switch {
		case err != nil && tctx.Err() != nil:
		case err != nil:
			e.fail(fmt.Errorf("ListMessageMoveTasks: %w", err))
		case len(out.Results) == 0:
			e.fail(fmt.Errorf("ListMessageMoveTasks: no task for %s", dlqArn))
		default:
			last = out.Results[0]
		}
		status := aws.ToString(last.Status)
		if status == "COMPLETED" || status == "FAILED" || status == "CANCELLED" || tctx.Err() != nil {
			break
		}
		pause(tctx, moveTaskPoll)
	}
	elapsed := time.Since(start)
	switch status := aws.ToString(last.Status); status {
	case "COMPLETED":
		e.measured(int64(acked), elapsed)
		if last.ApproximateNumberOfMessagesMoved != int64(acked) {
			e.note("the task reports %d moved of %d", last.ApproximateNumberOfMessagesMoved, acked)
		}
	default:
		e.measured(last.ApproximateNumberOfMessagesMoved, elapsed)
		e.fail(fmt.Errorf("move task %s after %s (%s), %d moved of %d", status, elapsed.Round(time.Millisecond),
			aws.ToString(last.FailureReason), last.ApproximateNumberOfMessagesMoved, acked))
	}
	e.drain(ctx, e.sdkQueue(src), l, nil)
	e.settle(ctx, l, src)
	return nil
}

// runFIFO: FIFO batches of 10 messages of one group each, from producers
// that each own some of the groups (so that each group's order is the
// order of its sends), received and deleted at once by other workers; the
// order within every group is checked.
func runFIFO(groups int) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		url, err := e.createQueue(ctx, fmt.Sprintf("fifo-%d.fifo", groups), map[string]string{"FifoQueue": "true"})
		if err != nil {
			return feature("CreateQueue FifoQueue", err)
		}
		l := NewLedger(1)
		order := NewOrder()
		producers := min(groups, max(1, e.cfg.Concurrency/2))
		next := make([]uint64, groups) // each index touched by its owner only
		turns := make([]int, producers)
		produce := func(ctx context.Context, s sender, w int) {
			owned := (groups - w + producers - 1) / producers // groups w, w+producers, ...
			g := w + turns[w]%owned*producers
			turns[w]++
			stamps := e.stamps(l, 10)
			for i := range stamps {
				stamps[i].Group = "g" + strconv.Itoa(g)
				stamps[i].Index = next[g]
				next[g]++
			}
			e.failN(e.sendBatch(ctx, s, l, stamps, nil))
		}
		e.produceConsume(ctx, e.sdkQueue(url), l, producers, produce, func(st Stamp) { order.Observe(st.Group, st.Index) })
		e.res.OutOfOrder += order.OutOfOrder()
		return nil
	}
}
