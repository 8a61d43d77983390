package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/topology"
)

// shopTopology is a file of every kind of entry: a queue with a redrive
// policy to its dead-letter queue (listed after it), a FIFO queue, a topic
// with a raw, filtered sqs subscription, and an alarm on the queue that
// notifies the topic.
const shopTopology = `queues:
  - name: orders
    attributes:
      VisibilityTimeout: 45
      RedrivePolicy:
        deadLetterTargetArn: orders-dlq
        maxReceiveCount: 3
    tags:
      team: shop
  - name: orders-dlq
    attributes:
      MessageRetentionPeriod: 1209600
      RedriveAllowPolicy:
        redrivePermission: byQueue
        sourceQueueArns: [orders]
  - name: jobs.fifo
    attributes:
      FifoQueue: true
      ContentBasedDeduplication: true
topics:
  - name: events
    attributes:
      DisplayName: Shop events
    tags:
      team: shop
    subscriptions:
      - protocol: sqs
        endpoint: orders
        attributes:
          RawMessageDelivery: true
          FilterPolicy:
            kind: [order]
alarms:
  - AlarmName: orders-backlog
    Namespace: AWS/SQS
    MetricName: ApproximateNumberOfMessagesVisible
    Dimensions:
      - {Name: QueueName, Value: orders}
    Statistic: Maximum
    Period: 60
    EvaluationPeriods: 1
    Threshold: 100
    ComparisonOperator: GreaterThanThreshold
    AlarmActions: ["arn:aws:sns:us-east-1:000000000000:events"]
    Tags:
      - {Key: team, Value: shop}
`

func loadTopology(t testing.TB, name, text string) *topology.Topology {
	t.Helper()
	top, err := topology.Load(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// withInit starts the server with a topology file.
func withInit(top *topology.Topology) option { return func(c *server.Config) { c.Init = top } }

// withLog sends the server's log to w.
func withLog(w io.Writer) option {
	return func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(w, nil)) }
}

func exportOf(t testing.TB, f *ferry, query string) string {
	t.Helper()
	resp, err := http.Get(f.srv.AdminURL() + "/_ferry/export" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export%s = %d: %s", query, resp.StatusCode, body)
	}
	return string(body)
}

// checkShop checks, through the SDKs, that a Ferry holds shopTopology.
func checkShop(t *testing.T, f *ferry) {
	t.Helper()
	ctx := ctxT(t)
	url := func(name string) string {
		out, err := f.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("queue %s: %v", name, err)
		}
		return aws.ToString(out.QueueUrl)
	}
	attrs := func(name string) map[string]string {
		out, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url(name)), AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	orders, dlq, jobs := attrs("orders"), attrs("orders-dlq"), attrs("jobs.fifo")
	if orders["VisibilityTimeout"] != "45" || !strings.Contains(orders["RedrivePolicy"], dlq["QueueArn"]) ||
		!strings.Contains(orders["RedrivePolicy"], `"maxReceiveCount":3`) {
		t.Errorf("orders: %v", orders)
	}
	if dlq["MessageRetentionPeriod"] != "1209600" || !strings.Contains(dlq["RedriveAllowPolicy"], orders["QueueArn"]) {
		t.Errorf("orders-dlq: %v", dlq)
	}
	if jobs["FifoQueue"] != "true" || jobs["ContentBasedDeduplication"] != "true" {
		t.Errorf("jobs.fifo: %v", jobs)
	}
	tags, err := f.json.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url("orders"))})
	if err != nil || tags.Tags["team"] != "shop" {
		t.Errorf("orders tags: %v %v", tags, err)
	}
	sources, err := f.json.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(url("orders-dlq"))})
	if err != nil || len(sources.QueueUrls) != 1 || sources.QueueUrls[0] != url("orders") {
		t.Errorf("dead-letter sources: %v %v", sources, err)
	}

	topicARN := "arn:aws:sns:us-east-1:000000000000:events"
	ta, err := f.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: aws.String(topicARN)})
	if err != nil || ta.Attributes["DisplayName"] != "Shop events" || ta.Attributes["SubscriptionsConfirmed"] != "1" {
		t.Fatalf("topic: %v %v", ta, err)
	}
	subs, err := f.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: aws.String(topicARN)})
	if err != nil || len(subs.Subscriptions) != 1 || aws.ToString(subs.Subscriptions[0].Endpoint) != orders["QueueArn"] {
		t.Fatalf("subscriptions: %v %v", subs, err)
	}

	alarms, err := cwV2(f.srv.URL()).DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{AlarmNames: []string{"orders-backlog"}})
	if err != nil || len(alarms.MetricAlarms) != 1 {
		t.Fatalf("alarms: %v %v", alarms, err)
	}
	a := alarms.MetricAlarms[0]
	if aws.ToFloat64(a.Threshold) != 100 || aws.ToInt32(a.Period) != 60 || len(a.AlarmActions) != 1 || a.AlarmActions[0] != topicARN ||
		len(a.Dimensions) != 1 || aws.ToString(a.Dimensions[0].Value) != "orders" {
		t.Errorf("alarm: %+v", a)
	}
}

