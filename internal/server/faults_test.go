package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// withFaults turns fault injection on, under seed.
func withFaults(seed uint64) option {
	return func(c *server.Config) {
		c.FaultInjection = true
		c.FaultSeed = &seed
	}
}

// sqsRetries makes the topic name (FIFO when name ends in .fifo) with a
// raw SQS subscription, with attrs besides, to the queue name-q, and puts
// the fault rules on the subscription, each the fields of a rule past its
// "subscription". It returns the topic, the queue's URL and the
// subscription.
func (f *ferry) sqsRetries(t testing.TB, name string, attrs map[string]string, rules ...string) (topic, qURL, sub string) {
	t.Helper()
	base, fifo := strings.CutSuffix(name, ".fifo")
	queue := base + "-q"
	var topicAttrs, queueAttrs map[string]string
	if fifo {
		queue += ".fifo"
		topicAttrs = map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"}
		queueAttrs = map[string]string{"FifoQueue": "true"}
	}
	topic = f.createTopic(t, name, topicAttrs)
	qURL = f.createQueue(t, queue, queueAttrs)
	subAttrs := map[string]string{"RawMessageDelivery": "true"}
	maps.Copy(subAttrs, attrs)
	sub = f.subscribe(t, topic, "sqs", arnPrefix+queue, subAttrs)
	for _, r := range rules {
		f.addFault(t, `{"subscription":"`+sub+`",`+r+`}`)
	}
	return topic, qURL, sub
}

// waitInjected waits until the first fault rule has fired n times.
func (f *ferry) waitInjected(t testing.TB, what string, n int64) {
	t.Helper()
	testwait.Eventually(t, what, func() bool { return f.faultListing(t).Rules[0].Injected == n })
}

// faultCall sends a request to /_ferry/faults[/id] with body, if any.
func (f *ferry) faultCall(t testing.TB, method, suffix, body string) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.AdminURL()+"/_ferry/faults"+suffix, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// addFault adds a rule and returns its id.
func (f *ferry) addFault(t testing.TB, rule string) string {
	t.Helper()
	r := f.faultCall(t, "POST", "", rule)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /_ferry/faults %s: %d %s", rule, r.Status, r.Body)
	}
	var st faults.RuleState
	if err := json.Unmarshal([]byte(r.Body), &st); err != nil || st.ID == "" {
		t.Fatalf("POST /_ferry/faults answered %s (%v)", r.Body, err)
	}
	return st.ID
}

// faultListing is GET /_ferry/faults.
func (f *ferry) faultListing(t testing.TB) faults.Listing {
	t.Helper()
	r := f.faultCall(t, "GET", "", "")
	var l faults.Listing
	if r.Status != 200 || json.Unmarshal([]byte(r.Body), &l) != nil {
		t.Fatalf("GET /_ferry/faults: %d %s", r.Status, r.Body)
	}
	return l
}

// TestFaultsOff: without --fault-injection every fault path answers 404,
// saying how to turn it on, and no action is wrapped.
func TestFaultsOff(t *testing.T) {
	t.Parallel()
	f := start(t)
	for _, c := range []struct{ method, suffix, body string }{
		{"GET", "", ""}, {"POST", "", `{"queue":"q","error":"RequestThrottled"}`}, {"DELETE", "", ""}, {"DELETE", "/f1", ""},
	} {
		r := f.faultCall(t, c.method, c.suffix, c.body)
		if r.Status != 404 || !strings.Contains(r.Body, `"error":"fault injection is off; start Ferry with --fault-injection (FERRY_FAULT_INJECTION)"`) {
			t.Errorf("%s /_ferry/faults%s: %d %s", c.method, c.suffix, r.Status, r.Body)
		}
	}
	if f.srv.Faults() != nil {
		t.Error("a fault set without --fault-injection")
	}
}

