package server_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/testwait"
)

// snsTotal is the sum of an AWS/SNS metric of a topic since the start.
func (f *ferry) snsTotal(topic, metric string) float64 {
	t, _ := f.srv.Metrics().Totals(testAccount, metrics.NamespaceSNS, metric, metrics.Topic(topic))
	return t.Sum
}

// wantSNSMetrics checks every AWS/SNS metric of a topic: those not in
// want must be zero.
func (f *ferry) wantSNSMetrics(t *testing.T, topic string, want map[string]float64) {
	t.Helper()
	for _, m := range []string{metrics.MessagesPublished, metrics.PublishSize, metrics.NotificationsDelivered,
		metrics.NotificationsFailed, metrics.NotificationsFilteredOut, metrics.NotificationsFilteredOutMessageAttributes,
		metrics.NotificationsFilteredOutMessageBody, metrics.NotificationsFilteredOutInvalidAttributes,
		metrics.NotificationsFilteredOutNoAttributes, metrics.NotificationsFilteredOutInvalidBody,
		metrics.NotificationsRedrivenToDLQ, metrics.NotificationsFailedToRedriveToDLQ} {
		if got := f.snsTotal(topic, m); got != want[m] {
			t.Errorf("%s %s = %v, want %v", topic, m, got, want[m])
		}
	}
}

// deliveryLogs reads GET /_ferry/sns/delivery-logs.
func (f *ferry) deliveryLogs(t testing.TB) []delivery.Status {
	t.Helper()
	r := do(t, mustRequest(t, "GET", f.srv.URL()+"/_ferry/sns/delivery-logs"))
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET delivery-logs: %d %s", r.Status, r.Body)
	}
	var out []delivery.Status
	if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
		t.Fatalf("delivery logs %s: %v", r.Body, err)
	}
	return out
}

// logsOf keeps the lines of one destination.
func logsOf(ls []delivery.Status, destination string) []delivery.Status {
	var out []delivery.Status
	for _, l := range ls {
		if l.Delivery.Destination == destination {
			out = append(out, l)
		}
	}
	return out
}

