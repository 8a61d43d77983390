package server_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	cwv1 "github.com/aws/aws-sdk-go/service/cloudwatch"
	"github.com/chromedp/chromedp"

	"github.com/ferrymq/ferry/internal/testwait"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the console's screenshots to docs/console")

// screenshotDir is where the README's pictures of the console live.
const screenshotDir = "../../docs/console"

// consoleFixture fills f with what a small shop runs: queues with an
// hour of traffic, dead letters from two sources, topics and alarms.
func consoleFixture(t *testing.T, f *ferry) {
	t.Helper()
	ctx := ctxT(t)
	url := map[string]string{}
	for _, q := range []struct{ name, attrs string }{
		{"orders-dlq", ""}, {"payments-dlq", ""},
		{"orders", "orders-dlq"}, {"shipping", "orders-dlq"}, {"payments", "payments-dlq"},
		{"email-outbox", ""}, {"search-index", ""},
	} {
		var attrs map[string]string
		if q.attrs != "" {
			attrs = map[string]string{"RedrivePolicy": redrivePolicy(q.attrs, 3)}
		}
		url[q.name] = f.createQueue(t, q.name, attrs)
	}
	url["reports.fifo"] = f.createQueue(t, "reports.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})

	// An hour of traffic: sends that swell and ebb, most of them consumed.
	for m := 0; m < 60; m++ {
		for name, base := range map[string]float64{"orders": 14, "email-outbox": 8, "search-index": 20, "payments": 5} {
			n := int(base + base*0.6*math.Sin(float64(m)/7+base))
			for i := 0; i < n; i += 10 {
				var entries []types.SendMessageBatchRequestEntry
				for j := i; j < min(i+10, n); j++ {
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", j)),
						MessageBody: aws.String(fmt.Sprintf(`{"minute":%d,"n":%d}`, m, j))})
				}
				if _, err := f.json.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url[name]), Entries: entries}); err != nil {
					t.Fatal(err)
				}
			}
			if name == "email-outbox" && m > 40 {
				continue // its consumer stopped: a backlog builds
			}
			for _, msg := range f.receiveAll(t, url[name], 10) {
				f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url[name]), ReceiptHandle: msg.ReceiptHandle})
			}
		}
		f.tick(t)
	}
	f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url["orders"])})
	f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url["payments"])})
	f.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url["search-index"])})

	// Dead letters: orders whose consumer choked on them.
	var dead []types.SendMessageBatchRequestEntry
	for i := 0; i < 7; i++ {
		dead = append(dead, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("d", i)),
			MessageBody: aws.String(fmt.Sprintf(`{"orderId":"ord-%04d","customer":{"id":"c-%d","country":"%s"},"items":[{"sku":"sku-%d","qty":%d}],"total":%d.95,"currency":"EUR"}`,
				4711+i, 300+i, []string{"DE", "FR", "NL"}[i%3], 120+i, 1+i%3, 20+7*i)),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"tenant":        {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("shop-", i%2))},
				"schemaVersion": {DataType: aws.String("Number"), StringValue: aws.String("3")}}})
	}
	f.deadLetterEntries(t, url["orders"], url["orders-dlq"], dead, 3)
	f.deadLetterEntries(t, url["shipping"], url["orders-dlq"], []types.SendMessageBatchRequestEntry{
		{Id: aws.String("s0"), MessageBody: aws.String(`{"shipment":"sh-981","carrier":"dhl","error":"address incomplete"}`)},
		{Id: aws.String("s1"), MessageBody: aws.String("plain text: label printer offline")}}, 3)

	// Topics and their subscriptions.
	placed := f.createTopic(t, "order-placed", nil)
	f.subscribe(t, placed, "sqs", arnPrefix+"orders", map[string]string{"RawMessageDelivery": "true"})
	f.subscribe(t, placed, "sqs", arnPrefix+"search-index", nil)
	f.subscribe(t, placed, "http", "http://127.0.0.1:9/hooks/order-placed", nil)
	settled := f.createTopic(t, "payment-settled", nil)
	f.subscribe(t, settled, "sqs", arnPrefix+"payments", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":"%spayments-dlq"}`, arnPrefix)})
	// A subscriber whose queue was deleted: its deliveries fail.
	audit := f.createQueue(t, "audit-log", nil)
	f.subscribe(t, placed, "sqs", arnPrefix+"audit-log", nil)
	if _, err := f.json.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(audit)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		f.publish(t, &snssdk.PublishInput{TopicArn: aws.String(placed), Message: aws.String(fmt.Sprint(`{"order":`, i, `}`))})
	}
	api := newConsoleClient(t, f.srv.URL())
	testwait.Eventually(t, "the deleted subscriber's three failures", func() bool {
		var out struct {
			Topics []struct {
				Subscriptions []struct {
					Endpoint string
					Failed   int
				}
			}
		}
		api.call("GET", "/console/api/topics", nil, 200, &out)
		for _, tp := range out.Topics {
			for _, sub := range tp.Subscriptions {
				if sub.Endpoint == arnPrefix+"audit-log" && sub.Failed == 3 {
					return true
				}
			}
		}
		return false
	})

	// Alarms: one firing on the dead letters, one fine, one without data.
	cw := cwClient(f.srv.URL())
	alarm := func(name, metric, queue, op string, threshold float64) {
		if _, err := cw.PutMetricAlarmWithContext(ctx, &cwv1.PutMetricAlarmInput{
			AlarmName: awsv1.String(name), Namespace: awsv1.String("AWS/SQS"), MetricName: awsv1.String(metric),
			Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String(queue)}},
			Statistic:  awsv1.String("Maximum"), Period: awsv1.Int64(60), EvaluationPeriods: awsv1.Int64(1),
			Threshold: awsv1.Float64(threshold), ComparisonOperator: awsv1.String(op),
		}); err != nil {
			t.Fatalf("PutMetricAlarm %s: %v", name, err)
		}
	}
	alarm("orders-dlq-not-empty", "ApproximateNumberOfMessagesVisible", "orders-dlq", "GreaterThanThreshold", 0)
	alarm("search-index-backlog", "ApproximateNumberOfMessagesVisible", "search-index", "GreaterThanThreshold", 500)
	alarm("reports-age", "ApproximateAgeOfOldestMessage", "reports.fifo", "GreaterThanThreshold", 900)
	f.tick(t)
	f.tick(t)
}