// TestFaultRulesAPI: rules are checked strictly, listed with their counts
// and the seed, and removed one by one or all at once.
func TestFaultRulesAPI(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(99))
	bad := []struct{ body, want string }{
		{`{"queue":"q","action":"ReceiveMessages","error":"RequestThrottled"}`, `action \"ReceiveMessages\" is not an SQS action`},
		{`{"queue":"q","error":"Throttling"}`, `error \"Throttling\" is not an SQS error code`},
		{`{"queue":"q","error":"RequestThrottled","fraction":1.5}`, "fraction 1.5: want a probability from 0 to 1"},
		{`{"queue":"q","error":"RequestThrottled","colour":"red"}`, `unknown field \"colour\"`},
		{`{"id":"f7","queue":"q","error":"RequestThrottled"}`, "id is given by Ferry"},
		{`{"protocol":"http"}`, "an SNS rule needs one effect"},
		{`not json`, "a fault rule is a JSON object"},
	}
	for _, b := range bad {
		if r := f.faultCall(t, "POST", "", b.body); r.Status != 400 || !strings.Contains(r.Body, b.want) {
			t.Errorf("POST %s: %d %s, want 400 with %q", b.body, r.Status, r.Body, b.want)
		}
	}
	a := f.addFault(t, `{"queue":"q","action":"sends","error":"RequestThrottled","count":2}`)
	b := f.addFault(t, `{"protocol":"http","status":503,"fraction":0.25,"seed":5}`)
	l := f.faultListing(t)
	if l.Seed != 99 || len(l.Rules) != 2 || l.Rules[0].ID != a || *l.Rules[0].Remaining != 2 || l.Rules[1].EffectiveSeed != 5 {
		t.Errorf("listing %+v", l)
	}
	if r := f.faultCall(t, "DELETE", "/"+a, ""); r.Status != 200 {
		t.Errorf("DELETE %s: %d %s", a, r.Status, r.Body)
	}
	if r := f.faultCall(t, "DELETE", "/"+a, ""); r.Status != 404 || !strings.Contains(r.Body, "no fault rule") {
		t.Errorf("DELETE %s again: %d %s", a, r.Status, r.Body)
	}
	if r := f.faultCall(t, "DELETE", "", ""); r.Status != 200 || !strings.Contains(r.Body, `"removed":1`) {
		t.Errorf("DELETE all: %d %s", r.Status, r.Body)
	}
	if l := f.faultListing(t); len(l.Rules) != 0 {
		t.Errorf("%s left after DELETE: %+v", b, l)
	}
}

// TestFaultReceives: the next two receives of a queue fail with the
// chosen error, exactly as AWS sends it in either protocol, and the third
// gets the message.
func TestFaultReceives(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(1))
	ctx := ctxT(t)
	url := f.createQueue(t, "flaky-receives", nil)
	other := f.createQueue(t, "steady", nil)
	for _, u := range []string{url, other} {
		if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	id := f.addFault(t, `{"queue":"flaky-receives","action":"ReceiveMessage","error":"OverLimit","count":2}`)

	// Other queues and actions go on.
	if out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(other)}); err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive from another queue: %v", err)
	}
	if _, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("another action: %v", err)
	}
	_, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	wantAPIError(t, err, "OverLimit", 403)
	var ol *types.OverLimit
	if !errors.As(err, &ol) {
		t.Errorf("the SDK did not decode its modeled OverLimit: %T %v", err, err)
	}
	// The wire, by hand: AWS's __type and x-amzn-query-error.
	r := f.postJSON(t, "ReceiveMessage", `{"QueueUrl":"`+url+`"}`)
	if r.Status != 403 || r.Header.Get("X-Amzn-Query-Error") != "OverLimit;Sender" || !strings.Contains(r.Body, `"__type":"com.amazonaws.sqs#OverLimit"`) {
		t.Errorf("JSON wire: %d %v %s", r.Status, r.Header, r.Body)
	}
	out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "hello" {
		t.Fatalf("third receive: %v %+v", err, out)
	}
	if st := f.faultListing(t).Rules[0]; st.ID != id || st.Matched != 3 || st.Injected != 2 || *st.Remaining != 0 {
		t.Errorf("rule after three receives: %+v", st)
	}

	// The query protocol, with an error that has a legacy code.
	f.addFault(t, `{"queue":"`+url+`","action":"receives","error":"QueueDoesNotExist","count":1}`)
	_, err = f.query.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: awsv1.String(url)})
	if rf, ok := err.(awserr.RequestFailure); !ok || rf.Code() != "AWS.SimpleQueueService.NonExistentQueue" || rf.StatusCode() != 400 ||
		rf.Message() != "The specified queue does not exist for this wsdl version." {
		t.Errorf("query protocol: %v", err)
	}
	if _, err := f.query.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: awsv1.String(url)}); err != nil {
		t.Errorf("query receive after the rule: %v", err)
	}
	if body := scrape(t, f); !strings.Contains(body, `ferry_faults_injected_total{kind="error",service="sqs"} 3`) {
		t.Errorf("/metrics lacks the three errors:\n%s", grepLines(body, "ferry_faults"))
	}
}

