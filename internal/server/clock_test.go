package server_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	awsv1 "github.com/aws/aws-sdk-go/aws"
	cwv1 "github.com/aws/aws-sdk-go/service/cloudwatch"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/testwait"
)

// controlled runs the server, and its store, on a controlled clock with
// --clock-control on.
func controlled(c *clock.Controlled) option {
	return func(cfg *server.Config) { cfg.Clock, cfg.ClockControl = c, true }
}

// startControlled starts a Ferry on a controlled clock, frozen, and
// returns both.
// wantNoStalls fails t if a step of c's moves went on without the work
// it was waiting for done (the clock's hold limit ran out).
func wantNoStalls(t *testing.T, c *clock.Controlled) {
	t.Helper()
	if n := c.Stalls(); n != 0 {
		t.Errorf("%d steps of the clock's moves went on without their work done", n)
	}
}

func startControlled(t *testing.T, opts ...option) (*ferry, *clock.Controlled) {
	t.Helper()
	c := clock.NewControlled()
	f := start(t, append(opts, controlled(c))...)
	c.Freeze()
	return f, c
}

// clockCall calls a /_ferry/clock path and decodes its answer.
func clockCall(t testing.TB, f *ferry, method, verb, body, token string) (int, map[string]any) {
	t.Helper()
	u := f.srv.URL() + "/_ferry/clock"
	if verb != "" {
		u += "/" + verb
	}
	req := mustRequest(t, method, u)
	if body != "" {
		req.Body = http.NoBody
		req, _ = http.NewRequestWithContext(req.Context(), method, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r := do(t, req)
	var out map[string]any
	_ = json.Unmarshal([]byte(r.Body), &out)
	return r.Status, out
}

// advance moves f's clock by d through the admin API.
func advance(t testing.TB, f *ferry, d string) {
	t.Helper()
	if status, out := clockCall(t, f, "POST", "advance", `{"duration":"`+d+`"}`, ""); status != 200 {
		t.Fatalf("advance %s: %d %v", d, status, out)
	}
}

func (f *ferry) visible(t testing.TB, url string) int {
	t.Helper()
	out, err := f.json.GetQueueAttributes(ctxT(t), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	return n
}

// shortPoll receives at once, without waiting.
func (f *ferry) shortPoll(t testing.TB, url string) []types.Message {
	t.Helper()
	out, err := f.json.ReceiveMessage(ctxT(t), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func (f *ferry) send(t testing.TB, in *sqs.SendMessageInput) *sqs.SendMessageOutput {
	t.Helper()
	out, err := f.json.SendMessage(ctxT(t), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The admin API: state, freeze, resume, set and advance, with their
// refusals.
func TestClockAPI(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t)
	frozenAt := c.Now()
	status, st := clockCall(t, f, "GET", "", "", "")
	if status != 200 || st["frozen"] != true || st["now"] != frozenAt.UTC().Format(time.RFC3339Nano) {
		t.Fatalf("GET /_ferry/clock: %d %v", status, st)
	}
	target := frozenAt.Add(48 * time.Hour).UTC()
	for _, tc := range []struct {
		verb, body string
		status     int
		want       string // in the answer's now or error
	}{
		{"advance", `{"duration":"1d"}`, 200, frozenAt.Add(24 * time.Hour).UTC().Format(time.RFC3339Nano)},
		{"set", `{"time":"` + target.Format(time.RFC3339Nano) + `"}`, 200, target.Format(time.RFC3339Nano)},
		{"set", `{"time":"` + frozenAt.UTC().Format(time.RFC3339) + `"}`, 409, "the clock never goes back"},
		{"advance", `{"duration":"-1h"}`, 409, "the clock never goes back"},
		{"advance", `{"duration":"14 days"}`, 400, `duration "14 days"`},
		{"advance", `{"duration":"1h","extra":1}`, 400, "unknown field"},
		{"set", `{"time":"yesterday"}`, 400, "RFC 3339"},
		{"set", `not json`, 400, "body"},
	} {
		status, out := clockCall(t, f, "POST", tc.verb, tc.body, "")
		got := fmt.Sprint(out["now"], out["error"])
		if status != tc.status || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %d %v; want %d with %q", tc.verb, tc.body, status, out, tc.status, tc.want)
		}
	}
	if status, st := clockCall(t, f, "POST", "resume", "", ""); status != 200 || st["frozen"] != false {
		t.Fatalf("resume: %d %v", status, st)
	}
	// Running, two days ahead of the wall clock.
	if off := c.Offset(); off < 48*time.Hour-time.Minute || off > 48*time.Hour+time.Minute {
		t.Fatalf("offset after resume = %v", off)
	}
	if status, st := clockCall(t, f, "POST", "freeze", "", ""); status != 200 || st["frozen"] != true {
		t.Fatalf("freeze: %d %v", status, st)
	}
	// The gauge shows the offset.
	r := do(t, mustRequest(t, "GET", f.srv.URL()+"/metrics"))
	var gauge float64
	for _, line := range strings.Split(r.Body, "\n") {
		if v, ok := strings.CutPrefix(line, "ferry_clock_offset_seconds "); ok {
			gauge, _ = strconv.ParseFloat(v, 64)
		}
	}
	if gauge < (48*time.Hour).Seconds()-120 || gauge > (48*time.Hour).Seconds()+120 {
		t.Fatalf("ferry_clock_offset_seconds = %v, want two days", gauge)
	}
}

// Without --clock-control the paths answer 404 naming the flag; with auth
// on they are admin endpoints, closed without an admin token.
func TestClockOffAndGuarded(t *testing.T) {
	t.Parallel()
	off := start(t)
	for _, verb := range []string{"", "freeze", "resume", "set", "advance"} {
		method := "POST"
		if verb == "" {
			method = "GET"
		}
		status, out := clockCall(t, off, method, verb, `{}`, "")
		if status != 404 || !strings.Contains(fmt.Sprint(out["error"]), "--clock-control (FERRY_CLOCK_CONTROL)") {
			t.Errorf("%s %s without the flag: %d %v", method, verb, status, out)
		}
	}
	closed, c := startControlled(t, verifyingHarness(t))
	before := c.Now()
	if status, _ := clockCall(t, closed, "POST", "advance", `{"duration":"1h"}`, ""); status != http.StatusForbidden {
		t.Errorf("advance with auth on and no admin token: %d", status)
	}
	if !c.Now().Equal(before) {
		t.Fatal("a refused advance moved the clock")
	}
	tok, _ := startControlled(t, verifyingHarness(t), func(c *server.Config) { c.AdminToken = "tok" })
	if status, _ := clockCall(t, tok, "POST", "advance", `{"duration":"1h"}`, ""); status != http.StatusUnauthorized {
		t.Errorf("advance without the token: %d", status)
	}
	if status, out := clockCall(t, tok, "POST", "advance", `{"duration":"1h"}`, "tok"); status != 200 {
		t.Errorf("advance with the token: %d %v", status, out)
	}
}

// SQS's timers follow the clock: a visibility timeout ends exactly when
// the clock crosses it, a delay likewise, a long poll of 20 s answers
// empty once the clock moved 20 s, retention removes, the FIFO
// deduplication window, the purge interval and the wait before a deleted
// queue's name is free end.
func TestClockSQSTimers(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t)
	ctx := ctxT(t)

	t.Run("visibility timeout", func(t *testing.T) {
		url := f.createQueue(t, "clock-vis", map[string]string{"VisibilityTimeout": "30"})
		f.send(t, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("again")})
		if got := f.shortPoll(t, url); len(got) != 1 {
			t.Fatalf("received %d", len(got))
		}
		advance(t, f, "29999ms")
		if got := f.shortPoll(t, url); len(got) != 0 {
			t.Fatalf("visible again %v early", time.Millisecond)
		}
		advance(t, f, "1ms")
		got := f.shortPoll(t, url)
		if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("after the timeout: %+v", got)
		}
	})

	t.Run("delay", func(t *testing.T) {
		url := f.createQueue(t, "clock-delay", nil)
		f.send(t, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("later"), DelaySeconds: 10})
		advance(t, f, "9s")
		if got := f.shortPoll(t, url); len(got) != 0 {
			t.Fatal("delayed message visible a second early")
		}
		advance(t, f, "1s")
		if got := f.shortPoll(t, url); len(got) != 1 || aws.ToString(got[0].Body) != "later" {
			t.Fatalf("after the delay: %+v", got)
		}
	})

	t.Run("long poll", func(t *testing.T) {
		url := f.createQueue(t, "clock-poll", nil)
		timers := c.Pending()
		// Bounded well below the poll's 20 s of real time: only the clock
		// can end it in time.
		pctx, cancel := context.WithTimeout(ctx, testwait.Deadline)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			out, err := f.json.ReceiveMessage(pctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
			if err == nil && len(out.Messages) > 0 {
				err = fmt.Errorf("received %d", len(out.Messages))
			}
			done <- err
		}()
		testwait.Eventually(t, "the long poll to wait on the clock", func() bool { return c.Pending() > timers })
		advance(t, f, "19s")
		select {
		case err := <-done:
			t.Fatalf("the poll ended after 19 s: %v", err)
		default:
		}
		advance(t, f, "1s")
		if err := testwait.Receive(t, "the long poll's answer", done); err != nil {
			t.Fatalf("long poll: %v", err)
		}
	})

	t.Run("retention", func(t *testing.T) {
		url := f.createQueue(t, "clock-retention", map[string]string{"MessageRetentionPeriod": "60"})
		for i := range 3 {
			f.send(t, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))})
		}
		advance(t, f, "59s")
		if n := f.visible(t, url); n != 3 {
			t.Fatalf("%d messages before their retention ends", n)
		}
		advance(t, f, "1s")
		if n := f.visible(t, url); n != 0 {
			t.Fatalf("%d messages after their retention ended", n)
		}
	})

	t.Run("deduplication window", func(t *testing.T) {
		url := f.createQueue(t, "clock-dedup.fifo", map[string]string{"FifoQueue": "true"})
		send := func() string {
			return aws.ToString(f.send(t, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("once"),
				MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")}).MessageId)
		}
		first := send()
		advance(t, f, "4m59s")
		if again := send(); again != first {
			t.Fatalf("deduplicated within the window: %s, then %s", first, again)
		}
		advance(t, f, "2s") // the window, and the slack of its sweep (a second)
		if again := send(); again == first {
			t.Fatal("still deduplicated after the window")
		}
		if n := f.visible(t, url); n != 2 {
			t.Fatalf("%d messages, want 2", n)
		}
	})

	t.Run("purge interval", func(t *testing.T) {
		url := f.createQueue(t, "clock-purge", nil)
		purge := func() error {
			_, err := f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
			return err
		}
		if err := purge(); err != nil {
			t.Fatal(err)
		}
		advance(t, f, "59s")
		wantAPIError(t, purge(), "AWS.SimpleQueueService.PurgeQueueInProgress", 403)
		advance(t, f, "1s")
		if err := purge(); err != nil {
			t.Fatalf("purge after 60 s: %v", err)
		}
	})

	t.Run("a deleted queue's name", func(t *testing.T) {
		url := f.createQueue(t, "clock-deleted", nil)
		if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Fatal(err)
		}
		advance(t, f, "59s")
		_, err := f.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("clock-deleted")})
		wantAPIError(t, err, "AWS.SimpleQueueService.QueueDeletedRecently", 400)
		advance(t, f, "1s")
		f.createQueue(t, "clock-deleted", nil)
	})
}

