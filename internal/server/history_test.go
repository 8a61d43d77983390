package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithymiddleware "github.com/aws/smithy-go/middleware"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// consumerClient is an SQS client signing with key and naming app in its
// User-Agent, as one consumer among several.
func (f *ferry) consumerClient(key, app string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(f.srv.URL()),
		Credentials:      credentials.NewStaticCredentialsProvider(key, harnessSecret, ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkHTTP,
		APIOptions:       append([]func(*smithymiddleware.Stack) error(nil), awsmiddleware.AddUserAgentKeyValue("consumer", app)),
	})
}

// getHistory asks GET /_ferry/history with query; out, when set, takes a
// 200 answer.
func (f *ferry) getHistory(t testing.TB, query url.Values, out any) rawResponse {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL()+"/_ferry/history?"+query.Encode(), nil)
	resp := do(t, req)
	if out != nil && resp.Status == http.StatusOK {
		if err := json.Unmarshal([]byte(resp.Body), out); err != nil {
			t.Fatalf("history answer %s: %v", resp.Body, err)
		}
	}
	return resp
}

// story is the message's history, which must exist.
func (f *ferry) story(t testing.TB, queue, id string) server.History {
	t.Helper()
	var h server.History
	if resp := f.getHistory(t, url.Values{"queue": {queue}, "message": {id}}, &h); resp.Status != http.StatusOK {
		t.Fatalf("history of %s in %s: %d %s", id, queue, resp.Status, resp.Body)
	}
	return h
}

// wantNoStory checks that the message has no history there (404).
func (f *ferry) wantNoStory(t testing.TB, queue, id string) {
	t.Helper()
	if resp := f.getHistory(t, url.Values{"queue": {queue}, "message": {id}}, nil); resp.Status != http.StatusNotFound ||
		!strings.Contains(resp.Body, `"error"`) {
		t.Fatalf("history of %s in %s: %d %s, want 404", id, queue, resp.Status, resp.Body)
	}
}