func grepLines(body, word string) string {
	var keep []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, word) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestFaultFractionReplays: a fraction under one seed makes the same
// decisions on the same events, on another server as after a clear.
func TestFaultFractionReplays(t *testing.T) {
	t.Parallel()
	rule := `{"queue":"dice","action":"sends","error":"RequestThrottled","fraction":0.4}`
	run := func(f *ferry, url string) string {
		f.addFault(t, rule)
		var b strings.Builder
		for i := range 40 {
			_, err := f.json.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))})
			switch {
			case err == nil:
				b.WriteByte('.')
			case strings.Contains(err.Error(), "RequestThrottled"):
				b.WriteByte('x')
			default:
				t.Fatalf("send %d: %v", i, err)
			}
		}
		f.faultCall(t, "DELETE", "", "")
		return b.String()
	}
	a := start(t, withFaults(2024))
	b := start(t, withFaults(2024))
	ua, ub := a.createQueue(t, "dice", nil), b.createQueue(t, "dice", nil)
	first := run(a, ua)
	if again := run(a, ua); again != first {
		t.Errorf("after a clear:\n%s\n%s", first, again)
	}
	if other := run(b, ub); other != first {
		t.Errorf("another server, same seed:\n%s\n%s", first, other)
	}
	if n := strings.Count(first, "x"); n == 0 || n == 40 {
		t.Errorf("a fraction of 0.4 failed %d of 40: %s", n, first)
	}
	c := start(t, withFaults(7))
	if other := run(c, c.createQueue(t, "dice", nil)); other == first {
		t.Errorf("another seed, the same decisions: %s", first)
	}
}

// TestFaultThrottledSend: RequestThrottled is what the SDKs retry as
// throttling. With retries off the caller sees it; with the SDK's
// retryer the send succeeds on its second attempt, and only the rule's
// counts show the throttle.
func TestFaultThrottledSend(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(3))
	url := f.createQueue(t, "busy", nil)
	f.addFault(t, `{"queue":"busy","action":"sends","error":"RequestThrottled","count":1}`)
	_, err := f.json.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("no retry")})
	wantAPIError(t, err, "RequestThrottled", 403)

	f.addFault(t, `{"queue":"busy","action":"sends","error":"RequestThrottled","count":1}`)
	retrying := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(f.srv.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider(harnessKey, harnessSecret, ""),
		HTTPClient:   sdkHTTP,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
	if _, err := retrying.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("retried")}); err != nil {
		t.Fatalf("the SDK's retryer did not ride out the throttle: %v", err)
	}
	st := f.faultListing(t).Rules[1]
	if st.Matched != 2 || st.Injected != 1 {
		t.Errorf("rule %+v: want the throttled attempt and the retry", st)
	}
	m := f.receiveOne(t, url)
	if aws.ToString(m.Body) != "retried" {
		t.Errorf("queue holds %q", aws.ToString(m.Body))
	}
}

