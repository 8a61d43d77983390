package sns

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// jobMessage turns a queued notification back into the message it was.
func jobMessage(j *job) *message {
	return &message{id: j.MessageID, body: j.Message, subject: j.Subject, timestamp: j.Timestamp, attrs: j.Attributes, sequence: j.Sequence}
}

// attemptResult is how one delivery attempt went, and what the endpoint
// answered (for the delivery status log).
type attemptResult struct {
	outcome outcome
	status  int    // the HTTP status; 0 when none came
	answer  string // the start of the answer's body, or why none came
}

// attempt delivers a queued job once.
func (s *Service) attempt(ctx context.Context, t *topic, sub *subscription, j *job) attemptResult {
	switch sub.Protocol {
	case protoHTTP, protoHTTPS:
		return s.attemptHTTP(ctx, t, sub, j)
	case protoEmail, protoEmailJSON:
		return attemptResult{outcome: s.attemptEmail(ctx, t, sub, j)}
	}
	return attemptResult{outcome: permanent}
}

// confirmation builds the SubscriptionConfirmation of a queued job.
func (s *Service) confirmation(t *topic, j *job) (*Confirmation, error) {
	signer, certURL, err := s.signer()
	if err != nil {
		return nil, err
	}
	c := &Confirmation{
		Type:             TypeSubscriptionConfirmation,
		MessageID:        j.MessageID,
		Token:            j.Token,
		TopicARN:         t.ARN,
		SubscribeURL:     s.subscribeURL(t.ARN, j.Token),
		Timestamp:        j.Timestamp,
		SignatureVersion: t.signatureVersion(),
		SigningCertURL:   certURL,
	}
	if err := c.Sign(signer); err != nil {
		return nil, err
	}
	return c, nil
}

func (s *Service) attemptHTTP(ctx context.Context, t *topic, sub *subscription, j *job) attemptResult {
	failed := attemptResult{outcome: permanent}
	var (
		body []byte
		hdr  http.Header
	)
	if j.Type == TypeSubscriptionConfirmation {
		c, err := s.confirmation(t, j)
		if err != nil {
			s.log.Error("sns: sign confirmation", "err", err)
			return failed
		}
		if body, err = c.JSON(); err != nil {
			s.log.Error("sns: render confirmation", "err", err)
			return failed
		}
		hdr = c.Headers()
	} else {
		raw := sub.raw()
		n := &Notification{MessageID: j.MessageID, TopicARN: t.ARN}
		if raw {
			body = []byte(j.Message) // no envelope, nothing to sign
		} else {
			var err error
			if n, err = s.notification(t, jobMessage(j), j.Message, sub.ARN); err != nil {
				s.log.Error("sns: sign notification", "err", err)
				return failed
			}
			if body, err = n.JSON(); err != nil {
				s.log.Error("sns: render notification", "err", err)
				return failed
			}
		}
		hdr = n.Headers(sub.ARN, s.deliveryPolicy(sub).contentType, raw)
	}
	return s.post(ctx, sub.Endpoint, hdr, body)
}

// answerKept bounds the part of an endpoint's answer that the delivery
// status log shows.
const answerKept = 1 << 10

// post makes one HTTP/S delivery: 200–499 is delivered (SNS counts a 4xx
// as the endpoint's answer), anything else, a transport error or no
// answer within the timeout (on the service's clock) is retried.
func (s *Service) post(ctx context.Context, endpoint string, hdr http.Header, body []byte) attemptResult {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := s.clock.AfterFunc(httpTimeout, func() { cancel(errHTTPTimeout) })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return attemptResult{outcome: permanent, answer: "Invalid endpoint URL"}
	}
	req.Header = hdr
	resp, err := s.client.Do(req)
	if err != nil {
		s.log.Debug("sns: HTTP delivery failed", "endpoint", maskEndpoint(endpoint), "err", err)
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
	res := attemptResult{outcome: retryable, status: resp.StatusCode, answer: string(kept)}
	if resp.StatusCode >= 200 && resp.StatusCode < 500 {
		res.outcome = delivered
		return res
	}
	s.log.Debug("sns: HTTP delivery refused", "endpoint", maskEndpoint(endpoint), "status", resp.StatusCode)
	return res
}

// errHTTPTimeout ends an HTTP/S delivery the endpoint does not answer.
var errHTTPTimeout = errors.New("no answer within 15 seconds")

// deadLetterCopy is a given-up job in the form the subscriber would have
// received it: the raw message with its attributes as SQS attributes, or
// the envelope. It goes to the dead-letter queue as it is, even if SQS
// would refuse it from a publish (more attributes than SQS carries).
func (s *Service) deadLetterCopy(t *topic, sub *subscription, j *job) (engine.NewMessage, error) {
	if sub.raw() || sub.Protocol == protoEmail {
		nm, _ := s.sqs.Message(j.Message, attrList(j.Attributes), snsSenderID)
		return nm, nil
	}
	n, err := s.notification(t, jobMessage(j), j.Message, sub.ARN)
	if err != nil {
		return engine.NewMessage{}, err
	}
	body, err := n.JSON()
	if err != nil {
		return engine.NewMessage{}, err
	}
	nm, _ := s.sqs.Message(string(body), nil, snsSenderID)
	return nm, nil
}

// sendUnsubscribeConfirmation tells an HTTP/S endpoint it was unsubscribed,
// once and in the background: a lost UnsubscribeConfirmation is not
// retried.
func (s *Service) sendUnsubscribeConfirmation(sub *subscription) {
	s.mu.RLock()
	t := s.topics[sub.TopicARN]
	s.mu.RUnlock()
	if t == nil {
		return
	}
	signer, certURL, err := s.signer()
	if err != nil {
		s.log.Error("sns: sign unsubscribe confirmation", "err", err)
		return
	}
	c := &Confirmation{
		Type:             TypeUnsubscribeConfirmation,
		MessageID:        newID(),
		Token:            sub.Token,
		TopicARN:         t.ARN,
		SubscriptionARN:  sub.ARN,
		SubscribeURL:     s.subscribeURL(t.ARN, sub.Token),
		Timestamp:        s.clock.Now().UTC(),
		SignatureVersion: t.signatureVersion(),
		SigningCertURL:   certURL,
	}
	if err := c.Sign(signer); err != nil {
		s.log.Error("sns: sign unsubscribe confirmation", "err", err)
		return
	}
	body, err := c.JSON()
	if err != nil {
		s.log.Error("sns: render unsubscribe confirmation", "err", err)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if s.post(s.ctx, sub.Endpoint, c.Headers(), body).outcome != delivered {
			s.log.Info("sns: unsubscribe confirmation not delivered", "subscription", sub.ARN)
		}
	}()
}

// timeNow is the service's time, for deliveries recorded now.
func (s *Service) timeNow() time.Time { return s.clock.Now().UTC() }