// TestConsoleBrowserScreens opens each page of the console on a realistic
// Ferry, checks that it renders without an error, and with
// -update-screenshots writes each to docs/console at 1280x800.
func TestConsoleBrowserScreens(t *testing.T) {
	f := start(t)
	consoleFixture(t, f)
	b := openConsole(t, f, "#/")
	shot := func(name string) {
		t.Helper()
		if !*updateScreenshots {
			return
		}
		ctx, cancel := context.WithTimeout(b.ctx, testwait.Deadline)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *updateScreenshots {
		if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.visible(`tr[data-queue="orders-dlq"].is-dlq-bad`)
	b.until("the live stream", `document.getElementById("live").dataset.state === "live"`)
	shot("overview")

	b.route("#/queues/orders-dlq")
	b.until("the DLQ's nine messages", `document.querySelectorAll("#message-table tbody tr").length === 9`)
	shot("dlq-messages")

	b.click(`#message-table tbody tr td.cell-id a`)
	b.visible(`#history li[data-kind="move"]`)
	shot("message-history")

	b.route("#/topics")
	b.click(`[data-topic="order-placed"] button[aria-expanded]`)
	b.visible(`[data-topic="order-placed"] .failures li`)
	shot("topics")

	b.route("#/alarms")
	b.visible(`tr[data-alarm="orders-dlq-not-empty"]`)
	shot("alarms")
}