func (f *ferry) sendOne(t testing.TB, queue, body string) string {
	t.Helper()
	out, err := f.json.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

// kinds lists the events' kinds.
func kinds(h server.History) string {
	var ks []string
	for _, e := range h.Events {
		ks = append(ks, e.Kind)
	}
	return strings.Join(ks, ",")
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func TestFailureHistoryDeadLetterAndBack(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "hist-dlq", nil)
	src := f.createQueue(t, "hist", map[string]string{"RedrivePolicy": redrivePolicy("hist-dlq", 3), "VisibilityTimeout": "10"})
	id := f.sendOne(t, src, "poison")

	// Three consumers receive it in turn and never delete it.
	var receivedAt []time.Time
	for i := 1; i <= 3; i++ {
		c := f.consumerClient(fmt.Sprintf("AKIDCONSUMER%d", i), fmt.Sprintf("worker-%d", i))
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src)})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive %d: %v, %v", i, out, err)
		}
		receivedAt = append(receivedAt, f.clk.Now())
		f.clk.Advance(10 * time.Second)
	}
	// The fourth receive moves it to the dead-letter queue.
	if got := f.receiveAll(t, src, 10); len(got) != 0 {
		t.Fatalf("the source handed out %d messages", len(got))
	}
	movedAt := f.clk.Now()
	waitCounts(t, f, dlq, 1)
	f.wantNoStory(t, src, id)

	h := f.story(t, arnPrefix+"hist-dlq", id) // by ARN
	if h.MessageID != id || h.Dropped != 0 {
		t.Fatalf("story = %+v", h)
	}
	if got, want := kinds(h), "receive,expiry,receive,expiry,receive,expiry,move"; got != want {
		t.Fatalf("events %s, want %s (%+v)", got, want, h.Events)
	}
	for i := range 3 {
		r, x := h.Events[2*i], h.Events[2*i+1]
		want := server.HistoryEvent{Kind: "receive", At: rfc(receivedAt[i]), ReceiveCount: i + 1,
			VisibleAt: rfc(receivedAt[i].Add(10 * time.Second)), SourceIP: "127.0.0.1",
			AccessKeyID: fmt.Sprintf("AKIDCONSUMER%d", i+1), UserAgent: r.UserAgent}
		if r != want || !strings.Contains(r.UserAgent, fmt.Sprintf("consumer/worker-%d", i+1)) {
			t.Errorf("receive %d = %+v, want %+v with consumer/worker-%d", i+1, r, want, i+1)
		}
		if x != (server.HistoryEvent{Kind: "expiry", At: want.VisibleAt, ReceiveCount: i + 1}) {
			t.Errorf("expiry %d = %+v", i+1, x)
		}
	}
	move := server.HistoryEvent{Kind: "move", At: rfc(movedAt), ReceiveCount: 3, From: arnPrefix + "hist", To: arnPrefix + "hist-dlq", Cause: "redrive"}
	if h.Events[6] != move {
		t.Errorf("move = %+v, want %+v", h.Events[6], move)
	}
	// By URL too, and in the queue's list.
	if byURL := f.story(t, dlq, id); len(byURL.Events) != len(h.Events) {
		t.Errorf("by URL: %+v", byURL)
	}
	var page server.HistoryPage
	if resp := f.getHistory(t, url.Values{"queue": {dlq}, "limit": {"10"}}, &page); resp.Status != 200 ||
		len(page.Messages) != 1 || page.Messages[0].MessageID != id || page.NextToken != "" {
		t.Fatalf("list: %d %s", resp.Status, resp.Body)
	}

	// A move task takes it back to its source as a new message: the
	// story goes along and tells of the move.
	f.clk.Advance(time.Minute)
	backAt := f.clk.Now()
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "hist-dlq")}); err != nil {
		t.Fatal(err)
	}
	f.waitTask(t, arnPrefix+"hist-dlq", "COMPLETED")
	f.wantNoStory(t, dlq, id)
	back := f.receiveAll(t, src, 10)
	if len(back) != 1 {
		t.Fatalf("%d messages back in the source", len(back))
	}
	newID := aws.ToString(back[0].MessageId)
	h = f.story(t, src, newID)
	if got, want := kinds(h), "receive,expiry,receive,expiry,receive,expiry,move,move,receive"; got != want {
		t.Fatalf("events after the move back %s, want %s", got, want)
	}
	moveBack := server.HistoryEvent{Kind: "move", At: rfc(backAt), ReceiveCount: 3, From: arnPrefix + "hist-dlq", To: arnPrefix + "hist",
		Cause: "move-task", PreviousID: id}
	if h.Events[7] != moveBack {
		t.Errorf("move back = %+v, want %+v", h.Events[7], moveBack)
	}
	if r := h.Events[8]; r.ReceiveCount != 1 || r.AccessKeyID != harnessKey {
		t.Errorf("receive after the move back = %+v", r)
	}

	// Deleting the message removes its story.
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: back[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	f.wantNoStory(t, src, newID)
}

func TestFailureHistoryGoesWithItsMessage(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	short := f.createQueue(t, "hist-retention", map[string]string{"MessageRetentionPeriod": "60", "VisibilityTimeout": "0"})
	purged := f.createQueue(t, "hist-purge", map[string]string{"VisibilityTimeout": "0"})
	gone := f.createQueue(t, "hist-gone", map[string]string{"VisibilityTimeout": "0"})
	ids := map[string]string{}
	for _, q := range []string{short, purged, gone} {
		ids[q] = f.sendOne(t, q, "m")
		if got := f.receiveAll(t, q, 1); len(got) != 1 {
			t.Fatalf("%s: received %d", q, len(got))
		}
		if h := f.story(t, q, ids[q]); kinds(h) != "receive,expiry" {
			t.Fatalf("%s: story %+v", q, h)
		}
	}
	// Retention.
	f.clk.Advance(61 * time.Second)
	f.wantNoStory(t, short, ids[short])
	// Purge.
	if _, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(purged)}); err != nil {
		t.Fatal(err)
	}
	f.wantNoStory(t, purged, ids[purged])
	// The queue's delete: its name comes back empty.
	if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(gone)}); err != nil {
		t.Fatal(err)
	}
	if resp := f.getHistory(t, url.Values{"queue": {gone}, "message": {ids[gone]}}, nil); resp.Status != 404 ||
		!strings.Contains(resp.Body, "does not exist") {
		t.Fatalf("deleted queue: %d %s", resp.Status, resp.Body)
	}
}

