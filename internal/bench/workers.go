package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// createQueue makes the queue e.name(suffix) and schedules its deletion.
func (e *env) createQueue(ctx context.Context, suffix string, attrs map[string]string) (string, error) {
	out, err := e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(e.name(suffix)), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("CreateQueue %s: %w", e.name(suffix), err)
	}
	url := aws.ToString(out.QueueUrl)
	e.cleanup = append(e.cleanup, func(ctx context.Context) error {
		_, err := e.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		return err
	})
	return url, nil
}

// queueArn asks for the ARN of the queue at url.
func (e *env) queueArn(ctx context.Context, url string) (string, error) {
	out, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", fmt.Errorf("GetQueueAttributes QueueArn: %w", err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("GetQueueAttributes: no QueueArn for %s", url)
	}
	return arn, nil
}

// held is how many messages the broker says the queues still hold,
// visible, in flight or delayed. Name the queues in the order messages
// move between them (a source before its dead-letter queue): a receive
// the clients gave up on may still be running in the broker and move a
// message while the queues are counted one after the other, and counted
// in that order it is counted twice, never missed. The count is taken
// again until two passes agree, so that such moves seldom count at all.
func (e *env) held(ctx context.Context, urls ...string) (int64, error) {
	prev := int64(-1)
	for {
		n, err := e.heldOnce(ctx, urls...)
		if err != nil || n == prev || ctx.Err() != nil {
			return n, err
		}
		prev = n
	}
}

func (e *env) heldOnce(ctx context.Context, urls ...string) (int64, error) {
	var n int64
	for _, url := range urls {
		out, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			return 0, fmt.Errorf("GetQueueAttributes: %w", err)
		}
		for _, a := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed} {
			v, _ := strconv.ParseInt(out.Attributes[string(a)], 10, 64)
			n += max(v, 0)
		}
	}
	return n, nil
}

// measured records the scenario's rate: n messages in elapsed.
func (e *env) measured(n int64, elapsed time.Duration) {
	e.res.Messages = n
	e.res.Seconds = elapsed.Seconds()
	e.res.Rate = Rate(n, elapsed)
}

