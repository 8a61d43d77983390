package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sigv4"
	"github.com/ferrymq/ferry/internal/testwait"
)

// consoleClient is a browser of the console: its cookie and CSRF token.
type consoleClient struct {
	t    testing.TB
	base string // scheme://host:port
	hc   *http.Client
	csrf string
	// session is the last session answer.
	session map[string]any
}

// newConsoleClient opens the console's session at base, as the page does.
func newConsoleClient(t testing.TB, base string) *consoleClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &consoleClient{t: t, base: strings.TrimSuffix(base, "/"), hc: &http.Client{Jar: jar}}
	status, body := c.do("GET", "/console/api/session", nil, nil)
	if status != 200 {
		t.Fatalf("GET session: %d %s", status, body)
	}
	c.readSession(body)
	return c
}

func (c *consoleClient) readSession(body []byte) {
	c.t.Helper()
	c.session = map[string]any{}
	if err := json.Unmarshal(body, &c.session); err != nil {
		c.t.Fatalf("session %s: %v", body, err)
	}
	c.csrf, _ = c.session["csrfToken"].(string)
}

// do sends a request with the session's cookie, the CSRF token on
// anything but a GET, and the page's Origin; header overrides.
func (c *consoleClient) do(method, path string, in any, header map[string]string) (int, []byte) {
	c.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			c.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("X-Ferry-Console-CSRF", c.csrf)
		req.Header.Set("Origin", c.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// call sends a request and decodes its JSON answer into out, failing the
// test unless the status is want.
func (c *consoleClient) call(method, path string, in any, want int, out any) {
	c.t.Helper()
	status, body := c.do(method, path, in, nil)
	if status != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			c.t.Fatalf("%s %s: %s: %v", method, path, body, err)
		}
	}
}

// wantError sends a request that must fail with status and code.
func (c *consoleClient) wantError(method, path string, in any, status int, code string) {
	c.t.Helper()
	var out struct{ Error, Code string }
	c.call(method, path, in, status, &out)
	if out.Code != code || out.Error == "" {
		c.t.Fatalf("%s %s: code %q (%q), want %s", method, path, out.Code, out.Error, code)
	}
}

// deadLetters sends bodies to src (whose redrive policy moves a message
// after one receive, and whose visibility timeout is 0), receives each
// once, and waits until all have moved to its dead-letter queue.
func (f *ferry) deadLetters(t testing.TB, src, dlq string, bodies ...string) {
	t.Helper()
	ctx := ctxT(t)
	for i, b := range bodies {
		if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String(b),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"n":    {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i))},
				"kind": {DataType: aws.String("String"), StringValue: aws.String("kind-" + b)},
			}}); err != nil {
			t.Fatal(err)
		}
	}
	received := 0
	testwait.Eventually(t, "every message received once", func() bool {
		received += len(f.receiveAll(t, src, 10))
		return received >= len(bodies)
	})
	testwait.Eventually(t, "every message dead-lettered", func() bool {
		f.receiveAll(t, src, 10)
		st, err := f.srv.Engine().Stats(context.Background(), server.DefaultAccount, dlq)
		return err == nil && st.Visible == int64(len(bodies))
	})
}

func (f *ferry) deleteMessage(t testing.TB, queue string, handle *string) {
	t.Helper()
	if _, err := f.json.DeleteMessage(ctxT(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: handle}); err != nil {
		t.Fatal(err)
	}
}

// deadLetterConsole starts a Ferry whose "orders-dlq" holds the dead
// letters of "orders" with bodies, and opens its console.
func deadLetterConsole(t *testing.T, bodies ...string) (f *ferry, src, dlq string, c *consoleClient) {
	t.Helper()
	f = start(t)
	src, dlq = f.dlqPair(t)
	f.deadLetters(t, src, "orders-dlq", bodies...)
	return f, src, dlq, newConsoleClient(t, f.srv.URL())
}

// dlqPair makes "orders" and its dead-letter queue "orders-dlq".
func (f *ferry) dlqPair(t testing.TB) (src, dlq string) {
	t.Helper()
	dlq = f.createQueue(t, "orders-dlq", nil)
	src = f.createQueue(t, "orders", map[string]string{"RedrivePolicy": redrivePolicy("orders-dlq", 1), "VisibilityTimeout": "0"})
	return src, dlq
}

type consoleQueue struct {
	Name, URL, ARN    string
	FIFO              bool
	Visible, Inflight int64
	Delayed           int64
	OldestAgeSeconds  *int64
	DeadLetterQueue   bool
	Sources           []string
	Redrive           *struct {
		Target, TargetArn string
		MaxReceiveCount   int
	}
	Sent       []float64
	Depth      []*float64
	Attributes map[string]string
	MoveTasks  []consoleMoveTask
}

