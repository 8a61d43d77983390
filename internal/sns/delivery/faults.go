package delivery

import (
	"context"
	"net/http"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/faults"
)

// Fault injection (internal/faults) acts on one delivery attempt at a
// time: a status is what the endpoint answered, a timeout is no answer
// within the delivery timeout, and from there the delivery policy, its
// retries and the dead-letter queue go on as for a real failure. A drop
// is a delivery SNS thinks made that the endpoint never sees; a duplicate
// reaches the endpoint twice. A client-side error is not retried.

// faultAnswer is the answer the delivery status log shows for an attempt
// a fault rule decided.
func faultAnswer(f faults.SNSFault) string {
	return "Fault injected by Ferry (rule " + f.Rule + ", " + f.Kind + ")"
}

// attemptFaulty is attempt, number n of job j (delivery wk, whose
// injected timeout is a wait like any other), under the fault rules.
// Confirmations are not faulted: the rules are about notifications.
func (d *Service) attemptFaulty(ctx context.Context, t *Topic, sub *Subscription, j *job, n int, wk *waitKey) attemptResult {
	if j.Type != TypeNotification || !d.faults.Active() {
		return d.attempt(ctx, t, sub, j)
	}
	f := d.faults.SNS(faults.SNSEvent{Subscription: sub.ARN, Endpoint: sub.Endpoint, Protocol: sub.Protocol,
		MessageID: j.MessageID, Attempt: n})
	switch f.Kind {
	case faults.KindStatus:
		return answered(f.Status, faultAnswer(f))
	case faults.KindTimeout:
		if !d.sleep(ctx, httpTimeout, wk) {
			return attemptResult{outcome: retryable, answer: context.Cause(ctx).Error()}
		}
		return attemptResult{outcome: retryable, answer: errHTTPTimeout.Error()}
	case faults.KindDrop:
		return attemptResult{outcome: delivered, status: http.StatusOK, answer: faultAnswer(f)}
	case faults.KindClientError:
		return attemptResult{outcome: permanent, answer: faultAnswer(f)}
	case faults.KindDuplicate:
		first := d.attempt(ctx, t, sub, j)
		d.attempt(ctx, t, sub, j)
		return first
	}
	return d.attempt(ctx, t, sub, j)
}

// Faulted is what the fault rules make of the first attempt to deliver a
// message to a subscription SNS serves at once rather than through a
// delivery queue (an SQS queue, a recorded protocol), or of a retry of it
// (attemptAtOnce). An attempt the endpoint answers 2xx or 3xx is
// delivered; a 4xx is a client-side error, not retried; a 5xx or a
// timeout is a server-side error, which Retry hands to the
// subscription's retry queue. Copies is how many reach the endpoint (0:
// dropped, 2: duplicated); Refused is true when the delivery failed for
// good and is given up (the subscription's dead-letter queue), Retry
// when it is to be tried again; Status and Answer then tell the attempt.
type Faulted struct {
	Copies  int
	Refused bool
	Retry   bool
	Status  int
	Answer  string
}

// FaultsActive reports whether any fault rule is in force, so that a
// fan-out spares the cost of asking Fault when none is.
func (d *Service) FaultsActive() bool { return d.faults.Active() }

// Fault decides Faulted for the first attempt of message id to sub.
func (d *Service) Fault(sub *Subscription, id string) Faulted {
	return d.faultAtOnce(sub, id, 1)
}

// faultAtOnce decides Faulted for attempt n of message id to sub.
func (d *Service) faultAtOnce(sub *Subscription, id string, n int) Faulted {
	f := d.faults.SNS(faults.SNSEvent{Subscription: sub.ARN, Endpoint: sub.Endpoint, Protocol: sub.Protocol, MessageID: id, Attempt: n})
	switch f.Kind {
	case faults.KindDrop:
		return Faulted{Copies: 0, Answer: faultAnswer(f)}
	case faults.KindDuplicate:
		return Faulted{Copies: 2}
	case faults.KindClientError:
		return Faulted{Refused: true, Status: http.StatusBadRequest, Answer: faultAnswer(f)}
	case faults.KindTimeout:
		return Faulted{Retry: true, Answer: faultAnswer(f)}
	case faults.KindStatus:
		switch {
		case f.Status >= 200 && f.Status < 400:
			return Faulted{Copies: 1}
		case f.Status >= 400 && f.Status < 500:
			return Faulted{Refused: true, Status: f.Status, Answer: faultAnswer(f)}
		}
		return Faulted{Retry: true, Status: f.Status, Answer: faultAnswer(f)}
	}
	return Faulted{Copies: 1}
}

// result is a failed Faulted as an attempt's result.
func (f Faulted) result() attemptResult {
	if f.Refused {
		return attemptResult{outcome: permanent, status: f.Status, answer: f.Answer}
	}
	return attemptResult{outcome: retryable, status: f.Status, answer: f.Answer}
}

// GiveUp puts m, which sub's endpoint failed for good, into the
// subscription's dead-letter queue, if it has one, as Redrive does; group
// and dedup are its FIFO ids.
func (d *Service) GiveUp(ctx context.Context, t *Topic, sub *Subscription, m *Message, group, dedup string, count func(Counter, int)) error {
	j := newJob(sub, m)
	j.Group, j.Dedup = group, dedup
	nm, err := d.deadLetterCopy(t, sub, &j)
	if err != nil {
		return err
	}
	d.Redrive(ctx, sub, []engine.NewMessage{nm}, 1, count)
	return nil
}