func TestSNSMetricsFanoutAndFilters(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "m", nil)
	all := f.createQueue(t, "m-all", nil)
	byAttr := f.createQueue(t, "m-attr", nil)
	byBody := f.createQueue(t, "m-body", nil)
	byNums := f.createQueue(t, "m-nums", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"m-all", map[string]string{"RawMessageDelivery": "true"})
	f.subscribe(t, topic, "sqs", arnPrefix+"m-attr", map[string]string{"FilterPolicy": `{"color":["red"]}`})
	f.subscribe(t, topic, "sqs", arnPrefix+"m-body", map[string]string{"FilterPolicy": `{"kind":["order"]}`, "FilterPolicyScope": "MessageBody"})
	f.subscribe(t, topic, "sqs", arnPrefix+"m-nums", map[string]string{"FilterPolicy": `{"nums":[5]}`})

	numArray := snstypes.MessageAttributeValue{DataType: aws.String("Number.Array"), StringValue: aws.String("5")}
	for _, p := range []struct {
		body  string
		attrs map[string]snstypes.MessageAttributeValue
	}{
		// all, attr, body pass; nums does not match.
		{`{"kind":"order"}`, map[string]snstypes.MessageAttributeValue{"color": strAttr("red")}},
		// all passes; attr and nums: no attributes; body: not JSON.
		{`not json`, nil},
		// all passes; attr and body do not match; nums: a Number.Array
		// that is not an array cannot be filtered.
		{`{"kind":"refund"}`, map[string]snstypes.MessageAttributeValue{"color": strAttr("blue"), "nums": numArray}},
	} {
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(p.body), MessageAttributes: p.attrs})
	}
	for range 3 {
		f.receiveOne(t, all)
	}
	f.receiveOne(t, byAttr)
	f.receiveOne(t, byBody)
	f.wantEmpty(t, byNums)

	// Sizes as SNS counts them: body plus attribute names, types, values.
	size := float64(len(`{"kind":"order"}`)+len("color"+"String"+"red")) + float64(len("not json")) +
		float64(len(`{"kind":"refund"}`)+len("color"+"String"+"blue")+len("nums"+"Number.Array"+"5"))
	f.wantSNSMetrics(t, "m", map[string]float64{
		metrics.MessagesPublished:                         3,
		metrics.PublishSize:                               size,
		metrics.NotificationsDelivered:                    5,
		metrics.NotificationsFilteredOut:                  7,
		metrics.NotificationsFilteredOutMessageAttributes: 5,
		metrics.NotificationsFilteredOutMessageBody:       2,
		metrics.NotificationsFilteredOutNoAttributes:      2,
		metrics.NotificationsFilteredOutInvalidBody:       1,
		metrics.NotificationsFilteredOutInvalidAttributes: 1,
	})
	st := f.srv.Metrics()
	if ps, _ := st.Totals(testAccount, metrics.NamespaceSNS, metrics.PublishSize, metrics.Topic("m")); ps.SampleCount != 3 {
		t.Errorf("PublishSize samples = %v, want 3", ps.SampleCount)
	}
	// One-minute datapoints, stamped with the minute of the publishes.
	dps := st.Datapoints(testAccount, metrics.NamespaceSNS, metrics.NotificationsDelivered, metrics.Topic("m"), epoch.Add(-time.Hour), epoch.Add(time.Hour))
	if len(dps) != 1 || !dps[0].Timestamp.Equal(epoch.Truncate(time.Minute)) || dps[0].Sum != 5 || dps[0].SampleCount != 5 {
		t.Errorf("NumberOfNotificationsDelivered datapoints: %+v", dps)
	}
	c, _ := f.srv.SNS().TopicCounters(topic)
	if c.FilteredOut != 7 || c.FilteredOutInvalidAttributes != 1 || c.Delivered != 5 {
		t.Errorf("counters: %+v", c)
	}

	// SNS deliveries count as sends of the queues they land in: the raw
	// copies weigh what was published.
	for q, want := range map[string]float64{"m-all": 3, "m-attr": 1, "m-body": 1} {
		if got, _ := st.Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue(q)); got.Sum != want {
			t.Errorf("%s NumberOfMessagesSent = %v, want %v", q, got.Sum, want)
		}
	}
	if got, _ := st.Totals(testAccount, metrics.NamespaceSQS, metrics.SentMessageSize, metrics.Queue("m-all")); got.Sum != size || got.SampleCount != 3 {
		t.Errorf("m-all SentMessageSize = %+v, want sum %v of 3", got, size)
	}
	if _, ok := st.Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("m-nums")); ok {
		t.Error("m-nums has sends")
	}

	// Prometheus shows the topic's counters.
	r := do(t, mustRequest(t, "GET", f.srv.URL()+"/metrics"))
	for _, line := range []string{
		`ferry_sns_messages_published_total{account="000000000000",topic="m"} 3`,
		`ferry_sns_notifications_delivered_total{account="000000000000",topic="m"} 5`,
		`ferry_sns_notifications_filtered_out_invalid_attributes_total{account="000000000000",topic="m"} 1`,
		fmt.Sprintf(`ferry_sns_publish_size_bytes_sum{account="000000000000",topic="m"} %v`, size),
		`ferry_sqs_messages_sent_total{account="000000000000",queue="m-all"} 3`,
	} {
		if !strings.Contains(r.Body, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

func TestSNSMetricsHTTPAndDeliveryLogs(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	logged := map[string]string{
		"HTTPSuccessFeedbackRoleArn":    "arn:aws:iam::000000000000:role/SNSSuccessFeedback",
		"HTTPFailureFeedbackRoleArn":    "arn:aws:iam::000000000000:role/SNSFailureFeedback",
		"HTTPSuccessFeedbackSampleRate": "100",
	}

	t.Run("failing, then succeeding", func(t *testing.T) {
		topic := f.createTopic(t, "web", logged)
		e := newEndpoint(t, f, func(n int) int {
			switch n {
			case 0, 3:
				return 200 // the confirmation, then the second retry
			}
			return 503
		})
		sub := f.confirmHTTP(t, topic, e, nil)
		id := aws.ToString(f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("try again")}).MessageId)
		e.waitHits(2)
		testwait.Eventually(t, "the condition", f.failedAtLeast(sub, 1))
		f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 3 })
		testwait.Eventually(t, "the condition", f.failedAtLeast(sub, 2))
		f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 4 })
		testwait.Eventually(t, "the condition", func() bool { return f.snsTotal("web", metrics.NotificationsDelivered) == 1 })
		f.wantSNSMetrics(t, "web", map[string]float64{
			metrics.MessagesPublished:      1,
			metrics.PublishSize:            float64(len("try again")),
			metrics.NotificationsDelivered: 1,
			metrics.NotificationsFailed:    2, // HTTP/S: every failed attempt
		})

		ls := logsOf(f.deliveryLogs(t), e.srv.URL+"/hook")
		if len(ls) != 3 {
			t.Fatalf("%d delivery logs, want 3: %+v", len(ls), ls)
		}
		for i, l := range ls {
			status, group, code := "FAILURE", "sns/us-east-1/000000000000/web/Failure", 503
			if i == 2 {
				status, group, code = "SUCCESS", "sns/us-east-1/000000000000/web", 200
			}
			n := l.Notification
			d := l.Delivery
			if l.Status != status || l.LogGroup != group || d.StatusCode != code || d.Attempts != i+1 ||
				n.MessageID != id || n.TopicARN != topic || n.Timestamp != "2026-01-02 03:04:05.000" ||
				n.MessageMD5Sum != "fd5770e19b0deb705ca98efcfc3b2045" || len(d.DeliveryID) != 36 {
				t.Errorf("log %d: %+v", i, l)
			}
		}
		// The publish was at the epoch; retries come ~20 s apart.
		if ls[0].Delivery.DwellTimeMs != 0 || ls[1].Delivery.DwellTimeMs < 18000 || ls[2].Delivery.DwellTimeMs < 36000 {
			t.Errorf("dwell times %d %d %d", ls[0].Delivery.DwellTimeMs, ls[1].Delivery.DwellTimeMs, ls[2].Delivery.DwellTimeMs)
		}
		f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})

	t.Run("a 4xx is not retried", func(t *testing.T) {
		topic := f.createTopic(t, "web4xx", logged)
		e := newEndpoint(t, f, func(n int) int {
			if n == 0 {
				return 200
			}
			return 400
		})
		sub := f.confirmHTTP(t, topic, e, nil)
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("bad request")})
		e.waitHits(2)
		testwait.Eventually(t, "the condition", func() bool { return f.snsTotal("web4xx", metrics.NotificationsDelivered) == 1 })
		// A delivery is counted before its message leaves the delivery
		// queue: moving the clock before would hand the message out again.
		f.deliveriesDone(t)
		f.clk.Advance(2 * time.Minute)
		f.deliveriesDone(t)
		if e.count() != 2 {
			t.Errorf("%d requests, want 2", e.count())
		}
		f.wantSNSMetrics(t, "web4xx", map[string]float64{
			metrics.MessagesPublished:      1,
			metrics.PublishSize:            float64(len("bad request")),
			metrics.NotificationsDelivered: 1,
		})
		ls := logsOf(f.deliveryLogs(t), e.srv.URL+"/hook")
		if len(ls) != 1 || ls[0].Status != "SUCCESS" || ls[0].Delivery.StatusCode != 400 || ls[0].Delivery.Attempts != 1 {
			t.Errorf("logs: %+v", ls)
		}
		f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})

	t.Run("no answer: status 0, the cause without the URL's credentials", func(t *testing.T) {
		topic := f.createTopic(t, "webdown", logged)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://user:s3cret@" + ln.Addr().String() + "/"
		ln.Close()
		sub := f.subscribe(t, topic, "http", dead, nil)
		if _, err := f.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: aws.String(topic),
			Token: aws.String(f.pendingToken(t, sub))}); err != nil {
			t.Fatal(err)
		}
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("anyone?")})
		testwait.Eventually(t, "the condition", f.failedAtLeast(sub, 1))
		ls := logsOf(f.deliveryLogs(t), "http://user:****@"+ln.Addr().String()+"/")
		if len(ls) != 1 || ls[0].Status != "FAILURE" || ls[0].Delivery.StatusCode != 0 ||
			!strings.Contains(ls[0].Delivery.ProviderResponse, "connection refused") || strings.Contains(ls[0].Delivery.ProviderResponse, "s3cret") {
			t.Errorf("logs: %+v", ls)
		}
		f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})

	t.Run("sample rate 0 logs failures only", func(t *testing.T) {
		topic := f.createTopic(t, "web0", map[string]string{
			"HTTPSuccessFeedbackRoleArn":    "arn:aws:iam::000000000000:role/SNSSuccessFeedback",
			"HTTPFailureFeedbackRoleArn":    "arn:aws:iam::000000000000:role/SNSFailureFeedback",
			"HTTPSuccessFeedbackSampleRate": "0",
		})
		e := newEndpoint(t, f, func(n int) int {
			if n == 1 {
				return 500
			}
			return 200
		})
		sub := f.confirmHTTP(t, topic, e, nil)
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("once more")})
		e.waitHits(2)
		testwait.Eventually(t, "the condition", f.failedAtLeast(sub, 1))
		f.advanceUntil(t, time.Minute, func() bool { return e.count() >= 3 })
		testwait.Eventually(t, "the condition", func() bool { return f.snsTotal("web0", metrics.NotificationsDelivered) == 1 })
		ls := logsOf(f.deliveryLogs(t), e.srv.URL+"/hook")
		if len(ls) != 1 || ls[0].Status != "FAILURE" || ls[0].Delivery.StatusCode != 500 {
			t.Errorf("logs: %+v", ls)
		}
		f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)})
	})
}