// TestFaultDelay: a delayed action waits on the server's clock, then
// runs.
func TestFaultDelay(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(4))
	url := f.createQueue(t, "slow", nil)
	f.addFault(t, `{"queue":"slow","action":"GetQueueAttributes","delay":"30s","count":1}`)
	done := make(chan error, 1)
	go func() {
		_, err := f.json.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)})
		done <- err
	}()
	f.waitPending(t, 1)
	select {
	case err := <-done:
		t.Fatalf("answered before the delay: %v", err)
	default:
	}
	f.clk.Advance(30 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if body := scrape(t, f); !strings.Contains(body, `ferry_faults_injected_total{kind="delay",service="sqs"} 1`) {
		t.Errorf("/metrics:\n%s", grepLines(body, "ferry_faults"))
	}
}

// TestFaultSNSHTTP: injected answers of an HTTP endpoint go through the
// delivery policy as real ones do.
func TestFaultSNSHTTP(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(5))
	topic := f.createTopic(t, "faulty", nil)
	dlqURL := f.createQueue(t, "faulty-dlq", nil)
	redrive := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `faulty-dlq"}`}
	svc := f.srv.SNS()
	counters := func(sub string) string {
		c, _ := svc.SubscriptionCounters(sub)
		return fmt.Sprintf("delivered %d failed %d dlq %d", c.Delivered, c.Failed, c.RedrivenToDLQ)
	}
	publish := func(text string) string {
		return aws.ToString(f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(text)}).MessageId)
	}
	unsubscribe := func(sub string) {
		f.sns.Unsubscribe(ctxT(t), &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
		f.faultCall(t, "DELETE", "", "")
	}

	t.Run("500 is retried", func(t *testing.T) {
		e := newEndpoint(t, f, always(200))
		sub := f.confirmHTTP(t, topic, e, redrive)
		f.addFault(t, `{"subscription":"`+sub+`","status":500,"count":1}`)
		id := publish("first fails")
		testwait.Eventually(t, "the failed attempt", f.failedAtLeast(sub, 1))
		if e.count() != 1 {
			t.Fatalf("the endpoint saw the failed attempt")
		}
		if w := f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 2 }); w < 18*time.Second || w > 22*time.Second {
			t.Errorf("retry after %v, want the policy's 20 s", w)
		}
		if got := e.get(1).header.Get("X-Amz-Sns-Message-Id"); got != id {
			t.Errorf("retry carries %s", got)
		}
		testwait.Eventually(t, "delivered 1 failed 1", func() bool { return counters(sub) == "delivered 1 failed 1 dlq 0" })
		unsubscribe(sub)
	})

	t.Run("403 is the endpoint's answer: not retried", func(t *testing.T) {
		e := newEndpoint(t, f, always(200))
		sub := f.confirmHTTP(t, topic, e, redrive)
		f.addFault(t, `{"endpoint":"`+e.srv.URL+`/hook","status":403}`)
		publish("refused")
		testwait.Eventually(t, "delivered", func() bool { return counters(sub) == "delivered 1 failed 0 dlq 0" })
		f.deliveriesDone(t)
		f.clk.Advance(time.Minute)
		f.deliveriesDone(t)
		if e.count() != 1 || counters(sub) != "delivered 1 failed 0 dlq 0" {
			t.Errorf("%d requests, %s", e.count(), counters(sub))
		}
		unsubscribe(sub)
	})

	t.Run("a client-side error is not retried and goes to the DLQ", func(t *testing.T) {
		e := newEndpoint(t, f, always(200))
		sub := f.confirmHTTP(t, topic, e, redrive)
		f.addFault(t, `{"subscription":"`+sub+`","clientError":true,"count":1}`)
		id := publish("gone")
		m := testwait.Some(t, "the DLQ copy", func() []types.Message { return f.receiveAll(t, dlqURL, 1) })[0]
		if env := parseEnvelope(t, aws.ToString(m.Body)); env.str("MessageId") != id {
			t.Errorf("DLQ holds %s", aws.ToString(m.Body))
		}
		f.json.DeleteMessage(ctxT(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle})
		testwait.Eventually(t, "failed 1 dlq 1", func() bool { return counters(sub) == "delivered 0 failed 1 dlq 1" })
		f.deliveriesDone(t)
		if e.count() != 1 {
			t.Errorf("%d requests: the endpoint saw the failed delivery", e.count())
		}
		unsubscribe(sub)
	})

	t.Run("succeed after 2", func(t *testing.T) {
		e := newEndpoint(t, f, always(200))
		sub := f.confirmHTTP(t, topic, e, redrive)
		f.addFault(t, `{"subscription":"`+sub+`","succeedAfter":2,"status":502}`)
		publish("third time lucky")
		testwait.Eventually(t, "the first failure", f.failedAtLeast(sub, 1))
		f.advanceUntil(t, time.Minute, f.failedAtLeast(sub, 2))
		f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 2 })
		testwait.Eventually(t, "delivered 1 failed 2", func() bool { return counters(sub) == "delivered 1 failed 2 dlq 0" })
		if st := f.faultListing(t).Rules[0]; st.Injected != 2 || st.Matched != 3 {
			t.Errorf("rule %+v", st)
		}
		unsubscribe(sub)
	})

	t.Run("drop and duplicate", func(t *testing.T) {
		e := newEndpoint(t, f, always(200))
		sub := f.confirmHTTP(t, topic, e, redrive)
		f.addFault(t, `{"protocol":"http","drop":true,"count":1}`)
		f.addFault(t, `{"protocol":"http","duplicate":true,"count":1}`)
		publish("lost")
		testwait.Eventually(t, "the drop counted delivered", func() bool { return counters(sub) == "delivered 1 failed 0 dlq 0" })
		id := publish("twice")
		e.waitHits(3)
		for _, i := range []int{1, 2} {
			if got := e.get(i).header.Get("X-Amz-Sns-Message-Id"); got != id {
				t.Errorf("request %d carries %s, want %s", i, got, id)
			}
		}
		testwait.Eventually(t, "delivered 2", func() bool { return counters(sub) == "delivered 2 failed 0 dlq 0" })
		f.deliveriesDone(t)
		if e.count() != 3 {
			t.Errorf("%d requests, want the confirmation and two copies", e.count())
		}
		unsubscribe(sub)
	})

	body := scrape(t, f)
	for _, want := range []string{
		`ferry_faults_injected_total{kind="status",service="sns"} 4`,
		`ferry_faults_injected_total{kind="client_error",service="sns"} 1`,
		`ferry_faults_injected_total{kind="drop",service="sns"} 1`,
		`ferry_faults_injected_total{kind="duplicate",service="sns"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(body, "ferry_faults"))
		}
	}
}

// TestFaultSNSTimeout: an injected timeout waits the delivery timeout on
// the clock, then fails as a real one does, and the retry goes through.
func TestFaultSNSTimeout(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(6))
	topic := f.createTopic(t, "sleepy", nil)
	e := newEndpoint(t, f, always(200))
	sub := f.confirmHTTP(t, topic, e, nil)
	f.addFault(t, `{"subscription":"`+sub+`","timeout":true,"count":1}`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("late")})
	f.waitingDeliveries(t, 1) // the attempt waits out the timeout
	if e.count() != 1 {
		t.Fatal("the endpoint saw the attempt that times out")
	}
	if w := f.advanceUntil(t, time.Minute, f.failedAtLeast(sub, 1)); w != 15*time.Second {
		t.Errorf("timed out after %v, want the delivery timeout, 15 s", w)
	}
	f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 2 })
	testwait.Eventually(t, "delivered", func() bool { c, _ := f.srv.SNS().SubscriptionCounters(sub); return c.Delivered == 1 && c.Failed == 1 })
	if body := scrape(t, f); !strings.Contains(body, `ferry_faults_injected_total{kind="timeout",service="sns"} 1`) {
		t.Errorf("/metrics lacks the timeout:\n%s", grepLines(body, "ferry_faults"))
	}
}

// TestFaultSNSToSQS: SNS's deliveries to queues take the faults as SNS
// meets them there: a lost copy, a doubled one, a refusal to the DLQ.
func TestFaultSNSToSQS(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(8))
	topic := f.createTopic(t, "to-queues", nil)
	qURL := f.createQueue(t, "subscriber", nil)
	dlqURL := f.createQueue(t, "subscriber-dlq", nil)
	sub := f.subscribe(t, topic, "sqs", arnPrefix+"subscriber", map[string]string{"RawMessageDelivery": "true",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `subscriber-dlq"}`})
	publish := func(text string) {
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(text)})
	}
	f.addFault(t, `{"subscription":"`+sub+`","drop":true,"count":1}`)
	publish("dropped")
	f.addFault(t, `{"endpoint":"`+arnPrefix+`subscriber","duplicate":true,"count":1}`)
	publish("doubled")
	f.addFault(t, `{"protocol":"sqs","status":403,"count":1}`)
	publish("refused")
	f.addFault(t, `{"protocol":"sqs","succeedAfter":3,"count":1}`)
	publish("retried")
	// The retries come from the subscription's retry queue, after the
	// publish.
	testwait.Eventually(t, "the retried message delivered", func() bool {
		c, _ := f.srv.SNS().SubscriptionCounters(sub)
		return c.Delivered == 3
	})

	got := map[string]int{}
	for _, m := range f.receiveAll(t, qURL, 10) {
		got[aws.ToString(m.Body)]++
	}
	if fmt.Sprint(got) != "map[doubled:2 retried:1]" {
		t.Errorf("queue holds %v", got)
	}
	if m := f.receiveAll(t, dlqURL, 10); len(m) != 1 || aws.ToString(m[0].Body) != "refused" {
		t.Errorf("DLQ holds %v", m)
	}
	c, _ := f.srv.SNS().SubscriptionCounters(sub)
	// The drop counts as delivered, the duplicate once.
	if c.Delivered != 3 || c.Failed != 1 || c.RedrivenToDLQ != 1 {
		t.Errorf("counters %+v", c)
	}
}

