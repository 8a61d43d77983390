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

// awsManagedAttempts is how many attempts the AWS-managed delivery policy
// of SQS, Lambda and Firehose makes: 3 immediate, 2 a second apart, 10 in
// backoff, 100,000 20 s apart (sns-message-delivery-retries); SMS and
// mobile push follow customerManaged.
const awsManagedAttempts = 100_015

// Faulted is what the fault rules make of delivering a message to a
// subscription SNS serves at once rather than through a delivery queue
// (an SQS queue, a recorded protocol). An attempt the endpoint answers
// 2xx or 3xx is delivered; a 4xx is a client-side error, not retried; a
// 5xx or a timeout is a server-side error, retried at once (Ferry keeps
// no timers for these deliveries) up to the attempts of the protocol's
// policy. Copies is how many reach the endpoint (0: dropped, 2:
// duplicated); Refused is true when the delivery failed for good and is
// given up (the subscription's dead-letter queue), Status then its last
// answer.
type Faulted struct {
	Copies  int
	Refused bool
	Status  int
	Answer  string
}

// FaultsActive reports whether any fault rule is in force, so that a
// fan-out spares the cost of asking Fault when none is.
func (d *Service) FaultsActive() bool { return d.faults.Active() }

// Fault decides Faulted for message id to sub.
func (d *Service) Fault(sub *Subscription, id string) Faulted {
	attempts := awsManagedAttempts
	switch sub.Protocol {
	case ProtoSMS, ProtoApplication:
		attempts = customerManaged.Retries + 1
	}
	for n := 1; n <= attempts; n++ {
		f := d.faults.SNS(faults.SNSEvent{Subscription: sub.ARN, Endpoint: sub.Endpoint, Protocol: sub.Protocol, MessageID: id, Attempt: n})
		switch f.Kind {
		case "":
			return Faulted{Copies: 1}
		case faults.KindDrop:
			return Faulted{Copies: 0}
		case faults.KindDuplicate:
			return Faulted{Copies: 2}
		case faults.KindClientError:
			return Faulted{Refused: true, Status: http.StatusBadRequest, Answer: faultAnswer(f)}
		case faults.KindStatus:
			switch {
			case f.Status >= 200 && f.Status < 400:
				return Faulted{Copies: 1}
			case f.Status >= 400 && f.Status < 500:
				return Faulted{Refused: true, Status: f.Status, Answer: faultAnswer(f)}
			}
		}
		if n == attempts {
			return Faulted{Refused: true, Status: f.Status, Answer: faultAnswer(f)}
		}
	}
	return Faulted{Copies: 1}
}

// GiveUp puts m, which sub's endpoint failed for good, into the
// subscription's dead-letter queue, if it has one, as Redrive does.
func (d *Service) GiveUp(ctx context.Context, t *Topic, sub *Subscription, m *Message, count func(Counter, int)) error {
	j := newJob(sub, m)
	nm, err := d.deadLetterCopy(t, sub, &j)
	if err != nil {
		return err
	}
	d.Redrive(ctx, sub, []engine.NewMessage{nm}, 1, count)
	return nil
}
