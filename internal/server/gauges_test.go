package server_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/testwait"
)

// tick moves the fake clock to the start of the next minute and waits for
// the sampler's tick there; it returns that minute.
func (f *ferry) tick(t testing.TB) time.Time {
	t.Helper()
	at := f.clk.Now().Truncate(time.Minute).Add(time.Minute)
	f.jump(t, at)
	return at
}

// jump sets the clock to at, past the sampler's next tick, and waits until
// the tick that this fires has completed, so that no tick is still running
// when the test goes on.
func (f *ferry) jump(t testing.TB, at time.Time) {
	t.Helper()
	if !f.set(t, at) {
		t.Fatalf("jump to %v fires no sampler tick", at)
	}
}

// set moves the clock to at and, when that fires the sampler's tick (as a
// move of seconds does on a shared store, which ticks every SaveEvery),
// waits until the tick has completed; it reports whether it did. A tick
// still under way from an earlier move is waited for first: moving the
// clock under it would re-arm it past the tick this move means to fire.
func (f *ferry) set(t testing.TB, at time.Time) bool {
	t.Helper()
	var n uint64
	var due time.Time
	testwait.Eventually(t, "the sampler between ticks", func() bool {
		n, due = f.srv.Sampler().NextTick()
		return due.After(f.clk.Now())
	})
	f.clk.Set(at)
	if at.Before(due) {
		return false
	}
	testwait.Eventually(t, "the sampler's tick", func() bool { return f.srv.Sampler().Ticks() != n })
	return true
}

// point is the one datapoint of a series in minute at; ok is false when
// the minute has none.
func (f *ferry) point(t testing.TB, metric, queue string, at time.Time) (metrics.Datapoint, bool) {
	t.Helper()
	dps := f.srv.Metrics().Datapoints(testAccount, metrics.NamespaceSQS, metric, metrics.Queue(queue), at, at.Add(time.Minute))
	switch len(dps) {
	case 0:
		return metrics.Datapoint{}, false
	case 1:
		return dps[0], true
	}
	t.Fatalf("%s %s: %d datapoints in one minute", queue, metric, len(dps))
	return metrics.Datapoint{}, false
}

// wantGauges checks one sample of each gauge (nil: no sample) in minute at.
func (f *ferry) wantGauges(t testing.TB, queue string, at time.Time, want map[string]*float64) {
	t.Helper()
	for metric, w := range want {
		dp, ok := f.point(t, metric, queue, at)
		switch {
		case w == nil && ok:
			t.Errorf("%s %s at %s: %+v, want none", queue, metric, at.Format(time.TimeOnly), dp)
		case w == nil:
		case !ok:
			t.Errorf("%s %s at %s: no datapoint, want %v", queue, metric, at.Format(time.TimeOnly), *w)
		case dp.SampleCount != 1 || dp.Sum != *w || dp.Minimum != *w || dp.Maximum != *w:
			t.Errorf("%s %s at %s: %+v, want one sample of %v", queue, metric, at.Format(time.TimeOnly), dp, *w)
		}
	}
}

func num(v float64) *float64 { return &v }

