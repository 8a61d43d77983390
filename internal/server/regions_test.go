package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/ferrymq/ferry/internal/testwait"
)

// TestSQSRegions: each region is a namespace of its own, as on AWS. A
// queue made through a client of us-west-2 has that region in its ARN and
// URL, is not listed in us-east-1, and a queue of the same name there is
// another queue; the URL Ferry hands out keeps naming its region whoever
// uses it; a dead-letter queue must be of the source's region; an
// unsigned request and a region that is none are served in --region.
func TestSQSRegions(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	east := clientsOf(f.srv.URL(), "AKIDEAST", "x", "us-east-1")
	west := clientsOf(f.srv.URL(), "AKIDWEST", "x", "us-west-2")
	local := clientsOf(f.srv.URL(), "AKIDLOCAL", "x", "elasticmq")

	out, err := west.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"),
		Attributes: map[string]string{"VisibilityTimeout": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	westURL := aws.ToString(out.QueueUrl)
	if want := f.srv.URL() + "/queue/us-west-2/000000000000/orders"; westURL != want {
		t.Errorf("us-west-2 queue URL %s, want %s", westURL, want)
	}
	attrs, err := west.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &westURL,
		AttributeNames: []sqstypes.QueueAttributeName{"QueueArn", "VisibilityTimeout"}})
	if err != nil || attrs.Attributes["QueueArn"] != "arn:aws:sqs:us-west-2:000000000000:orders" || attrs.Attributes["VisibilityTimeout"] != "7" {
		t.Fatalf("us-west-2 attributes: %v %v", attrs, err)
	}

	// us-east-1 does not see it: not listed, not found by name, and a
	// queue of the same name with other attributes is another queue.
	list, err := east.json.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 0 {
		t.Fatalf("us-east-1 lists %v (%v)", list, err)
	}
	_, err = east.json.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	eastOut, err := east.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"),
		Attributes: map[string]string{"VisibilityTimeout": "9"}})
	if err != nil {
		t.Fatalf("the same name in us-east-1: %v", err)
	}
	eastURL := aws.ToString(eastOut.QueueUrl)
	if want := f.srv.URL() + "/000000000000/orders"; eastURL != want {
		t.Errorf("us-east-1 (--region) queue URL %s, want %s", eastURL, want)
	}
	// The unsigned query request and the client of a region that is none
	// are served in --region.
	unsigned := f.postQuery(t, "Action=ListQueues&Version=2012-11-05")
	if !strings.Contains(unsigned.Body, "<QueueUrl>http://"+hostOf(f)+"/000000000000/orders</QueueUrl>") || strings.Contains(unsigned.Body, "us-west-2") {
		t.Errorf("unsigned ListQueues: %s", unsigned.Body)
	}
	if l, err := local.json.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(l.QueueUrls) != 1 || l.QueueUrls[0] != eastURL {
		t.Errorf("ListQueues signed for elasticmq: %v %v", l, err)
	}

	// The URL names its region, whichever client uses it (the JSON and
	// the query protocol).
	if _, err := east.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &westURL, MessageBody: aws.String("to the west")}); err != nil {
		t.Fatal(err)
	}
	if _, err := east.query.SendMessage(&sqsv1.SendMessageInput{QueueUrl: &eastURL, MessageBody: awsv1.String("to the east")}); err != nil {
		t.Fatal(err)
	}
	got, err := west.query.ReceiveMessage(&sqsv1.ReceiveMessageInput{QueueUrl: &westURL, MaxNumberOfMessages: awsv1.Int64(10)})
	if err != nil || len(got.Messages) != 1 || awsv1.StringValue(got.Messages[0].Body) != "to the west" {
		t.Fatalf("receive in us-west-2: %v %v", got, err)
	}
	ge, err := east.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &eastURL, MaxNumberOfMessages: 10})
	if err != nil || len(ge.Messages) != 1 || aws.ToString(ge.Messages[0].Body) != "to the east" {
		t.Fatalf("receive in us-east-1: %v %v", ge, err)
	}
	// A receipt handle of one region's queue deletes nothing in the other.
	if _, err := east.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &eastURL, ReceiptHandle: got.Messages[0].ReceiptHandle}); err == nil {
		t.Error("a us-west-2 receipt handle was taken by the us-east-1 queue")
	}
	// LocalStack's standard and path forms name the region too.
	for _, u := range []string{"http://sqs.us-west-2.localhost.localstack.cloud:4566/000000000000/orders",
		"http://localhost:4566/queue/us-west-2/000000000000/orders"} {
		a, err := east.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
			AttributeNames: []sqstypes.QueueAttributeName{"VisibilityTimeout"}})
		if err != nil || a.Attributes["VisibilityTimeout"] != "7" {
			t.Errorf("%s from us-east-1: %v %v", u, a, err)
		}
	}

	// A dead-letter queue must be of the source's region; within it the
	// redrive moves messages as anywhere.
	_, err = west.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("src"), Attributes: map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders","maxReceiveCount":"1"}`}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	if err == nil || !strings.Contains(err.Error(), "Dead-letter target must be in same region as the source.") {
		t.Errorf("cross-region dead-letter queue: %v", err)
	}
	src, err := west.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("src"), Attributes: map[string]string{
		"VisibilityTimeout": "0",
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-west-2:000000000000:orders","maxReceiveCount":"1"}`}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := west.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: src.QueueUrl, MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := west.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl}); err != nil {
			t.Fatal(err)
		}
	}
	moved, err := west.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &westURL,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"DeadLetterQueueSourceArn"}})
	if err != nil || len(moved.Messages) != 1 || aws.ToString(moved.Messages[0].Body) != "poison" ||
		moved.Messages[0].Attributes["DeadLetterQueueSourceArn"] != "arn:aws:sqs:us-west-2:000000000000:src" {
		t.Fatalf("dead-letter move in us-west-2: %v %v", moved, err)
	}
	sources, err := west.json.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &westURL})
	if err != nil || len(sources.QueueUrls) != 1 || sources.QueueUrls[0] != aws.ToString(src.QueueUrl) {
		t.Errorf("ListDeadLetterSourceQueues: %v %v", sources, err)
	}
	if e, err := east.json.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &eastURL}); err != nil || len(e.QueueUrls) != 0 {
		t.Errorf("us-east-1's queue of the same name has sources: %v %v", e, err)
	}
	// A move task of another region's queue: its ARN names nothing here.
	_, err = east.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-west-2:000000000000:orders")})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
	task, err := west.json.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-west-2:000000000000:orders")})
	if err != nil || aws.ToString(task.TaskHandle) == "" {
		t.Fatalf("StartMessageMoveTask in us-west-2: %v %v", task, err)
	}
}