// A move task's velocity follows the clock: each advanced second moves
// MaxNumberOfMessagesPerSecond more, and one advance of several seconds
// moves each second's share.
func TestClockMoveTaskVelocity(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "cm-dlq", nil)
	f.createQueue(t, "cm-src", map[string]string{"RedrivePolicy": redrivePolicy("cm-dlq", 1)})
	f.createQueue(t, "cm-dest", nil)
	for i := 0; i < 100; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", j)), MessageBody: aws.String(fmt.Sprint(j))})
		}
		if _, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "cm-dlq"),
		DestinationArn: aws.String(arnPrefix + "cm-dest"), MaxNumberOfMessagesPerSecond: aws.Int32(5)}); err != nil {
		t.Fatal(err)
	}
	moved := func() int64 { return f.waitTask(t, arnPrefix+"cm-dlq", "RUNNING").ApproximateNumberOfMessagesMoved }
	// The first second's five move at once, in real time; then the runner
	// waits for the next second on the clock. Later waits are armed before
	// the step that woke the runner ends.
	testwait.Eventually(t, "the first second's moves and the wait for the next", func() bool {
		return moved() >= 5 && c.Waiting(c.Now().Add(time.Second)) > 0
	})
	for sec := int64(1); sec <= 3; sec++ {
		advance(t, f, "1s")
		if m := moved(); m != 5*(sec+1) {
			t.Fatalf("after %d s advanced, %d moved at 5/s", sec, m)
		}
	}
	advance(t, f, "10s")
	if m := moved(); m != 5*14 {
		t.Fatalf("after 13 s advanced, %d moved at 5/s", m)
	}
	advance(t, f, "1m")
	f.waitTask(t, arnPrefix+"cm-dlq", "COMPLETED")
	if n := f.visible(t, f.srv.URL()+"/000000000000/cm-dest"); n != 100 {
		t.Fatalf("%d messages reached the destination", n)
	}
}

