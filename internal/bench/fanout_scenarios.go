package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fanoutQueues is how many queues sns-fanout subscribes.
const fanoutQueues = 4

// sns-fanout-50 subscribes manyQueues queues, the first manyFiltered of
// them with a filter policy that lets every other publish through.
const (
	manyQueues   = 50
	manyFiltered = 20
)

// The filter of a filtered subscription: the message attribute
// filterAttr must be filterMatch, which it is for publishes of an even
// sequence number (filterOther for the odd ones).
const (
	filterAttr   = "kind"
	filterMatch  = "match"
	filterOther  = "other"
	filterPolicy = `{"` + filterAttr + `":["` + filterMatch + `"]}`
)

// fanoutSpec is a fan-out scenario: a topic with queues raw SQS
// subscriptions, of which the first filtered have filterPolicy.
type fanoutSpec struct {
	queues, filtered int
	// batch publishes PublishBatch of 10 instead of Publish.
	batch bool
	// perPublish divides the server's CPU by the messages published, not
	// by the copies received: what one publish costs, whatever its copies.
	perPublish bool
}

// matches reports whether the publish of seq carries filterMatch.
func matches(seq uint64) bool { return seq%2 == 0 }

// expects reports whether queue q is to receive a copy of seq.
func (f fanoutSpec) expects(seq uint64, q int) bool { return q >= f.filtered || matches(seq) }

// copies is how many queues receive seq.
func (f fanoutSpec) copies(seq uint64) int {
	if matches(seq) {
		return f.queues
	}
	return f.queues - f.filtered
}

// runFanout: sns-fanout and sns-fanout-batch, four unfiltered queues.
func runFanout(batch bool) func(context.Context, *env) error {
	return runFanoutOf(fanoutSpec{queues: fanoutQueues, batch: batch})
}

// runFanoutOf: a topic with f's subscriptions; half the workers publish,
// one message per Publish or, with batch, ten per PublishBatch, while the
// rest receive from every queue. Each copy must arrive exactly once where
// the subscription's filter lets it through and never where it does not.
// The rate is messages published; the latency runs from the start of the
// publish to the receive of the message's last copy.
func runFanoutOf(f fanoutSpec) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		topicArn, urls, err := e.fanoutTopicOf(ctx, f.queues, f.filtered)
		if err != nil {
			return err
		}
		l := NewLedger(f.queues)
		if f.filtered > 0 {
			l = NewFilteredLedger(f.queues, f.expects)
		}
		var lat Latencies
		type copies struct {
			n    int
			last time.Time
		}
		var mu sync.Mutex
		fan := map[uint64]copies{}
		c := newCrew(ctx, e.cfg.Duration+e.drainLimit(), l, true)
		defer c.cancel()
		var consumers sync.WaitGroup
		for q, url := range urls {
			consumers.Go(func() {
				e.receive(c, receiver{url: url, workers: max(1, e.cfg.Concurrency/f.queues), wait: 20, copy: q,
					handle: func(msgs []types.Message, at time.Time) {
						mu.Lock()
						defer mu.Unlock()
						for _, st := range e.arrive(l, q, msgs) {
							if st.Sent.IsZero() {
								continue // the ceiling's: nothing to time
							}
							c := fan[st.Seq]
							c.n++
							if at.After(c.last) {
								c.last = at
							}
							fan[st.Seq] = c
							if c.n == f.copies(st.Seq) {
								lat.Add(c.last.Sub(st.Sent))
								delete(fan, st.Seq)
							}
						}
					}})
			})
		}
		publish := func(ctx context.Context) {
			st := e.stamps(l, 1)[0]
			in := &sns.PublishInput{TopicArn: aws.String(topicArn), Message: aws.String(st.Body())}
			if f.filtered > 0 {
				in.MessageAttributes = kindAttribute(st.Seq)
			}
			if _, err := e.sns.Publish(ctx, in); err != nil {
				if ctx.Err() == nil {
					e.fail(fmt.Errorf("Publish: %w", err))
				}
				return
			}
			l.Ack(st.Seq)
		}
		start := time.Now()
		if f.batch {
			batchOf := func(stamps []Stamp) *sns.PublishBatchInput {
				in := publishBatchInput(topicArn, stamps)
				if f.filtered > 0 {
					for i := range in.PublishBatchRequestEntries {
						in.PublishBatchRequestEntries[i].MessageAttributes = kindAttribute(stamps[i].Seq)
					}
				}
				return in
			}
			// The first batch, published alone while the consumers already
			// wait, tells whether the broker has PublishBatch at all.
			stamps := e.stamps(l, 10)
			out, err := e.sns.PublishBatch(ctx, batchOf(stamps))
			if err != nil {
				c.cancel()
				consumers.Wait()
				return feature("PublishBatch", err)
			}
			e.failN(publishAnswer(l, stamps, out))
			publish = func(ctx context.Context) {
				stamps := e.stamps(l, 10)
				out, err := e.sns.PublishBatch(ctx, batchOf(stamps))
				switch {
				case err != nil && ctx.Err() != nil:
				case err != nil:
					e.failN(len(stamps), fmt.Errorf("PublishBatch: %w", err))
				default:
					e.failN(publishAnswer(l, stamps, out))
				}
			}
		}
		e.loop(ctx, max(1, e.cfg.Concurrency/2), e.cfg.Duration-time.Since(start), func(ctx context.Context, _ int) bool {
			if l.Issued() >= e.cfg.MaxMessages {
				return false
			}
			publish(ctx)
			return true
		})
		elapsed := time.Since(start)
		c.producersDone()
		consumers.Wait()
		acked := int64(l.Tally().Acked)
		e.measured(acked, elapsed)
		if f.filtered > 0 {
			e.latency(fmt.Sprintf("fan-out to all %d queues, or %d the filters let it into", f.queues, f.queues-f.filtered), lat.Summary())
		} else {
			e.latency(fmt.Sprintf("fan-out to all %d queues", f.queues), lat.Summary())
		}
		if f.perPublish {
			e.cpuPer = acked
		}
		e.settle(ctx, l, urls...)
		return nil
	}
}