// latency records what s measured, if it has samples.
func (e *env) latency(what string, s Summary) {
	if s.N == 0 {
		return
	}
	p50, p99 := ms(s.P50), ms(s.P99)
	e.res.Latency = what
	e.res.P50ms, e.res.P99ms = &p50, &p99
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loop runs n workers, each a client of its own (see env.client), that
// call step with the client's context until d has passed, ctx ends or step
// returns false, and returns how long they ran. A request in flight at the
// deadline is left to finish, so that no send ends in doubt.
func (e *env) loop(ctx context.Context, n int, d time.Duration, step func(ctx context.Context, worker int) bool) time.Duration {
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for w := range n {
		wctx := e.client(ctx)
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(end) && step(wctx, w) {
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// stamps hands out n sequence numbers of l, stamped now, for a standard queue.
func (e *env) stamps(l *Ledger, n int) []Stamp {
	now := time.Now()
	s := make([]Stamp, n)
	for i := range s {
		s[i] = Stamp{Run: e.run, Seq: l.Next(), Sent: now}
	}
	return s
}

// publishBatchInput is a PublishBatch of stamps to topicArn, each entry's
// Id its index.
func publishBatchInput(topicArn string, stamps []Stamp) *sns.PublishBatchInput {
	entries := make([]snstypes.PublishBatchRequestEntry, len(stamps))
	for i, st := range stamps {
		entries[i] = snstypes.PublishBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), Message: aws.String(st.Body())}
	}
	return &sns.PublishBatchInput{TopicArn: aws.String(topicArn), PublishBatchRequestEntries: entries}
}

// publishBatch publishes stamps in one PublishBatch and acks each entry
// the broker took; it returns what went wrong as sendBatch does.
func (e *env) publishBatch(ctx context.Context, topicArn string, l *Ledger, stamps []Stamp) (int, error) {
	out, err := e.sns.PublishBatch(ctx, publishBatchInput(topicArn, stamps))
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return len(stamps), fmt.Errorf("PublishBatch: %w", err)
	}
	return publishAnswer(l, stamps, out)
}

// publishAnswer books the answer of a PublishBatch of stamps (see batchAnswer).
func publishAnswer(l *Ledger, stamps []Stamp, out *sns.PublishBatchOutput) (int, error) {
	ok, failed := entryAnswers(out.Successful, out.Failed,
		func(s snstypes.PublishBatchResultEntry) *string { return s.Id },
		func(f snstypes.BatchResultErrorEntry) batchFailure { return batchFailure{f.Id, f.Code, f.Message} })
	return batchAnswer("PublishBatch", l, stamps, ok, failed)
}

// batchFailure is one failed entry of a batch answer, SQS's or SNS's.
type batchFailure struct{ id, code, message *string }

// entryAnswers puts the entries of an SDK's batch answer in batchAnswer's
// terms: the Ids of the successful ones, and the failed ones.
func entryAnswers[S, F any](successful []S, failures []F, id func(S) *string, failure func(F) batchFailure) ([]*string, []batchFailure) {
	ok := make([]*string, len(successful))
	for i, s := range successful {
		ok[i] = id(s)
	}
	failed := make([]batchFailure, len(failures))
	for i, f := range failures {
		failed[i] = failure(f)
	}
	return ok, failed
}

// batchAnswer acks in l each entry of stamps (sent with its index as Id)
// that the answer of op lists as successful. It returns how many entries
// went wrong (failed, answered twice or for an unknown Id, or left out of
// the answer) and the first such problem, for the caller to count.
func batchAnswer(op string, l *Ledger, stamps []Stamp, ok []*string, failed []batchFailure) (int, error) {
	var bad int
	var first error
	problem := func(err error) {
		bad++
		if first == nil {
			first = err
		}
	}
	answered := make([]bool, len(stamps))
	entry := func(id *string) (int, bool) {
		i, err := strconv.Atoi(aws.ToString(id))
		if err != nil || i < 0 || i >= len(stamps) || answered[i] {
			problem(fmt.Errorf("%s: answer for unknown or repeated entry %q", op, aws.ToString(id)))
			return 0, false
		}
		answered[i] = true
		return i, true
	}
	for _, id := range ok {
		if i, found := entry(id); found {
			l.Ack(stamps[i].Seq)
		}
	}
	for _, f := range failed {
		if _, found := entry(f.id); found {
			problem(fmt.Errorf("%s entry: %s: %s", op, aws.ToString(f.code), aws.ToString(f.message)))
		}
	}
	for i, a := range answered {
		if !a {
			problem(fmt.Errorf("%s: entry %d missing from the answer", op, i))
		}
	}
	return bad, first
}

// failN counts n errors of which err is the first.
func (e *env) failN(n int, err error) {
	if n <= 0 || err == nil {
		return
	}
	e.fail(err)
	e.errs.Add(int64(n - 1))
}

// prefill fills q with up to Prefill messages in batches from every
// worker, for at most Duration, and returns how many the broker took. A
// broker whose SendMessageBatch answers wrongly (send-batch reports that)
// is filled with single sends instead, so that what follows still runs.
func (e *env) prefill(ctx context.Context, q clientQueue, l *Ledger) int {
	target := min(e.cfg.Prefill, e.cfg.MaxMessages)
	batches := true
	probe := q.sender()
	n, err := e.sendBatch(ctx, probe, l, e.stamps(l, min(10, target)), nil)
	probe.close()
	if n > 0 {
		batches = false
		e.note("SendMessageBatch failed (%s), so pre-filled with SendMessage", shorten(err.Error(), 200))
	}
	elapsed := e.sendLoop(ctx, q, e.cfg.Concurrency, e.cfg.Duration, func(ctx context.Context, s sender, _ int) bool {
		n := min(10, target-l.Issued())
		if n <= 0 {
			return false
		}
		if batches {
			e.failN(e.sendBatch(ctx, s, l, e.stamps(l, n), nil))
		} else {
			e.send(ctx, s, l, nil)
		}
		return true
	})
	t := l.Tally()
	e.note("pre-filled %d in %s", t.Acked, elapsed.Round(time.Millisecond))
	return t.Acked
}

// receiver describes workers that receive from one queue with the SDK
// (see receiveLoop).
type receiver struct {
	url     string
	workers int
	wait    int32 // WaitTimeSeconds
	keep    bool  // never delete (the message comes back)
	async   bool  // delete in the background, so the receiver waits again at once
	copy    int   // the ledger's place of this queue's copies (see Ledger)
	lat     *Latencies
	handle  func(msgs []types.Message, at time.Time)
}

// crew is the receivers of a scenario, on one queue or several, that stop
// together: once the producers are done and every acknowledged message has
// arrived, or when their time is up.
type crew struct {
	ctx      context.Context
	cancel   context.CancelFunc
	ledger   *Ledger
	produced atomic.Bool
}

// newCrew returns receivers' common stop for l, limited to limit; producing
// says whether producers are still to run.
func newCrew(ctx context.Context, limit time.Duration, l *Ledger, producing bool) *crew {
	c := &crew{ledger: l}
	c.ctx, c.cancel = context.WithTimeout(ctx, limit)
	c.produced.Store(!producing)
	return c
}

func (c *crew) done() bool { return c.produced.Load() && c.ledger.Pending() == 0 }

// check ends every long poll of the crew once it is done.
func (c *crew) check() bool {
	if c.done() {
		c.cancel()
		return true
	}
	return false
}

// producersDone says no more messages come. Receivers check after each
// receive, but one may be waiting in a long poll for a message that
// already arrived elsewhere, hence the check here too.
func (c *crew) producersDone() {
	c.produced.Store(true)
	c.check()
}

// receive runs r's workers (see receiveLoop) with the SDK.
func (e *env) receive(c *crew, r receiver) {
	loop := receiveLoop{workers: r.workers, keep: r.keep, async: r.async, copy: r.copy, lat: r.lat}
	receiveWith(e, c, loop, func() inbox[types.Message] { return sdkInbox{e, r.url, r.wait} }, r.handle)
}

// inbox is one receive worker's way to a queue, for receiveWith.
type inbox[M any] interface {
	// receive asks for up to 10 messages; those it returns are valid
	// until its next call.
	receive(ctx context.Context) ([]M, error)
	// remove deletes msgs in one call, counting each failure as an error.
	remove(ctx context.Context, msgs []M)
	close()
}

// receiveLoop is how the workers of receiveWith go about a queue.
type receiveLoop struct {
	workers int
	keep    bool // never delete (the message comes back)
	// async deletes in the background, so that the receiver waits again
	// at once; only for an inbox whose messages outlive its next receive.
	async bool
	copy  int // the ledger's place of this queue's copies (see Ledger)
	lat   *Latencies
}

// receiveWith runs how's workers, each a client of its own with an inbox
// of its own from open, up to 10 messages a call, each batch handed to
// handle (before it is deleted, so that a FIFO group's next messages
// cannot be handled first), until the crew is done or its time is up.
func receiveWith[M any](e *env, c *crew, how receiveLoop, open func() inbox[M], handle func(msgs []M, at time.Time)) {
	var workers, deletes sync.WaitGroup
	for range max(how.workers, 1) {
		ctx := e.client(c.ctx)
		workers.Go(func() {
			in := open()
			defer in.close()
			for ctx.Err() == nil && !c.check() {
				// The ceiling answers every receive at once with 10 of its
				// own messages: a receive from it first claims what a
				// broker would have to give, and takes no more than that.
				var claimed int
				if e.ceiling {
					if claimed = c.ledger.Claim(ctx, how.copy, 10); claimed == 0 {
						continue
					}
				}
				t0 := time.Now()
				msgs, err := in.receive(ctx)
				at := time.Now()
				if err != nil {
					if e.ceiling {
						c.ledger.Unclaim(how.copy, claimed)
					}
					if ctx.Err() != nil {
						return
					}
					e.fail(fmt.Errorf("ReceiveMessage: %w", err))
					pause(ctx, 10*time.Millisecond) // a failing broker is not hammered
					continue
				}
				if e.ceiling {
					msgs = msgs[:min(claimed, len(msgs))]
				}
				e.receives.Add(1)
				e.received.Add(int64(len(msgs)))
				if len(msgs) == 0 {
					continue
				}
				if how.lat != nil {
					how.lat.Add(at.Sub(t0))
				}
				handle(msgs, at)
				switch {
				case how.keep:
				case how.async:
					deletes.Go(func() { in.remove(ctx, msgs) })
				default:
					in.remove(ctx, msgs)
				}
			}
		})
	}
	workers.Wait()
	deletes.Wait()
}

// sdkInbox receives from url with the SDK, waiting wait seconds.
type sdkInbox struct {
	e    *env
	url  string
	wait int32
}

func (in sdkInbox) receive(ctx context.Context) ([]types.Message, error) {
	out, err := in.e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(in.url), MaxNumberOfMessages: 10, WaitTimeSeconds: in.wait})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