// An HTTP endpoint that fails sees SNS's retries at the delivery policy's
// instants while one advance crosses them all.
func TestClockSNSRetries(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t)
	topic := f.createTopic(t, "clock-flaky", nil)
	e := newEndpointOn(t, c, func(n int) int {
		if n == 0 {
			return 200 // the confirmation
		}
		return 500
	})
	sub := f.confirmHTTP(t, topic, e, nil)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("retry me")})
	// The first attempt is made at once; its retry is set once counted.
	testwait.Eventually(t, "the first attempt to fail", f.failedAtLeast(sub, 1))
	advance(t, f, "2m")
	// Three retries, each 20 s (± 10 %) after the attempt before: the
	// default policy of HTTP/S.
	if n := e.count(); n != 5 {
		t.Fatalf("%d requests after 2 minutes, want the confirmation, the attempt and 3 retries", n)
	}
	for i := 2; i < 5; i++ {
		gap := e.get(i).at.Sub(e.get(i - 1).at)
		if gap < 18*time.Second || gap > 22*time.Second+clock.Step {
			t.Errorf("retry %d came %v after the attempt before, want 20 s ± 10%%", i-1, gap)
		}
	}
	wantNoStalls(t, c)
}

// An alarm goes to ALARM once its evaluation periods are advanced through:
// the metric is sampled at each minute and the alarm evaluated at each.
// On a shared store an evaluation runs cloudwatch.DefaultEvaluateAfter
// past its minute, on the minutes every node has saved: the advance past
// the three periods covers that lag too.
func TestClockAlarm(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t)
	ctx := ctxT(t)
	began := c.Now()
	cw := cwClient(f.srv.URL())
	url := f.createQueue(t, "clock-backlog", nil)
	f.send(t, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("waiting")})
	if _, err := cw.PutMetricAlarmWithContext(ctx, &cwv1.PutMetricAlarmInput{
		AlarmName:          awsv1.String("backlog"),
		Namespace:          awsv1.String("AWS/SQS"),
		MetricName:         awsv1.String("ApproximateNumberOfMessagesVisible"),
		Dimensions:         []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("clock-backlog")}},
		Statistic:          awsv1.String("Maximum"),
		Period:             awsv1.Int64(60),
		EvaluationPeriods:  awsv1.Int64(3),
		DatapointsToAlarm:  awsv1.Int64(3),
		Threshold:          awsv1.Float64(1),
		ComparisonOperator: awsv1.String("GreaterThanOrEqualToThreshold"),
	}); err != nil {
		t.Fatal(err)
	}
	advance(t, f, "2m")
	if s := alarmState(t, cw); s == "ALARM" {
		t.Fatal("ALARM after two minutes: three periods of three are not there yet")
	}
	advance(t, f, "3m")
	desc, err := cw.DescribeAlarmsWithContext(ctx, &cwv1.DescribeAlarmsInput{})
	if err != nil || len(desc.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms: %v %v", desc, err)
	}
	if a := desc.MetricAlarms[0]; *a.StateValue != "ALARM" {
		t.Fatalf("state %s after five minutes of a backlog (clock at %v), want ALARM: %s", *a.StateValue, c.Now(), *a.StateReason)
	}
	// The datapoints behind it are the moved clock's minutes: one per
	// minute crossed, none past the clock.
	stats, err := cw.GetMetricStatisticsWithContext(ctx, &cwv1.GetMetricStatisticsInput{
		Namespace:  awsv1.String("AWS/SQS"),
		MetricName: awsv1.String("ApproximateNumberOfMessagesVisible"),
		Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("clock-backlog")}},
		StartTime:  awsv1.Time(began.Add(-time.Minute)),
		EndTime:    awsv1.Time(c.Now().Add(time.Hour)),
		Period:     awsv1.Int64(60),
		Statistics: []*string{awsv1.String("Maximum")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Datapoints) != 5 {
		t.Fatalf("%d datapoints over five minutes of the clock, want 5: %v", len(stats.Datapoints), stats.Datapoints)
	}
	for _, d := range stats.Datapoints {
		if *d.Maximum != 1 || d.Timestamp.Before(began.Add(-time.Minute)) || d.Timestamp.After(c.Now()) {
			t.Errorf("datapoint %v of %v at %v: want 1, between %v and %v", *d.Maximum, d.Timestamp, c.Now(), began, c.Now())
		}
	}
}