type consoleMoveTask struct {
	TaskHandle, Status, SourceArn, DestinationArn string
	Moved                                         int64
	ToMove                                        *int64
	Started, FailureReason                        string
}

type consoleMessage struct {
	Ref, MessageID, Body, State, SentAt string
	BodySize                            int
	Truncated                           bool
	ReceiveCount                        int
	DeadLetterSourceArn                 *string
	Attributes                          map[string]struct{ DataType, StringValue string }
	SystemAttributes                    map[string]string
	History                             *struct {
		Dropped int
		Events  []struct{ Kind string }
	}
}

type consolePage struct {
	Messages []consoleMessage
	Next     string
	Scanned  int
}

func queueByName(t testing.TB, qs []consoleQueue, name string) consoleQueue {
	t.Helper()
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("no queue %s in %+v", name, qs)
	return consoleQueue{}
}

// TestConsoleOverview: the overview counts every queue, marks the
// dead-letter queue and its sources, and draws the sends of the last hour.
func TestConsoleOverview(t *testing.T) {
	t.Parallel()
	f := start(t)
	f.dlqPair(t)
	f.createQueue(t, "audit", nil)
	f.deadLetters(t, f.srv.URL()+"/000000000000/orders", "orders-dlq", "a", "b", "c")
	c := newConsoleClient(t, f.srv.URL())
	if c.session["loggedIn"] != true || c.session["authRequired"] != false || c.session["account"] != server.DefaultAccount {
		t.Fatalf("session with auth off: %v", c.session)
	}
	var ov struct {
		Now, Account          string
		Queues                []consoleQueue
		Topics, Subscriptions int
		Alarms                map[string]int
	}
	c.call("GET", "/console/api/overview", nil, 200, &ov)
	if len(ov.Queues) != 3 || ov.Queues[0].Name != "audit" || ov.Queues[1].Name != "orders" || ov.Queues[2].Name != "orders-dlq" {
		t.Fatalf("queues: %+v", ov.Queues)
	}
	dlq, src := queueByName(t, ov.Queues, "orders-dlq"), queueByName(t, ov.Queues, "orders")
	if !dlq.DeadLetterQueue || dlq.Visible != 3 || len(dlq.Sources) != 1 || dlq.Sources[0] != "orders" || dlq.Redrive != nil {
		t.Fatalf("dead-letter queue: %+v", dlq)
	}
	if src.DeadLetterQueue || src.Visible != 0 || src.Redrive == nil || src.Redrive.Target != "orders-dlq" ||
		src.Redrive.MaxReceiveCount != 1 || src.Redrive.TargetArn != arnPrefix+"orders-dlq" {
		t.Fatalf("source: %+v", src)
	}
	if len(src.Sent) != 60 || src.Sent[59] != 3 || len(src.Depth) != 60 {
		t.Fatalf("source's sparklines: sent %v, %d depths", src.Sent, len(src.Depth))
	}
	if dlq.ARN != arnPrefix+"orders-dlq" || dlq.URL != f.srv.URL()+"/000000000000/orders-dlq" {
		t.Fatalf("names: %s %s", dlq.ARN, dlq.URL)
	}
	if ov.Account != server.DefaultAccount || ov.Alarms["OK"] != 0 || ov.Topics != 0 {
		t.Fatalf("overview: %+v", ov)
	}
	if _, err := time.Parse(time.RFC3339, ov.Now); err != nil {
		t.Fatalf("now %q: %v", ov.Now, err)
	}

	var detail consoleQueue
	c.call("GET", "/console/api/queues/orders-dlq", nil, 200, &detail)
	if detail.Attributes["ApproximateNumberOfMessages"] != "3" || !detail.DeadLetterQueue || detail.MoveTasks == nil {
		t.Fatalf("queue page: %+v", detail)
	}
	c.wantError("GET", "/console/api/queues/nope", nil, 404, "NotFound")
	c.wantError("GET", "/console/api/nothing", nil, 404, "NotFound")
}

