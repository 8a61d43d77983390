package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// client is what moves a scenario's messages (Config.Client): the SDK
// (sdkClient) or the fast client (fastClient). The scenarios both run
// (fastScenarios) are written once against it, so that the two reports
// measure the same thing; queues are made, counted and removed through
// the SDK either way.
type client interface {
	// queue prepares the queue at url for the client's requests.
	queue(url string) clientQueue
}

// clientQueue is one queue as a client sends to it and receives from it.
type clientQueue interface {
	// url is the queue's URL.
	url() string
	// sender is one worker's way to send to the queue; close it when the
	// worker is done.
	sender() sender
	// receive runs workers, each a client of its own, that long-poll for
	// up to 10 messages a call and delete what they got, until the crew is
	// done or its time is up. Each answer is checked and booked in the
	// crew's ledger (see env.arrive), and the stamps that arrived for the
	// first time are handed to handle, with the time the answer came,
	// before the delete; lat, when set, gets each answering receive's
	// latency.
	receive(c *crew, workers int, lat *Latencies, handle func(first []Stamp, at time.Time))
}

// sender sends stamps' bodies to one queue. A sender is used by one
// worker at a time.
type sender interface {
	// send sends st's body in one SendMessage; nil means the broker took it.
	send(ctx context.Context, st Stamp) error
	// sendBatch sends stamps in one SendMessageBatch, each entry's Id its
	// index, and sorts the entries of the answer into the Ids the broker
	// took and those it failed, for batchAnswer; lat, when set, gets the
	// request's latency, from when the request is built.
	sendBatch(ctx context.Context, stamps []Stamp, lat *Latencies) (ok []*string, failed []batchFailure, err error)
	close()
}

// fastScenarios are the scenarios the fast client runs. Most others need
// what it does not speak (FIFO, SNS, queue attributes, receives that keep
// their messages); produce-consume-batch would run as it is, but is not
// offered, so that a fast report keeps the rows it has always had.
var fastScenarios = []string{"send", "send-batch", "receive-delete", "produce-consume"}

// clientRefusal is why the configured client cannot run scenario name, or
// nil when it can. The fast client checks every message, so it has
// nothing to run against the ceiling, which holds none.
func clientRefusal(cfg Config, name string, ceiling bool) error {
	switch {
	case cfg.Client != ClientFast:
		return nil
	case ceiling:
		return &unsupportedError{op: "--client fast", err: errors.New("checks every message, and the ceiling holds none")}
	case !slices.Contains(fastScenarios, name):
		return &unsupportedError{op: "--client fast", err: errors.New("runs with --client sdk only")}
	}
	return nil
}

// clientOf is the client of cfg for e.
func clientOf(cfg Config, e *env) client {
	if cfg.Client == ClientFast {
		return fastClient{e}
	}
	return sdkClient{e}
}

// sdkClient moves messages through aws-sdk-go-v2; the SDK checks the MD5s
// of what it sends and receives.
type sdkClient struct{ e *env }

func (s sdkClient) queue(url string) clientQueue { return s.e.sdkQueue(url) }

// sdkQueue is a queue of the SDK client. It holds no state of its own, so
// that it is its own sender, and one for any number of workers.
type sdkQueue struct {
	e   *env
	loc string
}

// sdkQueue is the queue at url as the SDK client reaches it, for the
// scenarios that run with the SDK only.
func (e *env) sdkQueue(url string) sdkQueue { return sdkQueue{e, url} }

func (q sdkQueue) url() string    { return q.loc }
func (q sdkQueue) sender() sender { return q }
func (q sdkQueue) close()         {}

func (q sdkQueue) receive(c *crew, workers int, lat *Latencies, handle func([]Stamp, time.Time)) {
	q.e.receive(c, receiver{url: q.loc, workers: workers, wait: 20, lat: lat,
		handle: func(msgs []types.Message, at time.Time) { handle(q.e.arrive(c.ledger, 0, msgs), at) }})
}

func (q sdkQueue) send(ctx context.Context, st Stamp) error {
	_, err := q.e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.loc), MessageBody: aws.String(st.Body())})
	return err
}

// sendBatch sends those stamps with a group as FIFO messages with a
// deduplication id of their own.
func (q sdkQueue) sendBatch(ctx context.Context, stamps []Stamp, lat *Latencies) ([]*string, []batchFailure, error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(stamps))
	for i, st := range stamps {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(st.Body())}
		if st.Group != "" {
			entries[i].MessageGroupId = aws.String(st.Group)
			entries[i].MessageDeduplicationId = aws.String(q.e.run + "-" + strconv.FormatUint(st.Seq, 10))
		}
	}
	t0 := time.Now()
	out, err := q.e.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.loc), Entries: entries})
	if err != nil {
		return nil, nil, err
	}
	if lat != nil {
		lat.Add(time.Since(t0))
	}
	ok, failed := entryAnswers(out.Successful, out.Failed,
		func(s types.SendMessageBatchResultEntry) *string { return s.Id },
		func(f types.BatchResultErrorEntry) batchFailure { return batchFailure{f.Id, f.Code, f.Message} })
	return ok, failed, nil
}

// send sends one message through s and acks it when the broker took it;
// lat, when set, gets the request's latency.
func (e *env) send(ctx context.Context, s sender, l *Ledger, lat *Latencies) {
	st := e.stamps(l, 1)[0]
	if err := s.send(ctx, st); err != nil {
		if ctx.Err() == nil {
			e.fail(fmt.Errorf("SendMessage: %w", err))
		}
		return
	}
	if lat != nil {
		lat.Add(time.Since(st.Sent))
	}
	l.Ack(st.Seq)
}

// sendBatch sends stamps through s in one SendMessageBatch and acks each
// entry the broker took. It returns how many entries went wrong (see
// batchAnswer; all of them when the call failed) and the first such
// problem, for the caller to count.
func (e *env) sendBatch(ctx context.Context, s sender, l *Ledger, stamps []Stamp, lat *Latencies) (int, error) {
	ok, failed, err := s.sendBatch(ctx, stamps, lat)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return len(stamps), fmt.Errorf("SendMessageBatch: %w", err)
	}
	return batchAnswer("SendMessageBatch", l, stamps, ok, failed)
}

// sendLoop runs e.loop with n workers, each with a sender of its own to q.
func (e *env) sendLoop(ctx context.Context, q clientQueue, n int, d time.Duration,
	step func(ctx context.Context, s sender, worker int) bool) time.Duration {
	senders := make([]sender, n)
	for w := range senders {
		senders[w] = q.sender()
	}
	defer func() {
		for _, s := range senders {
			s.close()
		}
	}()
	return e.loop(ctx, n, d, func(ctx context.Context, w int) bool { return step(ctx, senders[w], w) })
}