// TestTopologyInit starts a Ferry with a file and finds everything it
// describes, working: the subscription delivers, filtered and raw.
func TestTopologyInit(t *testing.T) {
	t.Parallel()
	f := start(t, withInit(loadTopology(t, "shop.yaml", shopTopology)))
	checkShop(t, f)

	ctx := ctxT(t)
	topicARN := aws.String("arn:aws:sns:us-east-1:000000000000:events")
	for _, kind := range []string{"refund", "order"} {
		if _, err := f.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: topicARN, Message: aws.String("a " + kind),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String(kind)}}}); err != nil {
			t.Fatal(err)
		}
	}
	url, err := f.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.receiveOne(t, aws.ToString(url.QueueUrl)); aws.ToString(m.Body) != "a order" {
		t.Errorf("delivered %q; want the raw order only", aws.ToString(m.Body))
	}
	f.wantEmpty(t, aws.ToString(url.QueueUrl))
}

// TestTopologyApplyIdempotent applies the file again and again: nothing
// changes and nothing is made twice. A changed attribute is set on the
// queue that has it, and what the file does not name stays.
func TestTopologyApplyIdempotent(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	top := loadTopology(t, "shop.yaml", shopTopology)
	f := start(t, withInit(top))
	other := f.createQueue(t, "not-in-the-file", map[string]string{"DelaySeconds": "7"})
	before := exportOf(t, f, "")
	for range 2 {
		res, err := f.srv.ApplyTopology(ctx, top)
		if err != nil || len(res.Changes) != 0 {
			t.Fatalf("apply again: %v, %v", res, err)
		}
	}
	if after := exportOf(t, f, ""); after != before {
		t.Errorf("export changed:\n%s\n%s", before, after)
	}
	checkShop(t, f)

	changed := loadTopology(t, "shop.yaml", strings.Replace(strings.Replace(shopTopology, "VisibilityTimeout: 45", "VisibilityTimeout: 50", 1),
		"maxReceiveCount: 3", "maxReceiveCount: 4", 1))
	res, err := f.srv.ApplyTopology(ctx, changed)
	if err != nil || len(res.Changes) != 1 || res.Changes[0] != "set queue orders: RedrivePolicy, VisibilityTimeout" {
		t.Fatalf("apply a change: %v, %v", res, err)
	}
	out, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(strings.Replace(other, "not-in-the-file", "orders", 1)),
		AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil || out.Attributes["VisibilityTimeout"] != "50" || !strings.Contains(out.Attributes["RedrivePolicy"], `"maxReceiveCount":4`) {
		t.Errorf("orders after the change: %v %v", out, err)
	}
	kept, err := f.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(other), AttributeNames: []types.QueueAttributeName{"DelaySeconds"}})
	if err != nil || kept.Attributes["DelaySeconds"] != "7" {
		t.Errorf("the queue not in the file: %v %v", kept, err)
	}
}

// TestTopologyRestart starts a durable Ferry with the file twice: the
// second start finds everything in place and changes nothing.
func TestTopologyRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	top := loadTopology(t, "shop.yaml", shopTopology)
	var log1 lockedBuffer
	f := start(t, onDisk(dir), withInit(top), withLog(&log1))
	before := exportOf(t, f, "")
	clk := f.clk
	stop(t, f)
	if !strings.Contains(log1.String(), `msg="topology applied" file=shop.yaml changes=6`) {
		t.Errorf("first start:\n%s", log1.String())
	}
	var log2 lockedBuffer
	f2 := start(t, onDisk(dir), onClock(clk), withInit(top), withLog(&log2))
	if !strings.Contains(log2.String(), `msg="topology applied" file=shop.yaml changes=0`) {
		t.Errorf("second start:\n%s", log2.String())
	}
	if after := exportOf(t, f2, ""); after != before {
		t.Errorf("export changed over the restart:\n%s\n%s", before, after)
	}
	checkShop(t, f2)
}