// TestMetricsGaugesSampled: once a minute every active queue's gauges are
// sampled; FIFO queues add their groups in flight.
func TestMetricsGaugesSampled(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	std := f.createQueue(t, "g-std", nil)
	fifo := f.createQueue(t, "g.fifo", fifoAttrs())
	sentAt := f.clk.Now()
	for _, body := range []string{"a", "b"} {
		if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(std), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(std), MessageBody: aws.String("later"), DelaySeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(std), MaxNumberOfMessages: 1, VisibilityTimeout: 900}); err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive = %v, %v", out, err)
	}
	for i, g := range []string{"g1", "g1", "g2", "g3"} {
		f.sendFIFO(t, fifo, fmt.Sprint("m", i), g, fmt.Sprint("d", i))
	}
	// g1 and g2 in flight: one receive takes g1's head, the next (g1 is
	// blocked) g2's.
	for _, want := range []string{"m0", "m2"} {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(fifo), MaxNumberOfMessages: 1, VisibilityTimeout: 900})
		if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != want {
			t.Fatalf("FIFO receive = %v, %v; want %s", out, err, want)
		}
	}

	m1 := f.tick(t)
	age := m1.Sub(sentAt) / time.Second
	f.wantGauges(t, "g-std", m1, map[string]*float64{
		metrics.MessagesVisible:        num(1),
		metrics.MessagesNotVisible:     num(1),
		metrics.MessagesDelayed:        num(1),
		metrics.AgeOfOldestMessage:     num(float64(age)),
		metrics.GroupsWithInflightMsgs: nil,
	})
	f.wantGauges(t, "g.fifo", m1, map[string]*float64{
		metrics.MessagesVisible:        num(2),
		metrics.MessagesNotVisible:     num(2),
		metrics.MessagesDelayed:        num(0),
		metrics.AgeOfOldestMessage:     num(float64(age)),
		metrics.GroupsWithInflightMsgs: num(2),
	})
	// The next minute has its own sample; the one before has none.
	m2 := f.tick(t)
	f.wantGauges(t, "g-std", m2, map[string]*float64{metrics.AgeOfOldestMessage: num(float64(m2.Sub(sentAt) / time.Second))})
	f.wantGauges(t, "g-std", m1.Add(-time.Minute), map[string]*float64{metrics.MessagesVisible: nil})

	body := scrape(t, f)
	for _, line := range []string{
		fmt.Sprintf(`ferry_sqs_age_of_oldest_message_seconds{account="000000000000",queue="g-std"} %d`, m2.Sub(sentAt)/time.Second),
		`ferry_sqs_groups_with_inflight_messages{account="000000000000",queue="g.fifo"} 2`,
		`ferry_sqs_messages_delayed{account="000000000000",queue="g-std"} 1`,
		`ferry_sqs_queues{account="000000000000"} 2`,
		`ferry_sqs_messages_stored{account="000000000000"} 7`,
		`# TYPE ferry_sqs_age_of_oldest_message_seconds gauge`,
		`# TYPE ferry_sqs_groups_with_inflight_messages gauge`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(body, `ferry_sqs_groups_with_inflight_messages{account="000000000000",queue="g-std"}`) {
		t.Error("/metrics shows groups in flight for a standard queue")
	}
}

// TestMetricsActiveQueues: a queue is sampled while it holds messages or
// an action touched it within six hours; SNS's hidden delivery queues are
// never reported.
func TestMetricsActiveQueues(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	idle := f.createQueue(t, "idle", nil)
	full := f.createQueue(t, "full", nil)
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(full), MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	// An email subscription keeps a hidden delivery queue, which holds its
	// confirmation message.
	topic := f.createTopic(t, "t", nil)
	f.subscribe(t, topic, "email", "someone@example.com", nil)
	f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String("hello")})
	hidden, err := f.srv.Engine().ListQueues(ctx, delivery.QueueAccount, "")
	if err != nil || len(hidden) == 0 {
		t.Fatalf("no hidden delivery queue to check: %v, %v", hidden, err)
	}

	m := f.tick(t)
	f.wantGauges(t, "idle", m, map[string]*float64{metrics.MessagesVisible: num(0)}) // created within 6 hours

	// Six hours on, idle is left out and full (it holds messages) is not.
	f.jump(t, m.Add(6*time.Hour-time.Minute))
	m = f.tick(t)
	f.wantGauges(t, "idle", m, map[string]*float64{metrics.MessagesVisible: nil, metrics.AgeOfOldestMessage: nil})
	f.wantGauges(t, "full", m, map[string]*float64{metrics.MessagesVisible: num(1)})

	// Any action brings it back, for six hours.
	if _, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(idle)}); err != nil {
		t.Fatal(err)
	}
	m = f.tick(t)
	f.wantGauges(t, "idle", m, map[string]*float64{metrics.MessagesVisible: num(0), metrics.AgeOfOldestMessage: num(0)})
	f.jump(t, m.Add(6*time.Hour-time.Minute))
	m = f.tick(t)
	f.wantGauges(t, "idle", m, map[string]*float64{metrics.MessagesVisible: nil})

	for _, k := range f.srv.Metrics().Series() {
		for _, h := range hidden {
			if k.Dimension.Value == h.Name {
				t.Errorf("hidden delivery queue %s reported: %+v", h.Name, k)
			}
		}
	}
	if body := scrape(t, f); strings.Contains(body, hidden[0].Name) {
		t.Errorf("/metrics names hidden delivery queue %s", hidden[0].Name)
	}
}