// TestConsolePeek: pages of a dead-letter queue's messages, filtered and
// followed by their cursor, leave every message as it was.
func TestConsolePeek(t *testing.T) {
	t.Parallel()
	f, _, dlq, c := deadLetterConsole(t, "apple", "banana", "cherry", "apricot", strings.Repeat("x", 600))
	var page consolePage
	for range 2 {
		c.call("GET", "/console/api/queues/orders-dlq/messages", nil, 200, &page)
	}
	if len(page.Messages) != 5 || page.Next != "" || page.Messages[0].Body != "apple" {
		t.Fatalf("page: %+v", page)
	}
	long := page.Messages[4]
	if !long.Truncated || len(long.Body) != 512 || long.BodySize != 600 {
		t.Fatalf("long body: truncated %v, %d of %d", long.Truncated, len(long.Body), long.BodySize)
	}
	m := page.Messages[0]
	if m.State != "visible" || m.ReceiveCount != 1 || m.DeadLetterSourceArn == nil || *m.DeadLetterSourceArn != arnPrefix+"orders" ||
		m.Attributes["kind"].StringValue != "kind-apple" || m.Attributes["n"].DataType != "Number" {
		t.Fatalf("message: %+v", m)
	}
	// Peeking changed nothing: the messages are all visible, and the
	// next receive is each one's second.
	wantCounts(t, f, dlq, 5, 0, 0)
	got := f.receiveAll(t, dlq, 10)
	if len(got) == 0 {
		t.Fatal("nothing to receive")
	}
	for _, g := range got {
		if g.Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("receive after peeks: ApproximateReceiveCount %s", g.Attributes["ApproximateReceiveCount"])
		}
	}
	// Now in flight (a visibility timeout of 30 s on the dead-letter queue).
	c.call("GET", "/console/api/queues/orders-dlq/messages?state=inflight", nil, 200, &page)
	if len(page.Messages) != len(got) {
		t.Fatalf("in flight: %d, want %d", len(page.Messages), len(got))
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"body=ap", []string{"apple", "apricot"}},
		{"attribute=kind&value=kind-b", []string{"banana"}},
		{"attribute=n", []string{"apple", "banana", "cherry", "apricot", "xxxxxxx"}},
		{"id=" + m.MessageID, []string{"apple"}},
		{"body=nothing", nil},
	} {
		c.call("GET", "/console/api/queues/orders-dlq/messages?"+tc.query, nil, 200, &page)
		var bodies []string
		for _, m := range page.Messages {
			bodies = append(bodies, m.Body[:min(len(m.Body), 7)])
		}
		if strings.Join(bodies, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %q, want %q", tc.query, bodies, tc.want)
		}
	}
	// Two at a time, by the cursor.
	var walked []string
	next := ""
	for {
		path := "/console/api/queues/orders-dlq/messages?limit=2"
		if next != "" {
			path += "&after=" + url.QueryEscape(next)
		}
		c.call("GET", path, nil, 200, &page)
		if len(page.Messages) > 2 {
			t.Fatalf("limit 2: %d messages", len(page.Messages))
		}
		for _, m := range page.Messages {
			walked = append(walked, m.Body[:min(len(m.Body), 7)])
		}
		if next = page.Next; next == "" {
			break
		}
	}
	if strings.Join(walked, ",") != "apple,banana,cherry,apricot,xxxxxxx" {
		t.Fatalf("walk: %v", walked)
	}
	for _, tc := range []struct{ query, code string }{
		{"limit=0", "BadRequest"}, {"limit=101", "BadRequest"}, {"limit=x", "BadRequest"},
		{"after=garbage", "BadRequest"}, {"after=YQ.AAAAAAAAAAAAAAAA", "BadRequest"},
		{"state=gone", "BadRequest"}, {"value=v", "BadRequest"},
	} {
		c.wantError("GET", "/console/api/queues/orders-dlq/messages?"+tc.query, nil, 400, tc.code)
	}
	c.wantError("GET", "/console/api/queues/missing/messages", nil, 404, "NotFound")

	// One message, whole, with its system attributes and story.
	var one consoleMessage
	c.call("GET", "/console/api/queues/orders-dlq/messages/"+url.PathEscape(long.Ref), nil, 200, &one)
	if len(one.Body) != 600 || one.Truncated || one.SystemAttributes["SentTimestamp"] != strconv.FormatInt(epoch.UnixMilli(), 10) ||
		one.SystemAttributes["DeadLetterQueueSourceArn"] != arnPrefix+"orders" || one.History == nil || len(one.History.Events) == 0 {
		t.Fatalf("message detail: %+v", one)
	}
	c.wantError("GET", "/console/api/queues/orders-dlq/messages/nope", nil, 404, "NotFound")
}