// hostOf is the host:port f listens on.
func hostOf(f *ferry) string { return strings.TrimPrefix(f.srv.URL(), "http://") }

// TestSNSRegions: topics, subscriptions and SMS settings are per region;
// a topic delivers into a queue of another region, as on AWS.
func TestSNSRegions(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	east := clientsOf(f.srv.URL(), "AKIDEAST", "x", "us-east-1")
	west := clientsOf(f.srv.URL(), "AKIDWEST", "x", "us-west-2")

	wt, err := west.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("alerts")})
	if err != nil || aws.ToString(wt.TopicArn) != "arn:aws:sns:us-west-2:000000000000:alerts" {
		t.Fatalf("CreateTopic in us-west-2: %v %v", wt, err)
	}
	if l, err := east.sns.ListTopics(ctx, &snssdk.ListTopicsInput{}); err != nil || len(l.Topics) != 0 {
		t.Errorf("us-east-1 lists %v (%v)", l, err)
	}
	_, err = east.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: wt.TopicArn})
	wantAPIError(t, err, "InvalidParameter", 400)
	et, err := east.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("alerts"),
		Attributes: map[string]string{"DisplayName": "east"}})
	if err != nil || aws.ToString(et.TopicArn) != "arn:aws:sns:us-east-1:000000000000:alerts" {
		t.Fatalf("the same name in us-east-1: %v %v", et, err)
	}

	// The us-west-2 topic delivers into a queue of us-east-1.
	q, err := east.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("inbox")})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := west.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: wt.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:inbox"), ReturnSubscriptionArn: true,
		Attributes: map[string]string{"RawMessageDelivery": "true"}})
	if err != nil || !strings.HasPrefix(aws.ToString(sub.SubscriptionArn), "arn:aws:sns:us-west-2:000000000000:alerts:") {
		t.Fatalf("Subscribe: %v %v", sub, err)
	}
	if l, err := east.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{}); err != nil || len(l.Subscriptions) != 0 {
		t.Errorf("us-east-1 lists the us-west-2 subscription: %v %v", l, err)
	}
	if l, err := west.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{}); err != nil || len(l.Subscriptions) != 1 {
		t.Errorf("us-west-2 subscriptions: %v %v", l, err)
	}
	if _, err := west.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: wt.TopicArn, Message: aws.String("across regions")}); err != nil {
		t.Fatal(err)
	}
	got, err := east.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 5})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "across regions" {
		t.Fatalf("delivery into us-east-1: %v %v", got, err)
	}

	// SMS settings are the region's.
	if _, err := west.sns.SetSMSAttributes(ctx, &snssdk.SetSMSAttributesInput{Attributes: map[string]string{"DefaultSenderID": "West"}}); err != nil {
		t.Fatal(err)
	}
	ea, err := east.sns.GetSMSAttributes(ctx, &snssdk.GetSMSAttributesInput{})
	if err != nil || ea.Attributes["DefaultSenderID"] == "West" {
		t.Errorf("us-east-1's SMS settings: %v %v", ea, err)
	}
	wa, err := west.sns.GetSMSAttributes(ctx, &snssdk.GetSMSAttributesInput{})
	if err != nil || wa.Attributes["DefaultSenderID"] != "West" {
		t.Errorf("us-west-2's SMS settings: %v %v", wa, err)
	}
}