// TestMetricsDeadLetterAge: in a dead-letter queue the age of the oldest
// message counts from the move, while SentTimestamp stays the original; a
// moved message is not sent there but is received there.
func TestMetricsDeadLetterAge(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "a-dlq", nil)
	src := f.createQueue(t, "a-src", map[string]string{"RedrivePolicy": redrivePolicy("a-dlq", 1), "VisibilityTimeout": "10"})
	sentAt := f.clk.Now()
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	if out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src)}); err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive = %v, %v", out, err)
	}
	f.set(t, f.clk.Now().Add(time.Hour)) // fires the sampler's tick: wait it out
	movedAt := f.clk.Now()
	if out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src)}); err != nil || len(out.Messages) != 0 {
		t.Fatalf("receive = %v, %v", out, err)
	}
	testwait.Some(t, "nothing arrived", func() []int {
		st, err := f.srv.Engine().Stats(ctx, "000000000000", "a-dlq")
		if err != nil || st.Visible != 1 {
			return nil
		}
		return []int{1}
	})

	m := f.tick(t)
	f.wantGauges(t, "a-dlq", m, map[string]*float64{
		metrics.AgeOfOldestMessage: num(float64(m.Sub(movedAt) / time.Second)),
		metrics.MessagesVisible:    num(1),
	})
	f.wantGauges(t, "a-src", m, map[string]*float64{metrics.AgeOfOldestMessage: num(0), metrics.MessagesVisible: num(0)})
	out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), VisibilityTimeout: 300,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameSentTimestamp}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive from the dead-letter queue = %v, %v", out, err)
	}
	if ts := out.Messages[0].Attributes["SentTimestamp"]; ts != strconv.FormatInt(sentAt.UnixMilli(), 10) {
		t.Errorf("SentTimestamp = %s, want the original send %d", ts, sentAt.UnixMilli())
	}
	store := f.srv.Metrics()
	if tot, ok := store.Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("a-dlq")); ok {
		t.Errorf("a-dlq sent = %+v, want none: a redrive is no send", tot)
	}
	if tot, _ := store.Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesReceived, metrics.Queue("a-dlq")); tot.Sum != 1 {
		t.Errorf("a-dlq received = %+v, want 1", tot)
	}
	// In flight, received once there: it still counts, from the move.
	m = f.tick(t)
	f.wantGauges(t, "a-dlq", m, map[string]*float64{
		metrics.AgeOfOldestMessage: num(float64(m.Sub(movedAt) / time.Second)),
		metrics.MessagesNotVisible: num(1),
	})
}

