package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestMetricsScenario drives sends, receives, deletes and a redrive move,
// then checks every SQS count in the store and on /metrics.
func TestMetricsScenario(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	dlq := f.createQueue(t, "m-dlq", nil)
	src := f.createQueue(t, "m-src", map[string]string{"RedrivePolicy": redrivePolicy("m-dlq", 1), "VisibilityTimeout": "10"})
	empties := map[string]float64{}
	receive := func(url, name string) []types.Message {
		t.Helper()
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empties[name]++
		}
		return out.Messages
	}

	if got := receive(dlq, "m-dlq"); len(got) != 0 {
		t.Fatalf("new dead-letter queue handed out %d messages", len(got))
	}
	batch, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(src), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("1"), MessageBody: aws.String("a")},
		{Id: aws.String("2"), MessageBody: aws.String("bb"),
			MessageAttributes: map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}},
		{Id: aws.String("3"), MessageBody: aws.String("ccc")},
		{Id: aws.String("4"), MessageBody: aws.String("")}, // invalid: not sent
	}})
	if err != nil || len(batch.Successful) != 3 || len(batch.Failed) != 1 {
		t.Fatalf("batch = %+v, %v", batch, err)
	}
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("dddd")}); err != nil {
		t.Fatal(err)
	}

	var got []types.Message
	for len(got) < 4 {
		got = append(got, receive(src, "m-src")...)
	}
	if len(got) != 4 {
		t.Fatalf("received %d messages", len(got))
	}
	// Three deleted (one in a batch of two with a bad handle), one of them
	// twice; the fourth goes to the dead-letter queue.
	del, err := f.json.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(src), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("x"), ReceiptHandle: got[0].ReceiptHandle},
		{Id: aws.String("y"), ReceiptHandle: aws.String("garbage")},
	}})
	if err != nil || len(del.Successful) != 1 || len(del.Failed) != 1 {
		t.Fatalf("delete batch = %+v, %v", del, err)
	}
	for _, h := range []*string{got[1].ReceiptHandle, got[2].ReceiptHandle, got[2].ReceiptHandle} {
		if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: h}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: aws.String("garbage")})
	wantAPIError(t, err, "ReceiptHandleIsInvalid", 404)

	// Past its visibility timeout the fourth message has been received
	// maxReceiveCount times: the next receive moves it.
	f.clk.Advance(10 * time.Second)
	testwait.Eventually(t, "the message to move", func() bool {
		if got := receive(src, "m-src"); len(got) != 0 {
			t.Fatalf("source handed out %q again", aws.ToString(got[0].Body))
		}
		st, err := f.srv.Engine().Stats(ctx, "000000000000", "m-dlq")
		if err != nil {
			t.Fatal(err)
		}
		return st.Visible == 1
	})
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String("manual")}); err != nil {
		t.Fatal(err)
	}
	var fromDLQ []types.Message
	for len(fromDLQ) < 2 {
		fromDLQ = append(fromDLQ, receive(dlq, "m-dlq")...)
	}

	want := map[string]map[string]metrics.Totals{
		"m-src": {
			metrics.MessagesSent:     {Sum: 4, SampleCount: 4},
			metrics.SentMessageSize:  {Sum: 1 + (2 + 1 + 6 + 1) + 3 + 4, SampleCount: 4}, // attribute k: name, type, value,
			metrics.MessagesReceived: {Sum: 4},
			metrics.EmptyReceives:    {Sum: empties["m-src"], SampleCount: empties["m-src"]},
			metrics.MessagesDeleted:  {Sum: 4, SampleCount: 4},
		},
		"m-dlq": {
			metrics.MessagesSent:     {Sum: 1, SampleCount: 1},
			metrics.SentMessageSize:  {Sum: 6, SampleCount: 1},
			metrics.MessagesReceived: {Sum: 2},
			metrics.EmptyReceives:    {Sum: empties["m-dlq"], SampleCount: empties["m-dlq"]},
		},
	}
	store := f.srv.Metrics()
	for queue, ms := range want {
		for metric, w := range ms {
			tot, _ := store.Totals(testAccount, metrics.NamespaceSQS, metric, metrics.Queue(queue))
			if metric == metrics.MessagesReceived {
				w.SampleCount = tot.SampleCount // one sample per call: how many calls is the engine's choice
			}
			if tot != w {
				t.Errorf("%s %s = %+v, want %+v", queue, metric, tot, w)
			}
			// Everything happened within the clock's first minute.
			dps := store.Datapoints(testAccount, metrics.NamespaceSQS, metric, metrics.Queue(queue), epoch.Truncate(time.Minute), epoch.Add(time.Minute))
			if w.Sum == 0 && len(dps) == 0 {
				continue
			}
			if len(dps) != 1 || dps[0].Sum != w.Sum || dps[0].SampleCount != w.SampleCount {
				t.Errorf("%s %s datapoints = %+v", queue, metric, dps)
			}
		}
	}
	if tot, ok := store.Totals(testAccount, metrics.NamespaceSQS, metrics.MessagesDeleted, metrics.Queue("m-dlq")); ok {
		t.Errorf("m-dlq deletes = %+v", tot)
	}
	if dps := store.Datapoints(testAccount, metrics.NamespaceSQS, metrics.SentMessageSize, metrics.Queue("m-src"), epoch.Truncate(time.Minute), epoch.Add(time.Minute)); len(dps) != 1 || dps[0].Minimum != 1 || dps[0].Maximum != 10 {
		t.Errorf("m-src sizes = %+v", dps)
	}

	body := scrape(t, f)
	for _, line := range []string{
		`ferry_sqs_messages_sent_total{account="000000000000",queue="m-src"} 4`,
		`ferry_sqs_messages_sent_total{account="000000000000",queue="m-dlq"} 1`,
		`ferry_sqs_messages_received_total{account="000000000000",queue="m-src"} 4`,
		`ferry_sqs_messages_received_total{account="000000000000",queue="m-dlq"} 2`,
		fmt.Sprintf(`ferry_sqs_empty_receives_total{account="000000000000",queue="m-src"} %v`, empties["m-src"]),
		fmt.Sprintf(`ferry_sqs_empty_receives_total{account="000000000000",queue="m-dlq"} %v`, empties["m-dlq"]),
		`ferry_sqs_messages_deleted_total{account="000000000000",queue="m-src"} 4`,
		`ferry_sqs_sent_message_size_bytes_sum{account="000000000000",queue="m-src"} 18`,
		`ferry_sqs_sent_message_size_bytes_count{account="000000000000",queue="m-src"} 4`,
		`ferry_sqs_sent_message_size_bytes_sum{account="000000000000",queue="m-dlq"} 6`,
		`ferry_sqs_messages_visible{account="000000000000",queue="m-src"} 0`,
		`ferry_sqs_messages_not_visible{account="000000000000",queue="m-src"} 0`,
		`ferry_sqs_messages_visible{account="000000000000",queue="m-dlq"} 0`,
		`ferry_sqs_messages_not_visible{account="000000000000",queue="m-dlq"} 2`,
		`ferry_sqs_messages_delayed{account="000000000000",queue="m-dlq"} 0`,
		`# TYPE ferry_sqs_messages_sent_total counter`,
		`# TYPE ferry_sqs_sent_message_size_bytes summary`,
		`# TYPE ferry_sqs_messages_visible gauge`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(body, `ferry_sqs_messages_deleted_total{account="000000000000",queue="m-dlq"}`) {
		t.Error("/metrics shows deletes for m-dlq")
	}
}