func TestSNSMetricsRedriveAndSQSDeliveryLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "delivery.log")
	f := start(t, func(c *server.Config) { c.SNSDeliveryLog = file })
	topic := f.createTopic(t, "r", map[string]string{
		"SQSSuccessFeedbackRoleArn":    "arn:aws:iam::000000000000:role/SNSSuccessFeedback",
		"SQSFailureFeedbackRoleArn":    "arn:aws:iam::000000000000:role/SNSFailureFeedback",
		"SQSSuccessFeedbackSampleRate": "100",
	})
	f.createQueue(t, "r-ok", nil)
	dlq := f.createQueue(t, "r-dlq", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"r-ok", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"r-gone", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `r-dlq"}`})

	id := aws.ToString(f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("first")}).MessageId)
	f.receiveOne(t, dlq)
	f.wantSNSMetrics(t, "r", map[string]float64{
		metrics.MessagesPublished:          1,
		metrics.PublishSize:                5,
		metrics.NotificationsDelivered:     1,
		metrics.NotificationsFailed:        1,
		metrics.NotificationsRedrivenToDLQ: 1,
	})
	// The dead-letter copy is a send to the DLQ.
	if got, _ := f.srv.Metrics().Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("r-dlq")); got.Sum != 1 {
		t.Errorf("r-dlq NumberOfMessagesSent = %v", got.Sum)
	}

	ls := f.deliveryLogs(t)
	ok, gone := logsOf(ls, arnPrefix+"r-ok"), logsOf(ls, arnPrefix+"r-gone")
	if len(ok) != 1 || len(gone) != 1 {
		t.Fatalf("logs: %+v", ls)
	}
	var resp struct {
		RequestID string `json:"sqsRequestId"`
		MessageID string `json:"sqsMessageId"`
	}
	json.Unmarshal([]byte(ok[0].Delivery.ProviderResponse), &resp)
	if l := ok[0]; l.Status != "SUCCESS" || l.LogGroup != "sns/us-east-1/000000000000/r" || l.Delivery.StatusCode != 200 ||
		l.Delivery.Attempts != 1 || l.Delivery.DwellTimeMs != 0 || l.Notification.MessageID != id ||
		len(resp.RequestID) != 36 || len(resp.MessageID) != 36 {
		t.Errorf("success log: %+v", l)
	}
	if l := gone[0]; l.Status != "FAILURE" || l.LogGroup != "sns/us-east-1/000000000000/r/Failure" || l.Delivery.StatusCode != 400 ||
		l.Delivery.ProviderResponse != `{"ErrorCode":"AWS.SimpleQueueService.NonExistentQueue","ErrorMessage":"The specified queue does not exist or you do not have access to it.","sqsRequestId":"Unrecoverable"}` {
		t.Errorf("failure log: %+v", l)
	}
	// The MD5 is of the message text (not of the envelope).
	for _, l := range ls {
		if l.Notification.MessageMD5Sum != "8b04d5e3775d298e78455efc5ca404d5" {
			t.Errorf("md5 %s", l.Notification.MessageMD5Sum)
		}
	}

	// With the DLQ gone, the next copy cannot be redriven.
	if _, err := f.json.DeleteQueue(ctxT(t), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)}); err != nil {
		t.Fatal(err)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("second")})
	f.wantSNSMetrics(t, "r", map[string]float64{
		metrics.MessagesPublished:                 2,
		metrics.PublishSize:                       11,
		metrics.NotificationsDelivered:            2,
		metrics.NotificationsFailed:               2,
		metrics.NotificationsRedrivenToDLQ:        1,
		metrics.NotificationsFailedToRedriveToDLQ: 1,
	})

	// The file holds the same lines as the endpoint.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 4 || len(f.deliveryLogs(t)) != 4 {
		t.Fatalf("file has %d lines: %s", len(lines), b)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, `{"notification":{"messageMD5Sum":"`) || !strings.Contains(line, `"status":"`) {
			t.Errorf("line %s", line)
		}
	}
	if r := do(t, mustRequest(t, "DELETE", f.srv.URL()+"/_ferry/sns/delivery-logs")); r.Status != 204 || len(f.deliveryLogs(t)) != 0 {
		t.Errorf("DELETE delivery-logs: %d", r.Status)
	}

	// Sample rate 0: successes are not logged, failures are.
	if _, err := f.sns.SetTopicAttributes(ctxT(t), &snssdk.SetTopicAttributesInput{TopicArn: aws.String(topic),
		AttributeName: aws.String("SQSSuccessFeedbackSampleRate"), AttributeValue: aws.String("0")}); err != nil {
		t.Fatal(err)
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("third")})
	if ls := f.deliveryLogs(t); len(ls) != 1 || ls[0].Status != "FAILURE" {
		t.Errorf("at rate 0: %+v", ls)
	}
}