func TestFailureHistoryCapAndPages(t *testing.T) {
	t.Parallel()
	f := start(t)
	q := f.createQueue(t, "hist-cap", map[string]string{"VisibilityTimeout": "0"})
	id := f.sendOne(t, q, "again and again")
	const receives = engine.HistoryCap + 7
	for i := range receives {
		if got := f.receiveAll(t, q, 1); len(got) != 1 {
			t.Fatalf("receive %d: %d messages", i+1, len(got))
		}
		f.clk.Advance(time.Millisecond)
	}
	h := f.story(t, q, id)
	if h.Dropped != receives-engine.HistoryCap || len(h.Events) != 2*engine.HistoryCap {
		t.Fatalf("dropped %d, %d events; want %d and %d", h.Dropped, len(h.Events), receives-engine.HistoryCap, 2*engine.HistoryCap)
	}
	if first, last := h.Events[0], h.Events[len(h.Events)-2]; first.ReceiveCount != receives-engine.HistoryCap+1 || last.ReceiveCount != receives {
		t.Errorf("kept receives %d to %d, want %d to %d", first.ReceiveCount, last.ReceiveCount, receives-engine.HistoryCap+1, receives)
	}

	// Pages, newest message first.
	ids := []string{id}
	for i := range 2 {
		ids = append(ids, f.sendOne(t, q, fmt.Sprint("m", i)))
	}
	for range 2 {
		if got := f.receiveAll(t, q, 10); len(got) == 0 {
			t.Fatal("nothing received")
		}
	}
	var first, second server.HistoryPage
	if resp := f.getHistory(t, url.Values{"queue": {q}, "limit": {"2"}}, &first); resp.Status != 200 || len(first.Messages) != 2 ||
		first.NextToken == "" || first.Messages[0].MessageID != ids[2] || first.Messages[1].MessageID != ids[1] {
		t.Fatalf("first page: %d %s", resp.Status, resp.Body)
	}
	if resp := f.getHistory(t, url.Values{"queue": {q}, "limit": {"2"}, "nextToken": {first.NextToken}}, &second); resp.Status != 200 ||
		len(second.Messages) != 1 || second.NextToken != "" || second.Messages[0].MessageID != id {
		t.Fatalf("second page: %d %s", resp.Status, resp.Body)
	}
}

func TestFailureHistoryBadInput(t *testing.T) {
	t.Parallel()
	f := start(t)
	q := f.createQueue(t, "hist-in", nil)
	for _, c := range []struct {
		query  url.Values
		status int
		says   string
	}{
		{url.Values{"message": {"x"}}, 400, "queue: required"},
		{url.Values{"queue": {"arn:aws:sns:us-east-1:000000000000:t"}, "message": {"x"}}, 400, "queue URL or ARN"},
		{url.Values{"queue": {q}, "limit": {"0"}}, 400, "limit"},
		{url.Values{"queue": {q}, "limit": {"101"}}, 400, "limit"},
		{url.Values{"queue": {q}, "nextToken": {"zz"}}, 400, "nextToken"},
		{url.Values{"queue": {q}, "message": {"no-such-id"}}, 404, "no such message"},
		{url.Values{"queue": {arnPrefix + "nope"}, "message": {"x"}}, 404, "does not exist"},
	} {
		resp := f.getHistory(t, c.query, nil)
		if resp.Status != c.status || !strings.Contains(resp.Body, c.says) {
			t.Errorf("%v: %d %s, want %d saying %q", c.query, resp.Status, resp.Body, c.status, c.says)
		}
	}
}