// TestConsoleDeleteAndPurge: a delete by ref counts as DeleteMessage's; a
// purge needs the queue's name and comes once a minute.
func TestConsoleDeleteAndPurge(t *testing.T) {
	t.Parallel()
	f, _, dlq, c := deadLetterConsole(t, "a", "b", "c")
	var page consolePage
	c.call("GET", "/console/api/queues/orders-dlq/messages", nil, 200, &page)
	var out struct{ Deleted int }
	c.call("POST", "/console/api/queues/orders-dlq/delete", map[string]any{"refs": []string{page.Messages[0].Ref, "unknown"}}, 200, &out)
	if out.Deleted != 1 {
		t.Fatalf("deleted %d", out.Deleted)
	}
	wantCounts(t, f, dlq, 2, 0, 0)
	if tot, ok := f.srv.Metrics().Totals(server.DefaultAccount, metrics.NamespaceSQS, metrics.MessagesDeleted, metrics.Queue("orders-dlq")); !ok || tot.Sum != 1 {
		t.Fatalf("NumberOfMessagesDeleted: %+v (%v)", tot, ok)
	}
	c.wantError("POST", "/console/api/queues/orders-dlq/delete", map[string]any{"refs": []string{}}, 400, "BadRequest")
	c.wantError("POST", "/console/api/queues/orders-dlq/delete", map[string]any{"refz": 1}, 400, "BadRequest")

	c.wantError("POST", "/console/api/queues/orders-dlq/purge", map[string]any{"confirm": "orders"}, 400, "BadRequest")
	wantCounts(t, f, dlq, 2, 0, 0)
	c.call("POST", "/console/api/queues/orders-dlq/purge", map[string]any{"confirm": "orders-dlq"}, 200, nil)
	wantCounts(t, f, dlq, 0, 0, 0)
	c.wantError("POST", "/console/api/queues/orders-dlq/purge", map[string]any{"confirm": "orders-dlq"}, 403, "AWS.SimpleQueueService.PurgeQueueInProgress")
	c.wantError("POST", "/console/api/queues/nope/purge", map[string]any{"confirm": "nope"}, 400, "AWS.SimpleQueueService.NonExistentQueue")
}

// TestConsoleRedrive: a redrive of every message and of chosen ones is a
// move task, shown with its progress; a slow one can be cancelled.
func TestConsoleRedrive(t *testing.T) {
	t.Parallel()
	f, src, _, c := deadLetterConsole(t, "a", "b", "c", "d")
	var page consolePage
	c.call("GET", "/console/api/queues/orders-dlq/messages", nil, 200, &page)

	// Chosen messages: b and d go back to orders.
	var started struct {
		TaskHandle string
		Task       consoleMoveTask
	}
	c.call("POST", "/console/api/queues/orders-dlq/redrive", map[string]any{"refs": []string{page.Messages[1].Ref, page.Messages[3].Ref}}, 200, &started)
	if started.TaskHandle == "" || started.Task.SourceArn != arnPrefix+"orders-dlq" || started.Task.ToMove == nil || *started.Task.ToMove != 2 {
		t.Fatalf("started: %+v", started)
	}
	var detail consoleQueue
	testwait.Eventually(t, "the chosen messages moved", func() bool {
		c.call("GET", "/console/api/queues/orders-dlq", nil, 200, &detail)
		// The counts may follow the task's end a moment later.
		return len(detail.MoveTasks) == 1 && detail.MoveTasks[0].Status == "COMPLETED" && detail.Visible == 2
	})
	if detail.MoveTasks[0].Moved != 2 || detail.Visible != 2 {
		t.Fatalf("after the chosen redrive: %+v", detail)
	}
	var bodies []string
	for _, m := range f.receiveAll(t, src, 10) {
		bodies = append(bodies, *m.Body)
		f.deleteMessage(t, src, m.ReceiptHandle)
	}
	if strings.Join(bodies, ",") != "b,d" && strings.Join(bodies, ",") != "d,b" {
		t.Fatalf("orders received %v", bodies)
	}
	// Not a dead-letter queue: AWS's refusal.
	c.wantError("POST", "/console/api/queues/orders/redrive", map[string]any{}, 400, "InvalidParameterValue")
	c.wantError("POST", "/console/api/queues/orders-dlq/redrive", map[string]any{"maxPerSecond": 0}, 400, "InvalidParameterValue")

	// The rest, to another queue.
	f.createQueue(t, "replay", nil)
	c.call("POST", "/console/api/queues/orders-dlq/redrive", map[string]any{"destinationArn": arnPrefix + "replay"}, 200, &started)
	testwait.Eventually(t, "the rest moved", func() bool {
		c.call("GET", "/console/api/queues/orders-dlq", nil, 200, &detail)
		return len(detail.MoveTasks) == 2 && detail.MoveTasks[0].Status == "COMPLETED" && detail.Visible == 0
	})
	if detail.MoveTasks[0].Moved != 2 || detail.MoveTasks[0].DestinationArn != arnPrefix+"replay" || detail.Visible != 0 {
		t.Fatalf("after the redrive of the rest: %+v", detail.MoveTasks)
	}

	// A slow task, cancelled.
	f.deadLetters(t, src, "orders-dlq", "e", "f", "g")
	c.call("POST", "/console/api/queues/orders-dlq/redrive", map[string]any{"maxPerSecond": 1}, 200, &started)
	var cancelled struct{ Moved int64 }
	c.call("POST", "/console/api/queues/orders-dlq/cancel-move", map[string]any{"taskHandle": started.TaskHandle}, 200, &cancelled)
	if cancelled.Moved > 3 {
		t.Fatalf("cancelled after %d", cancelled.Moved)
	}
	testwait.Eventually(t, "the task cancelled", func() bool {
		c.call("GET", "/console/api/queues/orders-dlq", nil, 200, &detail)
		return detail.MoveTasks[0].Status == "CANCELLED"
	})
	c.wantError("POST", "/console/api/queues/orders-dlq/cancel-move", map[string]any{"taskHandle": "bad"}, 400, "InvalidParameterValue")
	c.wantError("POST", "/console/api/queues/orders-dlq/cancel-move", map[string]any{}, 400, "BadRequest")
}