// SigV4 requests, signed on the wall clock, still pass after the clock
// moved 14 days: the skew check reads the wall clock.
func TestClockSigV4AfterAdvance(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t, verifyingHarness(t), func(c *server.Config) { c.AdminToken = "tok" })
	moved := c.Now().Add(14 * 24 * time.Hour)
	if status, out := clockCall(t, f, "POST", "advance", `{"duration":"14d"}`, "tok"); status != 200 {
		t.Fatalf("advance: %d %v", status, out)
	}
	if now := c.Now(); !now.Equal(moved) {
		t.Fatalf("clock at %v after the advance, want %v", now, moved)
	}
	url := f.createQueue(t, "signed", nil)
	sent := f.send(t, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("signed now")})
	got := f.shortPoll(t, url)
	if len(got) != 1 || aws.ToString(got[0].MessageId) != aws.ToString(sent.MessageId) {
		t.Fatalf("received %+v", got)
	}
	// Its SentTimestamp is on the moved clock.
	ms, _ := strconv.ParseInt(got[0].Attributes["SentTimestamp"], 10, 64)
	if sentAt := time.UnixMilli(ms); !sentAt.Equal(moved.Truncate(time.Millisecond)) {
		t.Fatalf("SentTimestamp %v, want the frozen clock's %v", sentAt, moved)
	}
}