func (in sdkInbox) remove(ctx context.Context, msgs []types.Message) {
	in.e.deleteBatch(ctx, in.url, msgs)
}
func (in sdkInbox) close() {}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// deleteBatch deletes msgs in one call; each failure is an error.
func (e *env) deleteBatch(ctx context.Context, url string, msgs []types.Message) {
	entries := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	out, err := e.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		if ctx.Err() == nil {
			e.fail(fmt.Errorf("DeleteMessageBatch: %w", err))
		}
		return
	}
	for _, f := range out.Failed {
		e.fail(fmt.Errorf("DeleteMessageBatch entry: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
	}
	if n := len(out.Successful) + len(out.Failed); n != len(entries) {
		e.fail(fmt.Errorf("DeleteMessageBatch: %d entries answered of %d", n, len(entries)))
	}
}

// arrive books msgs in l as copy c and returns the stamps of those that
// arrived for the first time.
//
// The ceiling's messages are its own, with no stamps: each counts for an
// acknowledged message, unchecked, and its stamp is empty (a zero Sent),
// with nothing to time or order by.
func (e *env) arrive(l *Ledger, c int, msgs []types.Message) []Stamp {
	if e.ceiling {
		return make([]Stamp, l.Count(c, len(msgs)))
	}
	var first []Stamp
	for _, m := range msgs {
		st, ok := ParseBody(e.run, aws.ToString(m.Body))
		if !ok {
			l.Stray()
			continue
		}
		if l.Seen(st.Seq, c) == First {
			first = append(first, st)
		}
	}
	return first
}

// drain receives and deletes from q with every worker until each
// acknowledged message of l arrived or the drain's time ran out, and
// returns how long it took; lat, when set, gets the receives' latencies.
func (e *env) drain(ctx context.Context, q clientQueue, l *Ledger, lat *Latencies) time.Duration {
	c := newCrew(ctx, e.drainLimit(), l, false)
	defer c.cancel()
	start := time.Now()
	q.receive(c, e.cfg.Concurrency, lat, func([]Stamp, time.Time) {})
	return time.Since(start)
}

// settle turns l's account into the result's counters. A copy that never
// arrived is lost, unless the broker says the queues in urls still hold
// that many messages: then it was only too slow to come within the limit.
func (e *env) settle(ctx context.Context, l *Ledger, urls ...string) Tally {
	t := l.Tally()
	e.res.Verified += t.Received
	e.res.Duplicated += t.Dups
	if t.Unknown > 0 {
		e.res.Errors += t.Unknown
		e.note("%d bodies arrived that this run never sent", t.Unknown)
	}
	if t.Missing == 0 {
		return t
	}
	// The scenario's own time may be up; counting what is left still is owed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	held, err := e.held(ctx, urls...)
	if err != nil {
		e.note("counting what is left: %v", err)
	}
	unverified := min(t.Missing, held)
	e.res.Lost += t.Missing - unverified
	e.res.Unverified += unverified
	e.note("%d acknowledged messages had not arrived when the %s limit ran out; the broker still held %d", t.Missing, e.drainLimit(), held)
	return t
}