func TestSNSDeliveryStatusAttributes(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	role := "arn:aws:iam::123456789012:role/service-role/SNSFeedback"
	topic := f.createTopic(t, "fb", map[string]string{"LambdaSuccessFeedbackRoleArn": role, "LambdaSuccessFeedbackSampleRate": "25"})
	set := func(name, value string) error {
		_, err := f.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: aws.String(topic),
			AttributeName: aws.String(name), AttributeValue: aws.String(value)})
		return err
	}
	for _, c := range []struct{ name, value string }{
		{"HTTPFailureFeedbackRoleArn", role},
		{"SQSSuccessFeedbackSampleRate", "0"},
		{"FirehoseSuccessFeedbackSampleRate", "100"},
		{"ApplicationFailureFeedbackRoleArn", "arn:aws-cn:iam::123456789012:role/x"},
	} {
		if err := set(c.name, c.value); err != nil {
			t.Errorf("%s=%s: %v", c.name, c.value, err)
		}
	}
	for _, c := range []struct{ name, value string }{
		{"HTTPSuccessFeedbackSampleRate", "101"},
		{"HTTPSuccessFeedbackSampleRate", "-1"},
		{"SQSSuccessFeedbackSampleRate", "50%"},
		{"SQSSuccessFeedbackRoleArn", "SNSFeedback"},
		{"SQSSuccessFeedbackRoleArn", "arn:aws:iam::123456789012:user/bob"},
		{"LambdaFailureFeedbackRoleArn", "arn:aws:sns:us-east-1:123456789012:role/x"},
		{"FirehoseFailureFeedbackRoleArn", "arn:aws:iam::1234:role/x"},
		{"ApplicationSuccessFeedbackRoleArn", "arn:aws:iam::123456789012:role/"},
	} {
		wantSNSError(t, set(c.name, c.value), "InvalidParameter", 400, "Invalid parameter: "+c.name)
	}
	_, err := f.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("fb2"),
		Attributes: map[string]string{"SQSFailureFeedbackRoleArn": "not-an-arn"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: SQSFailureFeedbackRoleArn")

	attrs := f.topicAttrs(t, topic)
	for name, want := range map[string]string{
		"LambdaSuccessFeedbackRoleArn":      role,
		"LambdaSuccessFeedbackSampleRate":   "25",
		"HTTPFailureFeedbackRoleArn":        role,
		"SQSSuccessFeedbackSampleRate":      "0",
		"FirehoseSuccessFeedbackSampleRate": "100",
		"ApplicationFailureFeedbackRoleArn": "arn:aws-cn:iam::123456789012:role/x",
	} {
		if attrs[name] != want {
			t.Errorf("%s = %q, want %q", name, attrs[name], want)
		}
	}
	if _, ok := attrs["HTTPSuccessFeedbackSampleRate"]; ok {
		t.Error("a refused value was stored")
	}
	// An empty value removes the attribute.
	if err := set("HTTPFailureFeedbackRoleArn", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.topicAttrs(t, topic)["HTTPFailureFeedbackRoleArn"]; ok {
		t.Error("HTTPFailureFeedbackRoleArn still set")
	}

	// Lambda deliveries (recorded) are logged at the sample rate: 25 % of
	// 200 messages, give or take what the hash makes of the ids.
	f.subscribe(t, topic, "lambda", "arn:aws:lambda:us-east-1:000000000000:function:fn", nil)
	for i := range 200 {
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(fmt.Sprint("m", i))})
	}
	ls := f.deliveryLogs(t)
	if len(ls) < 25 || len(ls) > 75 {
		t.Errorf("%d of 200 successes logged at 25 %%", len(ls))
	}
	for _, l := range ls {
		var r struct {
			RequestID string `json:"lambdaRequestId"`
		}
		json.Unmarshal([]byte(l.Delivery.ProviderResponse), &r)
		if l.Status != "SUCCESS" || l.Delivery.StatusCode != 202 || len(r.RequestID) != 36 {
			t.Fatalf("lambda log: %+v", l)
		}
	}
}