// kindAttribute is the message attribute of the publish of seq that the
// filtered subscriptions look at.
func kindAttribute(seq uint64) map[string]snstypes.MessageAttributeValue {
	v := filterOther
	if matches(seq) {
		v = filterMatch
	}
	return map[string]snstypes.MessageAttributeValue{filterAttr: {DataType: aws.String("String"), StringValue: aws.String(v)}}
}

// fanoutTopic makes a topic with fanoutQueues raw SQS subscriptions and
// schedules the removal of all of it.
func (e *env) fanoutTopic(ctx context.Context) (topicArn string, urls []string, err error) {
	return e.fanoutTopicOf(ctx, fanoutQueues, 0)
}

// fanoutTopicOf makes a topic with queues raw SQS subscriptions, the
// first filtered of them with filterPolicy, and schedules the removal of
// all of it.
func (e *env) fanoutTopicOf(ctx context.Context, queues, filtered int) (topicArn string, urls []string, err error) {
	topic, err := e.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(e.name("topic"))})
	if err != nil {
		return "", nil, feature("CreateTopic", err)
	}
	topicArn = aws.ToString(topic.TopicArn)
	e.cleanup = append(e.cleanup, func(ctx context.Context) error {
		_, err := e.sns.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: aws.String(topicArn)})
		return err
	})
	urls = make([]string, queues)
	for i := range urls {
		if urls[i], err = e.createQueue(ctx, "fanout-"+strconv.Itoa(i), nil); err != nil {
			return "", nil, err
		}
		arn, err := e.queueArn(ctx, urls[i])
		if err != nil {
			return "", nil, err
		}
		attrs := map[string]string{"RawMessageDelivery": "true"}
		if i < filtered {
			attrs["FilterPolicy"] = filterPolicy
		}
		sub, err := e.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topicArn), Protocol: aws.String("sqs"),
			Endpoint: aws.String(arn), Attributes: attrs, ReturnSubscriptionArn: true})
		if err != nil {
			return "", nil, feature("Subscribe", err)
		}
		subArn := aws.ToString(sub.SubscriptionArn)
		e.cleanup = append(e.cleanup, func(ctx context.Context) error {
			_, err := e.sns.Unsubscribe(ctx, &sns.UnsubscribeInput{SubscriptionArn: aws.String(subArn)})
			return err
		})
	}
	return topicArn, urls, nil
}