// A move task that outlives SQS's 36 hours fails with MoveTaskTimedOut, on
// the clock: at 1 message a second over more messages than 36 hours move,
// it is RUNNING a second before its 36 hours are up, having moved each
// second's message, and FAILED at them, the rest left in its source.
func TestClockMoveTaskTimesOutAt36Hours(t *testing.T) {
	t.Parallel()
	// On PostgreSQL a step of this task moves one message in about 0.1 s
	// over a source this size: 36 hours of them take hours. The
	// conformance suite's testMoveTaskTimeout checks its limit there.
	embeddedOnly(t, "129,600 one-message move steps take hours")
	f, c := startControlled(t)
	// 129,600 steps of the clock, each a move: seconds, a minute with -race.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const limit = int(engine.MoveTaskMaxDuration / time.Second) // one a second
	const total = limit + 1000
	f.createQueue(t, "tl-dlq", nil)
	f.createQueue(t, "tl-src", map[string]string{"RedrivePolicy": redrivePolicy("tl-dlq", 1)})
	f.createQueue(t, "tl-dest", nil)
	f.fill(ctx, t, "tl-dlq", "outlives the task", total)
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "tl-dlq"),
		DestinationArn: aws.String(arnPrefix + "tl-dest"), MaxNumberOfMessagesPerSecond: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	task := func() types.ListMessageMoveTasksResultEntry {
		out, err := f.json.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "tl-dlq")})
		if err != nil || len(out.Results) != 1 {
			t.Fatalf("ListMessageMoveTasks: %+v, %v", out, err)
		}
		return out.Results[0]
	}
	testwait.Eventually(t, "the first second's move and the wait for the next", func() bool {
		return task().ApproximateNumberOfMessagesMoved == 1 && c.Waiting(c.Now().Add(time.Second)) > 0
	})
	advance(t, f, (engine.MoveTaskMaxDuration - time.Second).String())
	if got := task(); aws.ToString(got.Status) != "RUNNING" || got.ApproximateNumberOfMessagesMoved != int64(limit) {
		t.Fatalf("a second before 36 hours: %s, %d moved; want RUNNING, %d moved",
			aws.ToString(got.Status), got.ApproximateNumberOfMessagesMoved, limit)
	}
	advance(t, f, "1s")
	got := task()
	if aws.ToString(got.Status) != "FAILED" || aws.ToString(got.FailureReason) != "AWS.SimpleQueueService.MoveTaskTimedOut" ||
		got.ApproximateNumberOfMessagesMoved != int64(limit) {
		t.Fatalf("at 36 hours: %s (%s), %d moved; want FAILED (AWS.SimpleQueueService.MoveTaskTimedOut), %d moved",
			aws.ToString(got.Status), aws.ToString(got.FailureReason), got.ApproximateNumberOfMessagesMoved, limit)
	}
	if n := f.visible(t, f.srv.URL()+"/000000000000/tl-dest"); n != limit {
		t.Errorf("%d messages reached the destination, want %d", n, limit)
	}
	if n := f.visible(t, f.srv.URL()+"/000000000000/tl-dlq"); n != total-limit {
		t.Errorf("%d messages left in the source, want %d", n, total-limit)
	}
	wantNoStalls(t, c)
}