// TestTopologyRoundTrip exports a Ferry, starts an empty one with the
// export and exports that: the same file, in either format.
func TestTopologyRoundTrip(t *testing.T) {
	t.Parallel()
	f := start(t, withInit(loadTopology(t, "shop.yaml", shopTopology)))
	for _, format := range []string{"yaml", "json"} {
		first := exportOf(t, f, "?format="+format)
		g := start(t, withInit(loadTopology(t, "export."+format, first)))
		if second := exportOf(t, g, "?format="+format); second != first {
			t.Errorf("%s round trip:\n%s\n%s", format, first, second)
		}
		checkShop(t, g)
	}
	y := exportOf(t, f, "")
	for _, want := range []string{"deadLetterTargetArn: orders-dlq", "VisibilityTimeout: 45", "endpoint: orders", "RawMessageDelivery: true", "AlarmName: orders-backlog", "- Key: team"} {
		if !strings.Contains(y, want) {
			t.Errorf("export has no %q:\n%s", want, y)
		}
	}
	// SNS's hidden delivery queues are not the account's: an https
	// subscription has one, and the export shows only the subscription.
	ctx := ctxT(t)
	if _, err := f.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:events"),
		Protocol: aws.String("lambda"), Endpoint: aws.String("arn:aws:lambda:us-east-1:000000000000:function:f")}); err != nil {
		t.Fatal(err)
	}
	y = exportOf(t, f, "")
	if strings.Count(y, "- name:") != 4 || !strings.Contains(y, "protocol: lambda") {
		t.Errorf("export with a lambda subscription:\n%s", y)
	}
	// Another account has nothing yet; bad questions answer 400.
	if other := exportOf(t, f, "?account=111111111111"); other != "account: \"111111111111\"\nregion: us-east-1\n" {
		t.Errorf("other account: %q", other)
	}
	for _, q := range []string{"?format=toml", "?account=12", "?region=moon-1"} {
		resp, err := http.Get(f.srv.URL() + "/_ferry/export" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"error"`) {
			t.Errorf("export%s = %d %s", q, resp.StatusCode, body)
		}
	}
}

// TestTopologyInitRefused: a file the services refuse stops Start with
// the service's message at the file's line and column.
func TestTopologyInitRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ text, want string }{
		{"queues:\n  - name: a\n    attributes:\n      VisibilityTimeout: 99999\n",
			"bad.yaml:4:26: queue a: CreateQueue: InvalidAttributeValue: Invalid value for the parameter VisibilityTimeout."},
		{"queues:\n  - name: bad name!\n", "bad.yaml:2:5: queue bad name!: CreateQueue: InvalidParameterValue: Can only include alphanumeric characters"},
		{"topics:\n  - name: t\n    subscriptions:\n      - protocol: carrier-pigeon\n        endpoint: home\n",
			"bad.yaml:4:9: topic t: subscription carrier-pigeon home: Subscribe: InvalidParameter"},
		{"alarms:\n  - AlarmName: a\n    Namespace: AWS/SQS\n", "bad.yaml:2:5: alarm a: PutMetricAlarm: "},
	} {
		cfg := server.Config{Listen: "127.0.0.1:0", Clock: clock.NewFake(epoch), Logger: testLogger(t), Init: loadTopology(t, "bad.yaml", tt.text)}
		cfg.Store = openStore(t, cfg, nil)
		srv, err := server.Start(context.Background(), cfg)
		if err == nil {
			srv.Shutdown(context.Background())
			t.Errorf("%q started", tt.text)
			continue
		}
		var te *topology.Error
		if !errors.As(err, &te) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start: %v; want %s", err, tt.want)
		}
	}
}

// TestTopologyConcurrentApply applies the file from several places at
// once, as every node of a PostgreSQL store does at start: each succeeds
// and each thing exists once.
func TestTopologyConcurrentApply(t *testing.T) {
	t.Parallel()
	top := loadTopology(t, "shop.yaml", shopTopology)
	var nodes []*ferry
	if onPostgres(t) {
		url, schema := pgtest.Schema(t)
		clk := clock.NewFake(epoch)
		for range 3 {
			nodes = append(nodes, start(t, onClock(clk), onSharedSchema(t, url, schema)))
		}
	} else {
		f := start(t)
		nodes = []*ferry{f, f, f}
	}
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		wg.Go(func() {
			_, err := n.srv.ApplyTopology(ctx, top)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("apply: %v", err)
		}
	}
	for _, n := range nodes {
		checkShop(t, n)
		res, err := n.srv.ApplyTopology(ctx, top)
		if err != nil || len(res.Changes) != 0 {
			t.Errorf("apply again: %v, %v", res, err)
		}
	}
}