func TestFailureHistoryOff(t *testing.T) {
	t.Parallel()
	f := start(t, func(c *server.Config) { c.NoFailureHistory = true })
	ctx := ctxT(t)
	dlq := f.createQueue(t, "off-dlq", nil)
	src := f.createQueue(t, "off", map[string]string{"RedrivePolicy": redrivePolicy("off-dlq", 1), "VisibilityTimeout": "0"})
	id := f.sendOne(t, src, "m")
	f.receiveAll(t, src, 1)
	f.receiveAll(t, src, 1) // moves it
	waitCounts(t, f, dlq, 1)
	resp := f.getHistory(t, url.Values{"queue": {dlq}, "message": {id}}, nil)
	if resp.Status != 404 || !strings.Contains(resp.Body, "failure history is off; start Ferry with --failure-history (FERRY_FAILURE_HISTORY)") {
		t.Fatalf("off: %d %s", resp.Status, resp.Body)
	}
	// Nothing was recorded.
	for _, name := range []string{"off", "off-dlq"} {
		hs, _, err := f.srv.Engine().MessageHistories(ctx, "000000000000", name, "", 10)
		if err != nil || len(hs) != 0 {
			t.Errorf("%s: stored histories %+v (%v)", name, hs, err)
		}
	}
}

func TestFailureHistoryOfSNSDeliveries(t *testing.T) {
	t.Parallel()
	f := start(t)
	topic := f.createTopic(t, "hist-topic", nil)
	dlqURL := f.createQueue(t, "hist-sns-dlq", nil)
	e := newEndpoint(t, f, func(n int) int {
		if n == 0 {
			return 200 // the confirmation
		}
		return 500
	})
	// One retry in each phase of the policy.
	policy := `{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":2,"numRetries":4,"numNoDelayRetries":1,` +
		`"numMinDelayRetries":1,"numMaxDelayRetries":1,"backoffFunction":"linear"}}`
	sub := f.confirmHTTP(t, topic, e, map[string]string{"DeliveryPolicy": policy,
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `hist-sns-dlq"}`})
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("never taken")})
	e.waitHits(2)
	for n := 3; n <= 6; n++ {
		testwait.Eventually(t, "the failure counted", f.failedAtLeast(sub, int64(n-2)))
		f.advanceUntil(t, time.Minute, func() bool { return e.count() >= n })
	}
	m := testwait.Some(t, "the dead-letter copy", func() []types.Message { return f.receiveAll(t, dlqURL, 1) })[0]
	h := f.story(t, dlqURL, aws.ToString(m.MessageId))
	if got, want := kinds(h), "delivery,delivery,delivery,delivery,delivery,move,receive"; got != want {
		t.Fatalf("events %s, want %s (%+v)", got, want, h.Events)
	}
	for i, phase := range []string{"initial", "immediate-retry", "pre-backoff", "backoff", "post-backoff"} {
		ev := h.Events[i]
		if ev.Phase != phase || ev.Status != 500 || ev.Fault != "server" || ev.ReceiveCount != i+1 || ev.Error != "" ||
			ev.Latency == "" || !strings.HasPrefix(ev.Endpoint, "http://127.0.0.1:") || ev.At != rfc(e.get(i+1).at) {
			t.Errorf("attempt %d = %+v, want phase %s, status 500 at %s", i+1, ev, phase, rfc(e.get(i+1).at))
		}
	}
	if mv := h.Events[5]; mv.From != sub || mv.To != arnPrefix+"hist-sns-dlq" || mv.Cause != "sns-dead-letter" || mv.ReceiveCount != 5 {
		t.Errorf("move = %+v", mv)
	}
}