// fill puts n copies of body in queue name of the default account through
// the engine, a thousand a call: a backlog far faster than the API makes
// one.
func (f *ferry) fill(ctx context.Context, t testing.TB, name, body string, n int) {
	t.Helper()
	sum := md5.Sum([]byte(body))
	batch := make([]engine.NewMessage, 1000)
	for i := range batch {
		batch[i] = engine.NewMessage{Body: body, MD5OfBody: hex.EncodeToString(sum[:])}
	}
	for sent := 0; sent < n; sent += len(batch) {
		if _, err := f.srv.Engine().Send(ctx, "000000000000", name, batch[:min(len(batch), n-sent)]); err != nil {
			t.Fatal(err)
		}
	}
}

// A fault's 5xx to the first four attempts of an SQS subscription's
// delivery: the first is the publish's, three retries follow at once,
// the fifth attempt one second later (AWS-managed policy, ± jitter) on
// the controlled clock delivers the message, not before.
func TestClockSNSRetriesToSQS(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t, withFaults(3))
	topic, qURL, _ := f.sqsRetries(t, "clock-at-once", nil, `"status":500,"count":4`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("at last")})
	f.waitInjected(t, "four attempts to fail", 4)
	if n := f.visible(t, qURL); n != 0 {
		t.Fatalf("%d messages in the queue before the fifth attempt is due", n)
	}
	advance(t, f, "800ms")
	if n := f.visible(t, qURL); n != 0 {
		t.Fatalf("%d messages in the queue 0.8 s on, before the fifth attempt is due", n)
	}
	advance(t, f, "400ms")
	testwait.Eventually(t, "the fifth attempt to deliver", func() bool { return f.visible(t, qURL) == 1 })
	if m := f.receiveAll(t, qURL, 10); len(m) != 1 || aws.ToString(m[0].Body) != "at last" {
		t.Fatalf("queue holds %v", m)
	}
	wantNoStalls(t, c)
}

// A FIFO topic's delivery that a fault fails waits in the subscription's
// retry queue, and the later messages of its group wait behind it, while
// another group goes on: the FIFO queue gets the group in order once the
// fifth attempt delivers the first.
func TestClockSNSRetriesKeepFIFOOrder(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t, withFaults(3))
	topic, qURL, _ := f.sqsRetries(t, "clock-order.fifo", nil, `"status":500,"count":4`)
	publish := func(group, body string) {
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body), MessageGroupId: aws.String(group)})
	}
	publish("g", "g1")
	f.waitInjected(t, "four attempts to fail", 4)
	publish("g", "g2")
	publish("h", "h1")
	publish("g", "g3")
	testwait.Eventually(t, "the other group's message delivered", func() bool { return f.visible(t, qURL) == 1 })
	if m := f.receiveAll(t, qURL, 10); bodies(m) != "h1" {
		t.Fatalf("before the retry, the queue holds %q, want h1 alone", bodies(m))
	}
	advance(t, f, "1200ms")
	testwait.Eventually(t, "the group delivered", func() bool { return f.visible(t, qURL) == 3 })
	// One receive hands out a FIFO group's messages in order.
	if got := bodies(f.receiveAll(t, qURL, 10)); got != "g1,g2,g3" {
		t.Errorf("the group arrived as %q, want g1,g2,g3", got)
	}
	wantNoStalls(t, c)
}