// TestMetricsRequestLatency: every answered request lands in the latency
// histogram by service, action and status; the store's figures are there
// with their types.
func TestMetricsRequestLatency(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := start(t, onDisk(dir))
	ctx := ctxT(t)
	url := f.createQueue(t, "lat", nil)
	for range 3 {
		if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	f.createTopic(t, "lat-topic", nil)

	body := scrape(t, f)
	lines := []string{
		`ferry_http_request_duration_seconds_count{action="SendMessage",code="200",service="sqs"} 3`,
		`ferry_http_request_duration_seconds_count{action="CreateQueue",code="200",service="sqs"} 1`,
		`ferry_http_request_duration_seconds_count{action="GetQueueUrl",code="400",service="sqs"} 1`,
		`ferry_http_request_duration_seconds_count{action="CreateTopic",code="200",service="sns"} 1`,
		`ferry_http_request_duration_seconds_bucket{action="SendMessage",code="200",service="sqs",le="+Inf"} 3`,
		`# TYPE ferry_http_request_duration_seconds histogram`,
	}
	if onPostgres(t) {
		lines = append(lines,
			`# TYPE ferry_store_pool_connections gauge`,
			`# TYPE ferry_store_pool_max_connections gauge`,
			`# TYPE ferry_store_pool_acquires_total counter`)
	} else {
		lines = append(lines,
			`# TYPE ferry_store_disk_usage_bytes gauge`,
			`# TYPE ferry_store_wal_written_bytes_total counter`,
			`# TYPE ferry_store_compactions_total counter`,
			`# TYPE ferry_store_flushes_total counter`,
			`# TYPE ferry_store_wal_files gauge`)
	}
	for _, line := range lines {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if onPostgres(t) {
		return // the database's disk is not the node's
	}
	disk := regexp.MustCompile(`(?m)^ferry_store_disk_usage_bytes (\S+)$`).FindStringSubmatch(body)
	if disk == nil {
		t.Fatal("no disk usage")
	}
	if v, err := strconv.ParseFloat(disk[1], 64); err != nil || v <= 0 {
		t.Errorf("disk usage = %s", disk[1])
	}
	if written := regexp.MustCompile(`(?m)^ferry_store_wal_written_bytes_total (\S+)$`).FindStringSubmatch(body); written == nil || written[1] == "0" {
		t.Errorf("WAL bytes written = %v, want > 0 after three synced sends", written)
	}
}

// TestMetricsDurable: one-minute datapoints survive a restart; minutes past
// the 15 days of retention leave memory and disk.
func TestMetricsDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)
	f := start(t, onDisk(dir))
	url := f.createQueue(t, "dur", nil)
	send := func(f *ferry, n int) {
		for range n {
			if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	m0 := f.clk.Now().Truncate(time.Minute)
	send(f, 2)
	m1 := f.tick(t) // saves m0; samples the gauges into m1
	send(f, 1)
	stop(t, f) // saves m1, not complete yet

	f2 := start(t, onDisk(dir))
	want := map[time.Time]float64{m0: 2, m1: 1}
	dps := f2.srv.Metrics().Datapoints(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("dur"), m0, m1.Add(time.Minute))
	if len(dps) != 2 {
		t.Fatalf("sent after restart: %+v", dps)
	}
	for _, dp := range dps {
		if dp.Sum != want[dp.Timestamp] || dp.SampleCount != want[dp.Timestamp] {
			t.Errorf("sent after restart: %+v, want %v", dp, want[dp.Timestamp])
		}
	}
	f2.wantGauges(t, "dur", m1, map[string]*float64{metrics.MessagesVisible: num(2)})
	// The minute saved at shutdown goes on counting.
	f2.set(t, m1.Add(30*time.Second))
	send(f2, 1)
	if dp, ok := f2.point(t, metrics.MessagesSent, "dur", m1); !ok || dp.Sum != 2 {
		t.Errorf("m1 after another send: %+v", dp)
	}
	m2 := f2.tick(t)
	ms := f2.srv.Engine().(engine.MetricStore)
	stored, err := ms.MetricPoints(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range stored {
		if p.Metric == metrics.MessagesSent && p.DimValue == "dur" && p.Minute == m1.Unix()/60 {
			found = p.Sum == 2
		}
	}
	if !found {
		t.Errorf("m1 on disk after its flush: %+v", stored)
	}

	// Fifteen days on, the minutes expire from memory and disk.
	f2.jump(t, m2.Add(metrics.DefaultRetention-time.Minute))
	f2.tick(t)
	if dps := f2.srv.Metrics().Datapoints(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("dur"), m0, m2.Add(time.Minute)); len(dps) != 0 {
		t.Errorf("expired minutes still served: %+v", dps)
	}
	stored, err = ms.MetricPoints(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stored {
		if p.Minute <= m2.Unix()/60 {
			t.Errorf("expired minute on disk: %+v", p)
		}
	}
}

// TestMetricsMoveTask: a move task's messages are new messages in their
// destination and count as sent there; the dead-letter queue counts no
// send, receive or delete for them.
func TestMetricsMoveTask(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "t-dlq", nil)
	src := f.createQueue(t, "t-src", map[string]string{"RedrivePolicy": redrivePolicy("t-dlq", 1)})
	f.deadLetter(t, src, dlq, 12) // bodies m0..m11: 2 bytes each but m10, m11
	store := f.srv.Metrics()
	before, _ := store.Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("t-src"))
	if before.Sum != 12 {
		t.Fatalf("t-src sent before the task = %+v", before)
	}
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "t-dlq")}); err != nil {
		t.Fatal(err)
	}
	f.waitTask(t, arnPrefix+"t-dlq", "COMPLETED")
	want := map[string]metrics.Totals{
		metrics.MessagesSent:    {Sum: 24, SampleCount: 24},
		metrics.SentMessageSize: {Sum: 2 * (10*2 + 2*3), SampleCount: 24},
	}
	for metric, w := range want {
		if got, _ := store.Totals(testAccount, metrics.NamespaceSQS, metric, metrics.Queue("t-src")); got != w {
			t.Errorf("t-src %s = %+v, want %+v", metric, got, w)
		}
	}
	for _, metric := range []string{metrics.MessagesSent, metrics.MessagesReceived, metrics.MessagesDeleted} {
		if got, ok := store.Totals(testAccount, metrics.NamespaceSQS, metric, metrics.Queue("t-dlq")); ok {
			t.Errorf("t-dlq %s = %+v, want none", metric, got)
		}
	}
}