// TestFaultSNSRetriesSurviveRestart: an at-once delivery's retries are
// in the store, and the restarted server's worker makes the fifth attempt
// on its clock.
func TestFaultSNSRetriesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := start(t, onDisk(dir), withFaults(5))
	topic, qURL, _ := f.sqsRetries(t, "kept-retries", nil, `"status":500,"count":4`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("kept")})
	f.waitInjected(t, "four attempts to fail", 4)
	now := f.clk.Now()
	stop(t, f)

	f2 := start(t, storeWith(t, dir, func(o *embedded.Options) { o.DiskReserve = -1 }))
	if n := f2.visible(t, qURL); n != 0 {
		t.Fatalf("%d messages in the queue before the fifth attempt is due", n)
	}
	// The fifth attempt is due a second (± 10 %) after the fourth.
	f2.clk.Set(now.Add(2 * time.Second))
	testwait.Eventually(t, "the fifth attempt to deliver", func() bool { return f2.visible(t, qURL) == 1 })
	if got := bodies(f2.receiveAll(t, qURL, 10)); got != "kept" {
		t.Errorf("the queue holds %q", got)
	}
}

// TestFaultSNSRetryToFIFODeadLetter: a FIFO subscription's retried
// delivery that a later attempt fails client-side goes to its FIFO
// dead-letter queue with its group.
func TestFaultSNSRetryToFIFODeadLetter(t *testing.T) {
	t.Parallel()
	f := start(t, withFaults(6))
	dlqURL := f.createQueue(t, "retry-dlq-dead.fifo", map[string]string{"FifoQueue": "true"})
	topic, _, _ := f.sqsRetries(t, "retry-dlq.fifo", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `retry-dlq-dead.fifo"}`},
		`"status":500,"count":1`, `"status":403,"count":1`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("given up"), MessageGroupId: aws.String("g")})
	testwait.Eventually(t, "the dead-letter queue to get the message", func() bool { return f.visible(t, dlqURL) == 1 })
	m := f.receiveAll(t, dlqURL, 10)
	if bodies(m) != "given up" || m[0].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != "g" {
		t.Errorf("the dead-letter queue holds %q, group %q", bodies(m), m[0].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)])
	}
}
