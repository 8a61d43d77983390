package delivery

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// httpTimeout is how long SNS waits for an HTTP/S endpoint.
const httpTimeout = 15 * time.Second

// attemptResult is how one delivery attempt went, and what the endpoint
// answered (for the delivery status log).
type attemptResult struct {
	outcome outcome
	status  int    // the HTTP status; 0 when none came
	answer  string // the start of the answer's body, or why none came
}

// attempt delivers a queued job once.
func (d *Service) attempt(ctx context.Context, t *Topic, sub *Subscription, j *job) attemptResult {
	switch sub.Protocol {
	case ProtoHTTP, ProtoHTTPS:
		return d.attemptHTTP(ctx, t, sub, j)
	case ProtoEmail, ProtoEmailJSON:
		return attemptResult{outcome: d.attemptEmail(ctx, t, sub, j)}
	}
	return attemptResult{outcome: permanent}
}

// subscriptionConfirmation is the SubscriptionConfirmation of a queued job.
func (d *Service) subscriptionConfirmation(t *Topic, j *job) (*Confirmation, error) {
	return d.confirmation(t, TypeSubscriptionConfirmation, j.MessageID, j.Token, "", j.Timestamp)
}

func (d *Service) attemptHTTP(ctx context.Context, t *Topic, sub *Subscription, j *job) attemptResult {
	failed := attemptResult{outcome: permanent}
	var (
		body []byte
		hdr  http.Header
	)
	if j.Type == TypeSubscriptionConfirmation {
		c, err := d.subscriptionConfirmation(t, j)
		if err != nil {
			d.log.Error("sns: sign confirmation", "err", err)
			return failed
		}
		if body, err = c.JSON(); err != nil {
			d.log.Error("sns: render confirmation", "err", err)
			return failed
		}
		hdr = c.Headers()
	} else {
		n := &Notification{MessageID: j.MessageID, TopicARN: t.ARN}
		if sub.Raw {
			body = []byte(j.Message) // no envelope, nothing to sign
		} else {
			var err error
			if n, err = d.Notification(t, j.message(), j.Message, sub.ARN); err != nil {
				d.log.Error("sns: sign notification", "err", err)
				return failed
			}
			if body, err = n.JSON(); err != nil {
				d.log.Error("sns: render notification", "err", err)
				return failed
			}
		}
		hdr = n.Headers(sub.ARN, t.policyFor(sub.Policy).contentType, sub.Raw)
	}
	return d.post(ctx, sub.Endpoint, hdr, body)
}

// answerKept bounds the part of an endpoint's answer that the delivery
// status log shows.
const answerKept = 1 << 10

// post makes one HTTP/S delivery: an answer counts as answered says; a
// transport error or no answer within the timeout (on the service's
// clock) is retried.
func (d *Service) post(ctx context.Context, endpoint string, hdr http.Header, body []byte) attemptResult {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// An I/O timeout: it runs on the wall clock under a controlled clock,
	// whose steps wait for the attempt (clock.WallOf).
	timer := clock.WallOf(d.clock).AfterFunc(httpTimeout, func() { cancel(errHTTPTimeout) })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return attemptResult{outcome: permanent, answer: "Invalid endpoint URL"}
	}
	req.Header = hdr
	resp, err := d.client.Do(req)
	if err != nil {
		d.log.Debug("sns: HTTP delivery failed", "endpoint", MaskEndpoint(endpoint), "err", err)
		// The URL may hold credentials: the answer names the cause only.
		why := err
		if cause := context.Cause(ctx); cause != nil {
			why = cause
		} else if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			why = uerr.Err
		}
		return attemptResult{outcome: retryable, answer: why.Error()}
	}
	kept, _ := io.ReadAll(io.LimitReader(resp.Body, answerKept))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	res := answered(resp.StatusCode, string(kept))
	if res.outcome != delivered {
		d.log.Debug("sns: HTTP delivery refused", "endpoint", MaskEndpoint(endpoint), "status", resp.StatusCode)
	}
	return res
}

// answered is how an HTTP/S delivery the endpoint answered with status
// went: 200–499 is delivered (SNS counts a 4xx as the endpoint's answer),
// anything else is retried.
func answered(status int, answer string) attemptResult {
	res := attemptResult{outcome: retryable, status: status, answer: answer}
	if status >= 200 && status < 500 {
		res.outcome = delivered
	}
	return res
}

// errHTTPTimeout ends an HTTP/S delivery the endpoint does not answer.
var errHTTPTimeout = errors.New("no answer within 15 seconds")

// deadLetterCopy is a given-up job in the form the subscriber would have
// received it: the raw message with its attributes as SQS attributes, or
// the envelope, with its FIFO ids (SQS drops the deduplication id for a
// standard queue; a standard topic's group reaches SQS subscriptions only,
// sns.md §Publish). It goes to the dead-letter queue as it is, even if SQS
// would refuse it from a publish (more attributes than SQS carries).
func (d *Service) deadLetterCopy(t *Topic, sub *Subscription, j *job) (engine.NewMessage, error) {
	var nm engine.NewMessage
	if sub.Raw || sub.Protocol == ProtoEmail {
		nm, _ = d.sqs.Message(j.Message, AttrList(j.Attributes), SenderID)
	} else {
		n, err := d.Notification(t, j.message(), j.Message, sub.ARN)
		if err != nil {
			return engine.NewMessage{}, err
		}
		body, err := n.JSON()
		if err != nil {
			return engine.NewMessage{}, err
		}
		nm, _ = d.sqs.Message(string(body), nil, SenderID)
	}
	if t.FIFO || sub.Protocol == ProtoSQS {
		nm.MessageGroupID, nm.DeduplicationID = j.Group, j.Dedup
	}
	return nm, nil
}

// Unsubscribed tells an HTTP/S endpoint that sub, of topic t, was
// unsubscribed, once and in the background: a lost
// UnsubscribeConfirmation is not retried. Its token restores the
// subscription.
func (d *Service) Unsubscribed(t *Topic, sub *Subscription) {
	c, err := d.confirmation(t, TypeUnsubscribeConfirmation, uuid.NewString(), sub.Token, sub.ARN, d.now())
	if err != nil {
		d.log.Error("sns: sign unsubscribe confirmation", "err", err)
		return
	}
	body, err := c.JSON()
	if err != nil {
		d.log.Error("sns: render unsubscribe confirmation", "err", err)
		return
	}
	endpoint, subARN := sub.Endpoint, sub.ARN
	d.bg.wg.Add(1)
	go func() {
		defer d.bg.wg.Done()
		if d.post(d.bg.ctx, endpoint, c.Headers(), body).outcome != delivered {
			d.log.Info("sns: unsubscribe confirmation not delivered", "subscription", subARN)
		}
	}()
}