// TestMetricsMoveTaskAcrossRestart: a move task that a stop interrupted
// resumes when Ferry starts again, and every message it moves from then on
// is counted as sent to its destination, the very first included (the
// store holds resumed tasks until the server has set its hook).
func TestMetricsMoveTaskAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)
	f := start(t, onDisk(dir))
	dlq := f.createQueue(t, "r-dlq", nil)
	src := f.createQueue(t, "r-src", map[string]string{"RedrivePolicy": redrivePolicy("r-dlq", 1)})
	f.deadLetter(t, src, dlq, 12)
	// One a second: the first moves at once, the rest wait for the clock.
	if _, err := f.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "r-dlq"),
		MaxNumberOfMessagesPerSecond: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	moved := func(f *ferry) (int64, string) {
		out, err := f.json.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "r-dlq")})
		if err != nil || len(out.Results) != 1 {
			t.Fatalf("ListMessageMoveTasks: %+v, %v", out, err)
		}
		return out.Results[0].ApproximateNumberOfMessagesMoved, aws.ToString(out.Results[0].Status)
	}
	var first int64
	testwait.Eventually(t, "the task to move one", func() bool { first, _ = moved(f); return first > 0 })
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	f2 := start(t, onDisk(dir), onClock(f.clk))
	// It resumes where it stopped, moving one at once in its new second.
	if n, status := moved(f2); status != "RUNNING" || n < first || n > first+1 {
		t.Fatalf("after the restart the task is %s with %d moved", status, n)
	}
	// The clock moves on each time the runner waits for its next second,
	// until the task ends.
	ended := func() bool { _, status := moved(f2); return status != "RUNNING" }
	testwait.AdvanceUntil(t, f2.clk, time.Minute, func() bool { return f2.runnerWaits() || ended() }, ended)
	if n, status := moved(f2); status != "COMPLETED" || n != 12 {
		t.Fatalf("task %s with %d moved", status, n)
	}
	// Totals count from the start: every move after the restart.
	if got, _ := f2.srv.Metrics().Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesSent, metrics.Queue("r-src")); got.Sum != float64(12-first) {
		t.Errorf("r-src sent since the restart = %+v, want %d", got, 12-first)
	}
}