// An unsubscribed at-once subscription's retries go with it: its retry
// queue is deleted, and the retry once due reaches nobody.
func TestClockSNSRetriesEndWithTheSubscription(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t, withFaults(4))
	ctx := ctxT(t)
	topic, qURL, sub := f.sqsRetries(t, "clock-unsubscribed", nil, `"status":500,"count":4`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("never")})
	f.waitInjected(t, "four attempts to fail", 4)
	hidden := func() int {
		qs, err := f.srv.Engine().ListQueues(ctx, delivery.QueueAccount, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(qs)
	}
	if n := hidden(); n != 1 {
		t.Fatalf("%d hidden queues with a retry waiting, want the retry queue", n)
	}
	if _, err := f.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Fatal(err)
	}
	if n := hidden(); n != 0 {
		t.Errorf("%d hidden queues after the unsubscribe", n)
	}
	advance(t, f, "2s")
	if n := f.visible(t, qURL); n != 0 {
		t.Errorf("%d messages reached the queue after the unsubscribe", n)
	}
	wantNoStalls(t, c)
}

// An SQS subscription whose deliveries a fault fails with 503 always is
// retried on the AWS-managed policy, every 20 s once past its backoff,
// through days of advances; every step finishes with its work, none
// waits out the hold limit (the worker's poll and the retry's visibility
// fall due in the same steps). The failure history is off, to keep the
// test to the hand-overs (TestClockSNSRetriesGiveUpAfter23Days keeps it).
func TestClockSNSRetriesForDays(t *testing.T) {
	t.Parallel()
	f, c := startControlled(t, withFaults(5), func(cfg *server.Config) { cfg.NoFailureHistory = true })
	dlq := f.createQueue(t, "clock-days-dlq", nil)
	topic, qURL, _ := f.sqsRetries(t, "clock-days", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `clock-days-dlq"}`}, `"status":503`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("never delivered")})
	f.waitInjected(t, "the immediate attempts to fail", 4)
	// A PostgreSQL store's attempts cost statements: half a day of them
	// keeps the test as short as two days on the embedded store.
	days := 2.0
	if onPostgres(t) {
		days = 0.5
	}
	for range int(days * 4) {
		advance(t, f, "6h")
	}
	// 20 s apart, ± 10 % each: 4,320 attempts a day, give or take.
	want := days * 4_320
	if n := float64(f.faultListing(t).Rules[0].Injected); n < want*0.96 || n > want*1.04 {
		t.Errorf("%.0f attempts failed in %.1f days, want about %.0f", n, days, want)
	}
	wantNoStalls(t, c)
	if n := f.visible(t, qURL) + f.visible(t, dlq); n != 0 {
		t.Errorf("%d messages delivered or given up while retrying", n)
	}
}

// The AWS-managed policy gives up after its 100,015th attempt, about 23
// days on: the message reaches the subscription's dead-letter queue, its
// history the latest attempts and the count of the others. Embedded only:
// on PostgreSQL each attempt costs statements, 100,015 of them minutes.
func TestClockSNSRetriesGiveUpAfter23Days(t *testing.T) {
	t.Parallel()
	embeddedOnly(t, "100,015 attempts take minutes of statements")
	f, c := startControlled(t, withFaults(7))
	dlq := f.createQueue(t, "clock-23-days-dlq", nil)
	topic, qURL, _ := f.sqsRetries(t, "clock-23-days", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `clock-23-days-dlq"}`}, `"status":503`)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("given up")})
	f.waitInjected(t, "the immediate attempts to fail", 4)
	for range 22 {
		advance(t, f, "24h")
	}
	if n := f.visible(t, dlq); n != 0 {
		t.Fatalf("given up after %d attempts, before 22 days", f.faultListing(t).Rules[0].Injected)
	}
	advance(t, f, "48h")
	testwait.Eventually(t, "the dead-letter queue to get the message", func() bool { return f.visible(t, dlq) == 1 })
	if n := f.faultListing(t).Rules[0].Injected; n != 100_015 {
		t.Errorf("%d attempts failed, want 100,015", n)
	}
	if m := f.receiveAll(t, dlq, 10); bodies(m) != "given up" {
		t.Errorf("the dead-letter queue holds %q", bodies(m))
	}
	if n := f.visible(t, qURL); n != 0 {
		t.Errorf("%d messages delivered", n)
	}
	wantNoStalls(t, c)
}