// TestConsoleResend: an edited message goes back to the queue it came
// from, and the original leaves the dead-letter queue.
func TestConsoleResend(t *testing.T) {
	t.Parallel()
	f, src, dlq, c := deadLetterConsole(t, "broken")
	var page consolePage
	c.call("GET", "/console/api/queues/orders-dlq/messages", nil, 200, &page)
	var out struct{ MessageID string }
	c.call("POST", "/console/api/queues/orders-dlq/resend", map[string]any{"ref": page.Messages[0].Ref, "body": "fixed",
		"attributes": map[string]any{"fix": map[string]string{"dataType": "String", "stringValue": "1"}}}, 200, &out)
	if out.MessageID == "" {
		t.Fatal("no message id")
	}
	wantCounts(t, f, dlq, 0, 0, 0)
	got := f.receiveAll(t, src, 10)
	if len(got) != 1 || *got[0].Body != "fixed" || *got[0].MessageAttributes["fix"].StringValue != "1" || *got[0].MessageId != out.MessageID {
		t.Fatalf("orders received %+v", got)
	}
	f.deleteMessage(t, src, got[0].ReceiptHandle)
	c.wantError("POST", "/console/api/queues/orders-dlq/resend", map[string]any{"ref": page.Messages[0].Ref}, 404, "NotFound")
	f.deadLetters(t, src, "orders-dlq", "again")
	c.call("GET", "/console/api/queues/orders-dlq/messages", nil, 200, &page)
	c.wantError("POST", "/console/api/queues/orders-dlq/resend", map[string]any{"ref": page.Messages[0].Ref, "destination": "missing"},
		400, "AWS.SimpleQueueService.NonExistentQueue")
	wantCounts(t, f, dlq, 1, 0, 0) // a refused send deletes nothing
}

// TestConsoleTopicsAndAlarms: topics with their subscriptions' counts,
// alarms with their history.
func TestConsoleTopicsAndAlarms(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	q := f.createQueue(t, "inbox", nil)
	topic := f.createTopic(t, "events", nil)
	subARN := f.subscribe(t, topic, "sqs", arnPrefix+"inbox", map[string]string{"RawMessageDelivery": "true", "FilterPolicy": `{"k":["v"]}`})
	gone := f.createQueue(t, "gone", nil)
	goneARN := f.subscribe(t, topic, "sqs", arnPrefix+"gone", nil)
	if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(gone)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("hi"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"k": strAttr("v")}}); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, f, q, 1)
	cw := clientsOf(f.srv.URL(), harnessKey, harnessSecret, "us-east-1").cw
	if _, err := cw.PutMetricAlarm(ctx, &cwsdk.PutMetricAlarmInput{AlarmName: aws.String("dlq-not-empty"), Namespace: aws.String("AWS/SQS"),
		MetricName: aws.String("ApproximateNumberOfMessagesVisible"), Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(60),
		EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(0), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold,
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("inbox")}}, AlarmActions: []string{topic}}); err != nil {
		t.Fatal(err)
	}
	c := newConsoleClient(t, f.srv.URL())
	var topics struct {
		Topics []struct {
			ARN, Name     string
			Attributes    map[string]string
			Subscriptions []struct {
				ARN, Protocol, Endpoint string
				Pending, RawDelivery    bool
				FilterPolicy            *string
				Delivered, Failed       int64
				RecentFailures          []struct {
					At, Error, Endpoint string
					Status              int
				}
			}
		}
	}
	c.call("GET", "/console/api/topics", nil, 200, &topics)
	if len(topics.Topics) != 1 || topics.Topics[0].Name != "events" || len(topics.Topics[0].Subscriptions) != 2 {
		t.Fatalf("topics: %+v", topics)
	}
	for _, s := range topics.Topics[0].Subscriptions {
		switch s.ARN {
		case subARN:
			if s.Protocol != "sqs" || !s.RawDelivery || s.FilterPolicy == nil || s.Delivered != 1 || s.Failed != 0 || s.Pending ||
				len(s.RecentFailures) != 0 {
				t.Fatalf("subscription: %+v", s)
			}
		case goneARN:
			if s.Delivered != 0 || s.Failed != 1 || len(s.RecentFailures) != 1 || s.RecentFailures[0].Status != 400 ||
				!strings.Contains(s.RecentFailures[0].Error, "NonExistentQueue") || s.RecentFailures[0].Endpoint != arnPrefix+"gone" {
				t.Fatalf("subscription to a deleted queue: %+v", s)
			}
		default:
			t.Fatalf("subscription %s", s.ARN)
		}
	}
	var alarms struct {
		Alarms []struct {
			Name, State, MetricName, ComparisonOperator string
			Dimensions                                  map[string]string
			Threshold                                   *float64
			Actions                                     []string
			History                                     []struct{ At, Type, Summary string }
		}
	}
	c.call("GET", "/console/api/alarms", nil, 200, &alarms)
	if len(alarms.Alarms) != 1 {
		t.Fatalf("alarms: %+v", alarms)
	}
	a := alarms.Alarms[0]
	if a.Name != "dlq-not-empty" || a.State != "INSUFFICIENT_DATA" || a.Dimensions["QueueName"] != "inbox" || a.Threshold == nil ||
		len(a.Actions) != 1 || len(a.History) == 0 || a.History[0].Type == "" {
		t.Fatalf("alarm: %+v", a)
	}
	var ov struct {
		Topics, Subscriptions int
		Alarms                map[string]int
	}
	c.call("GET", "/console/api/overview", nil, 200, &ov)
	if ov.Topics != 1 || ov.Subscriptions != 2 || ov.Alarms["INSUFFICIENT_DATA"] != 1 {
		t.Fatalf("overview: %+v", ov)
	}
}