// A raw copy with more attributes than SQS carries is refused at once:
// failed, logged with SQS's own error.
func TestSNSDeliveryLogRawTooManyAttributes(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "many", map[string]string{"SQSFailureFeedbackRoleArn": "arn:aws:iam::000000000000:role/SNSFailureFeedback"})
	q := f.createQueue(t, "many-raw", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"many-raw", map[string]string{"RawMessageDelivery": "true"})
	attrs := map[string]snstypes.MessageAttributeValue{}
	for i := range 11 {
		attrs[fmt.Sprint("a", i)] = strAttr("v")
	}
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("crowded"), MessageAttributes: attrs})
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("fine")})
	f.receiveOne(t, q)
	f.wantEmpty(t, q)
	ls := f.deliveryLogs(t)
	if len(ls) != 1 || ls[0].Status != "FAILURE" || ls[0].Delivery.StatusCode != 400 ||
		ls[0].Delivery.ProviderResponse != `{"ErrorCode":"InvalidParameterValue","ErrorMessage":"Number of message attributes [11] exceeds the maximum allowed [10].","sqsRequestId":"Unrecoverable"}` {
		t.Errorf("logs: %+v", ls)
	}
	if got := f.snsTotal("many", metrics.NotificationsFailed); got != 1 {
		t.Errorf("NumberOfNotificationsFailed = %v", got)
	}
	if got := f.snsTotal("many", metrics.NotificationsDelivered); got != 1 {
		t.Errorf("NumberOfNotificationsDelivered = %v", got)
	}
}