// TestCloudWatchRegions: metric series and alarms are per region. An
// alarm of us-west-2 watches that region's queue, notifies a topic of
// its region, and names the region in its ARN and notification; us-east-1
// neither lists it nor sees its series.
func TestCloudWatchRegions(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	east := clientsOf(f.srv.URL(), "AKIDEAST", "x", "us-east-1")
	west := clientsOf(f.srv.URL(), "AKIDWEST", "x", "us-west-2")

	wq := createQueueIn(ctx, t, west, "orders")
	eq := createQueueIn(ctx, t, east, "orders")
	ops := createQueueIn(ctx, t, west, "ops")
	topic, err := west.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: aws.String("alarms")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := west.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-west-2:000000000000:ops"), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	alarm := func(c authClients, action string) error {
		_, err := c.cw.PutMetricAlarm(ctx, &cwsdk.PutMetricAlarmInput{AlarmName: aws.String("busy"), Namespace: aws.String("AWS/SQS"),
			MetricName: aws.String("NumberOfMessagesSent"), Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("orders")}},
			Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(2),
			ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, AlarmActions: []string{action}})
		return err
	}
	// An action must name a topic of the alarm's region.
	wantAPIError(t, alarm(west, "arn:aws:sns:us-east-1:000000000000:alarms"), "ValidationError", 400)
	if err := alarm(west, aws.ToString(topic.TopicArn)); err != nil {
		t.Fatal(err)
	}
	if d, err := east.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{}); err != nil || len(d.MetricAlarms) != 0 {
		t.Errorf("us-east-1 lists %v (%v)", d, err)
	}
	d, err := west.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{})
	if err != nil || len(d.MetricAlarms) != 1 || aws.ToString(d.MetricAlarms[0].AlarmArn) != "arn:aws:cloudwatch:us-west-2:000000000000:alarm:busy" {
		t.Fatalf("us-west-2 alarms: %v %v", d, err)
	}

	// Two messages in the west's orders, one in the east's.
	for _, u := range []string{wq, wq, eq} {
		if _, err := east.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("m")}); err != nil {
			t.Fatal(err)
		}
	}
	f.clk.Advance(time.Minute)
	sum := func(c authClients) float64 {
		st, err := c.cw.GetMetricStatistics(ctx, &cwsdk.GetMetricStatisticsInput{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent"),
			Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("orders")}},
			StartTime:  aws.Time(epoch.Add(-time.Hour)), EndTime: aws.Time(epoch.Add(time.Hour)), Period: aws.Int32(3600),
			Statistics: []cwtypes.Statistic{cwtypes.StatisticSum}})
		if err != nil || len(st.Datapoints) != 1 {
			t.Fatalf("GetMetricStatistics: %v %v", st, err)
		}
		return aws.ToFloat64(st.Datapoints[0].Sum)
	}
	if w, e := sum(west), sum(east); w != 2 || e != 1 {
		t.Errorf("NumberOfMessagesSent of orders: us-west-2 %v, us-east-1 %v; want 2 and 1", w, e)
	}
	note := testwait.Some(t, "no alarm notification", func() []string { return receiveBodies(ctx, t, west, ops) })
	var n struct{ AlarmArn, Region, NewStateValue string }
	if err := json.Unmarshal([]byte(note[0]), &n); err != nil || n.NewStateValue != "ALARM" ||
		n.AlarmArn != "arn:aws:cloudwatch:us-west-2:000000000000:alarm:busy" || n.Region != "US West (Oregon)" {
		t.Errorf("notification %s (%v)", note[0], err)
	}
}