// TestConsoleCSRF: a change needs the session's token and the page's
// origin; the pages carry a strict policy.
func TestConsoleCSRF(t *testing.T) {
	t.Parallel()
	f := start(t)
	f.createQueue(t, "q", nil)
	c := newConsoleClient(t, f.srv.URL())
	purge := map[string]any{"confirm": "q"}
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"no token", map[string]string{"X-Ferry-Console-CSRF": ""}},
		{"wrong token", map[string]string{"X-Ferry-Console-CSRF": "forged"}},
		{"another site", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"another origin", map[string]string{"Origin": "http://localhost:1"}},
		{"same site, other origin", map[string]string{"Sec-Fetch-Site": "same-site"}},
	} {
		status, body := c.do("POST", "/console/api/queues/q/purge", purge, tc.header)
		if status != 403 || !strings.Contains(string(body), `"code":"CSRF"`) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	// The Host check applies to the console as to everything: a page on
	// another site that reached Ferry by DNS rebinding gets nothing.
	req, _ := http.NewRequest("GET", f.srv.URL()+"/console/api/session", nil)
	req.Host = "rebound.example"
	if r := do(t, req); r.Status != 403 || strings.Contains(r.Body, "csrfToken") {
		t.Fatalf("a foreign Host: %d %s", r.Status, r.Body)
	}
	// Without a cookie: no session.
	anon := &consoleClient{t: t, base: f.srv.URL(), hc: &http.Client{}}
	anon.wantError("GET", "/console/api/overview", nil, 401, "LoginRequired")
	status, _ := c.do("POST", "/console/api/queues/q/purge", purge, nil)
	if status != 200 {
		t.Fatalf("the page's own purge: %d", status)
	}
	resp, err := http.Get(f.srv.URL() + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 200 || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") ||
		!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-cache" ||
		!strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("index: %d %v", resp.StatusCode, h)
	}
	// Logged out, the cookie is worth nothing.
	c.call("POST", "/console/api/logout", nil, 204, nil)
	c.wantError("GET", "/console/api/overview", nil, 401, "LoginRequired")
}