// TestMetricsFIFODuplicates: a duplicate is deduplicated, not sent.
func TestMetricsFIFODuplicates(t *testing.T) {
	t.Parallel()
	f := start(t)
	url := f.createQueue(t, "m.fifo", fifoAttrs())
	f.sendFIFO(t, url, "one", "g", "d1")
	f.sendFIFO(t, url, "one", "g", "d1")
	f.sendFIFO(t, url, "two", "g", "d2")
	store := f.srv.Metrics()
	for metric, want := range map[string]float64{metrics.MessagesSent: 2, metrics.DeduplicatedSentMessages: 1} {
		if tot, _ := store.Totals(testAccount, metrics.NamespaceSQS, metric, metrics.Queue("m.fifo")); tot.Sum != want {
			t.Errorf("%s = %v, want %v", metric, tot.Sum, want)
		}
	}
	if body := scrape(t, f); !strings.Contains(body, `ferry_sqs_deduplicated_sent_messages_total{account="000000000000",queue="m.fifo"} 1`+"\n") {
		t.Errorf("/metrics lacks the duplicate:\n%s", body)
	}
}

func scrape(t *testing.T, f *ferry) string {
	t.Helper()
	resp := do(t, mustRequest(t, "GET", f.srv.URL()+"/metrics"))
	if resp.Status != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return resp.Body
}

// TestMetricsProcess: /metrics carries the process's own figures, which a
// soak or an operator watches for growth, and the store's block cache.
func TestMetricsProcess(t *testing.T) {
	t.Parallel()
	f := start(t, onDisk(t.TempDir()))
	body := scrape(t, f)
	names := []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_sys_bytes",
		"process_resident_memory_bytes", "process_open_fds"}
	if onPostgres(t) {
		names = append(names, "ferry_store_pool_max_connections")
	} else {
		names = append(names, "ferry_store_block_cache_size_bytes", "ferry_store_memtable_size_bytes")
	}
	for _, name := range names {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