// TestConsoleLogin: with auth on, a key's session sees its account only,
// a wrong secret is refused, the admin token sees every account.
func TestConsoleLogin(t *testing.T) {
	t.Parallel()
	creds, err := sigv4.ParseCredentials(strings.NewReader("[a]\naws_access_key_id = AKIDA\naws_secret_access_key = sa\naws_account_id = 111111111111\n"+
		"[b]\naws_access_key_id = AKIDB\naws_secret_access_key = sb\naws_account_id = 222222222222\n"), server.DefaultAccount)
	if err != nil {
		t.Fatal(err)
	}
	f := start(t, func(c *server.Config) {
		c.AuthVerify, c.Credentials, c.AdminToken = true, creds, "tok"
		c.Clock = clock.NewFake(time.Now()) // clients sign with the wall clock
	})
	for key, secret := range map[string]string{"AKIDA": "sa", "AKIDB": "sb"} {
		cl := clientsOf(f.srv.URL(), key, secret, "us-east-1")
		if _, err := cl.json.CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: aws.String("q-" + key)}); err != nil {
			t.Fatal(err)
		}
	}
	c := newConsoleClient(t, f.srv.URL())
	if c.session["authRequired"] != true || c.session["loggedIn"] != false {
		t.Fatalf("session before login: %v", c.session)
	}
	c.wantError("GET", "/console/api/overview", nil, 401, "LoginRequired")
	for _, tc := range []struct {
		name string
		in   map[string]string
	}{
		{"wrong secret", map[string]string{"accessKeyId": "AKIDA", "secretAccessKey": "sb"}},
		{"unknown key", map[string]string{"accessKeyId": "AKIDX", "secretAccessKey": "sa"}},
		{"wrong token", map[string]string{"adminToken": "tik"}},
	} {
		c.wantError("POST", "/console/api/login", tc.in, 401, "LoginFailed")
	}
	c.wantError("POST", "/console/api/login", map[string]string{}, 400, "BadRequest")
	status, _ := c.do("POST", "/console/api/login", map[string]string{"accessKeyId": "AKIDA", "secretAccessKey": "sa"}, map[string]string{"X-Ferry-Console-CSRF": ""})
	if status != 403 {
		t.Fatalf("login without the token: %d", status)
	}

	var body []byte
	status, body = c.do("POST", "/console/api/login", map[string]string{"accessKeyId": "AKIDA", "secretAccessKey": "sa"}, nil)
	if status != 200 {
		t.Fatalf("login: %d %s", status, body)
	}
	c.readSession(body)
	if c.session["account"] != "111111111111" || c.session["accounts"] != nil || c.session["admin"] != false {
		t.Fatalf("key session: %v", c.session)
	}
	var ov struct{ Queues []consoleQueue }
	c.call("GET", "/console/api/overview", nil, 200, &ov)
	if len(ov.Queues) != 1 || ov.Queues[0].Name != "q-AKIDA" {
		t.Fatalf("key session's queues: %+v", ov.Queues)
	}
	c.wantError("GET", "/console/api/overview?account=222222222222", nil, 403, "Forbidden")

	admin := newConsoleClient(t, f.srv.URL())
	status, body = admin.do("POST", "/console/api/login", map[string]string{"adminToken": "tok"}, nil)
	if status != 200 {
		t.Fatalf("admin login: %d %s", status, body)
	}
	admin.readSession(body)
	if admin.session["admin"] != true || fmt.Sprint(admin.session["accounts"]) != "[000000000000 111111111111 222222222222]" {
		t.Fatalf("admin session: %v", admin.session)
	}
	admin.call("GET", "/console/api/overview?account=222222222222", nil, 200, &ov)
	if len(ov.Queues) != 1 || ov.Queues[0].Name != "q-AKIDB" {
		t.Fatalf("admin's view of 222222222222: %+v", ov.Queues)
	}
	admin.wantError("GET", "/console/api/overview?account=12", nil, 400, "BadRequest")
}

// TestConsoleListeners: the console on its own listener, on the admin
// listener, or off.
func TestConsoleListeners(t *testing.T) {
	t.Parallel()
	t.Run("own", func(t *testing.T) {
		t.Parallel()
		f := start(t, func(c *server.Config) { c.ConsoleListen = "127.0.0.1:0" })
		if !strings.HasSuffix(f.srv.ConsoleURL(), "/console/") || strings.HasPrefix(f.srv.ConsoleURL(), f.srv.URL()) {
			t.Fatalf("console at %s, API at %s", f.srv.ConsoleURL(), f.srv.URL())
		}
		base := strings.TrimSuffix(f.srv.ConsoleURL(), "/console/")
		newConsoleClient(t, base).call("GET", "/console/api/overview", nil, 200, nil)
		if r := adminDo(t, "GET", f.srv.URL()+"/console/api/session", ""); r.Status == 200 {
			t.Fatalf("the API's listener serves the console: %s", r.Body)
		}
		if r := adminDo(t, "GET", base+"/_ferry/health", ""); r.Status == 200 {
			t.Fatal("the console's listener serves health")
		}
	})
	t.Run("admin", func(t *testing.T) {
		t.Parallel()
		f := start(t, func(c *server.Config) { c.AdminListen = "127.0.0.1:0" })
		if f.srv.ConsoleURL() != f.srv.AdminURL()+"/console/" {
			t.Fatalf("console at %s", f.srv.ConsoleURL())
		}
		c := newConsoleClient(t, f.srv.AdminURL())
		c.call("GET", "/console/api/overview", nil, 200, nil)
		// An open event stream does not hold a shutdown up.
		resp, err := c.hc.Get(f.srv.AdminURL() + "/console/api/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown with an event stream open: %v", err)
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		f := start(t, func(c *server.Config) { c.NoConsole = true })
		if f.srv.ConsoleURL() != "" {
			t.Fatalf("console at %s", f.srv.ConsoleURL())
		}
		if r := adminDo(t, "GET", f.srv.URL()+"/console/api/session", ""); r.Status == 200 {
			t.Fatalf("the console answers though off: %s", r.Body)
		}
	})
}

// TestConsoleEvents: the event stream sends the overview at once.
func TestConsoleEvents(t *testing.T) {
	t.Parallel()
	f := start(t)
	f.createQueue(t, "q", nil)
	c := newConsoleClient(t, f.srv.URL())
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL()+"/console/api/events?queue=q", nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var seen []string
	buf := make([]byte, 0, 1<<16)
	chunk := make([]byte, 4096)
	for !(strings.Contains(string(buf), "event: overview\n") && strings.Contains(string(buf), "event: queue\n")) {
		n, err := resp.Body.Read(chunk)
		if err != nil {
			t.Fatalf("read events: %v (so far %q)", err, buf)
		}
		buf = append(buf, chunk[:n]...)
	}
	for _, line := range strings.Split(string(buf), "\n") {
		if strings.HasPrefix(line, "event: ") {
			seen = append(seen, line)
		}
	}
	if seen[0] != "event: overview" || !strings.Contains(string(buf), `"name":"q"`) {
		t.Fatalf("events: %q", buf)
	}
	c.wantError("GET", "/console/api/events?queue=missing", nil, 404, "NotFound")
}

// TestConsoleFIFO: a FIFO dead-letter queue's messages show their group
// and sequence number, and a resend keeps the group.
func TestConsoleFIFO(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	f.createQueue(t, "jobs-dlq.fifo", map[string]string{"FifoQueue": "true"})
	src := f.createQueue(t, "jobs.fifo", map[string]string{"FifoQueue": "true", "RedrivePolicy": redrivePolicy("jobs-dlq.fifo", 1),
		"VisibilityTimeout": "0"})
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("job"),
		MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String("d1")}); err != nil {
		t.Fatal(err)
	}
	testwait.Some(t, "the first receive", func() []types.Message { return f.receiveAll(t, src, 1) })
	testwait.Eventually(t, "the message dead-lettered", func() bool {
		f.receiveAll(t, src, 1)
		st, err := f.srv.Engine().Stats(context.Background(), server.DefaultAccount, "jobs-dlq.fifo")
		return err == nil && st.Visible == 1
	})
	c := newConsoleClient(t, f.srv.URL())
	var page struct {
		Messages []struct {
			Ref                     string
			GroupID, SequenceNumber *string
		}
	}
	c.call("GET", "/console/api/queues/jobs-dlq.fifo/messages", nil, 200, &page)
	if len(page.Messages) != 1 || page.Messages[0].GroupID == nil || *page.Messages[0].GroupID != "g1" || page.Messages[0].SequenceNumber == nil {
		t.Fatalf("page: %+v", page)
	}
	var out struct{ MessageID string }
	c.call("POST", "/console/api/queues/jobs-dlq.fifo/resend", map[string]any{"ref": page.Messages[0].Ref}, 200, &out)
	got := f.receiveAll(t, src, 10)
	if len(got) != 1 || *got[0].Body != "job" || got[0].Attributes["MessageGroupId"] != "g1" {
		t.Fatalf("jobs.fifo received %+v", got)
	}
	var ov struct{ Queues []consoleQueue }
	c.call("GET", "/console/api/overview", nil, 200, &ov)
	if dlq := queueByName(t, ov.Queues, "jobs-dlq.fifo"); !dlq.FIFO || dlq.Visible != 0 || !dlq.DeadLetterQueue {
		t.Fatalf("overview: %+v", dlq)
	}
}

// TestConsoleSessionOutlivesClockMoves: moving Ferry's clock days ahead
// (--clock-control, ferrytest) times out no console session: sessions
// expire by the wall clock.
func TestConsoleSessionOutlivesClockMoves(t *testing.T) {
	t.Parallel()
	f := start(t)
	f.createQueue(t, "q", nil)
	c := newConsoleClient(t, f.srv.URL())
	c.call("GET", "/console/api/overview", nil, 200, nil)
	f.clk.Advance(14 * 24 * time.Hour)
	c.call("GET", "/console/api/overview", nil, 200, nil)
	c.call("POST", "/console/api/queues/q/delete", map[string]any{"refs": []string{"999999"}}, 200, nil)
}
