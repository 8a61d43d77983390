package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestAccountsSNSCloudWatch: two accounts in one Ferry, with auth off (a
// 12-digit access key is the account) and with signatures verified. Each
// account's topics, subscriptions, alarms and metrics are its own: the
// same names are two resources, lists show the caller's only, and the
// other account's are refused as AWS refuses them (AuthorizationError
// for an SNS resource that exists, NotFound for one that does not,
// ResourceNotFound for an alarm, which CloudWatch looks up by name in the
// caller's account). A topic delivers to a queue of its own account, and
// to another account's only once that queue's policy lets it in.
func TestAccountsSNSCloudWatch(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name       string
		verify     bool
		keyA, secA string
		keyB, secB string
		accA, accB string
	}{
		{name: "auth off", keyA: "111111111111", secA: "x", keyB: "222222222222", secB: "x", accA: "111111111111", accB: "222222222222"},
		{name: "auth verify", verify: true, keyA: aliceKey, secA: aliceSecret, keyB: bobKey, secB: bobSecret, accA: aliceAccount, accB: bobAccount},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			var f *ferry
			if mode.verify {
				f = start(t, verifying(t, 0))
			} else {
				f = start(t)
			}
			a := clientsOf(f.srv.URL(), mode.keyA, mode.secA, "us-east-1")
			b := clientsOf(f.srv.URL(), mode.keyB, mode.secB, "us-east-1")
			testAccounts(t, f, a, b, mode.accA, mode.accB, !mode.verify)
		})
	}
}

func testAccounts(t *testing.T, f *ferry, a, b authClients, accA, accB string, unsigned bool) {
	ctx := ctxT(t)
	topicA := createTopic(ctx, t, a, "events")
	topicB := createTopic(ctx, t, b, "events")
	if want := "arn:aws:sns:us-east-1:" + accA + ":events"; topicA != want {
		t.Errorf("A's topic %s, want %s", topicA, want)
	}
	if want := "arn:aws:sns:us-east-1:" + accB + ":events"; topicB != want {
		t.Errorf("B's topic %s, want %s", topicB, want)
	}
	for who, c := range map[string]struct {
		cl   authClients
		want string
	}{"A": {a, topicA}, "B": {b, topicB}} {
		list, err := c.cl.sns.ListTopics(ctx, &snssdk.ListTopicsInput{})
		if err != nil || len(list.Topics) != 1 || aws.ToString(list.Topics[0].TopicArn) != c.want {
			t.Errorf("%s lists topics %v (%v), want only %s", who, list, err, c.want)
		}
	}
	attrs, err := a.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topicA})
	if err != nil || attrs.Attributes["Owner"] != accA || !strings.Contains(attrs.Attributes["Policy"], `"AWS:SourceOwner":"`+accA+`"`) {
		t.Errorf("A's topic attributes %v (%v): owner and policy want account %s", attrs, err, accA)
	}

	// A's queue, subscribed to A's topic, gets A's messages; B's queue of
	// the same name, subscribed to A's topic, does not.
	queueA := createQueueIn(ctx, t, a, "inbox")
	queueB := createQueueIn(ctx, t, b, "inbox")
	subA := subscribe(ctx, t, a, topicA, "arn:aws:sqs:us-east-1:"+accA+":inbox")
	cross, err := a.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topicA, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:" + accB + ":inbox"), ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatalf("Subscribe B's queue: %v", err)
	}
	crossARN := aws.ToString(cross.SubscriptionArn)
	token, ok := f.srv.SNS().ConfirmationToken(crossARN)
	if !ok {
		t.Fatalf("a subscription of another account's queue is not pending confirmation")
	}
	// B, the queue's owner, confirms with the token its queue would get.
	if _, err := b.sns.ConfirmSubscription(ctx, &snssdk.ConfirmSubscriptionInput{TopicArn: &topicA, Token: &token}); err != nil {
		t.Fatalf("B confirms: %v", err)
	}
	if _, err := a.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topicA, Message: aws.String("for A")}); err != nil {
		t.Fatalf("A publishes: %v", err)
	}
	if got := receiveBodies(ctx, t, a, queueA); len(got) != 1 || !strings.Contains(got[0], "for A") {
		t.Errorf("A's queue got %q, want the message", got)
	}
	if got := receiveBodies(ctx, t, b, queueB); len(got) != 0 {
		t.Errorf("B's queue got %q from A's topic, which its policy does not allow", got)
	}
	if c, _ := f.srv.SNS().SubscriptionCounters(crossARN); c.Failed != 1 || c.Delivered != 0 {
		t.Errorf("the refused subscription counts %+v, want one failure", c)
	}
	if c, _ := f.srv.SNS().SubscriptionCounters(subA); c.Delivered != 1 {
		t.Errorf("A's subscription counts %+v, want one delivery", c)
	}
	// B's queue policy lets A's topic in: A's messages reach it.
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},` +
		`"Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-1:` + accB + `:inbox",` +
		`"Condition":{"ArnEquals":{"aws:SourceArn":"` + topicA + `"}}}]}`
	if _, err := b.json.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &queueB,
		Attributes: map[string]string{"Policy": policy}}); err != nil {
		t.Fatalf("B sets its queue's policy: %v", err)
	}
	if _, err := a.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topicA, Message: aws.String("allowed")}); err != nil {
		t.Fatalf("A publishes: %v", err)
	}
	if got := receiveBodies(ctx, t, b, queueB); len(got) != 1 || !strings.Contains(got[0], "allowed") {
		t.Errorf("B's queue got %q once its policy allows A's topic", got)
	}
	receiveBodies(ctx, t, a, queueA)
	// A topic of B's account is not the one the policy names.
	otherB := createTopic(ctx, t, b, "other")
	subscribe(ctx, t, b, otherB, "arn:aws:sqs:us-east-1:"+accB+":inbox")
	if _, err := b.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &otherB, Message: aws.String("own")}); err != nil {
		t.Fatalf("B publishes: %v", err)
	}
	if got := receiveBodies(ctx, t, b, queueB); len(got) != 1 || !strings.Contains(got[0], "own") {
		t.Errorf("B's queue got %q from B's own topic, which needs no Allow", got)
	}

	// What B cannot do with A's topic and subscription.
	const denied, missing = "AuthorizationError", "NotFound"
	absent := "arn:aws:sns:us-east-1:" + accA + ":absent"
	for _, tt := range []struct {
		what   string
		call   func() error
		code   string
		status int
	}{
		{"Publish", func() error {
			_, err := b.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &topicA, Message: aws.String("x")})
			return err
		}, denied, http.StatusForbidden},
		{"Publish to a topic that does not exist", func() error {
			_, err := b.sns.Publish(ctx, &snssdk.PublishInput{TopicArn: &absent, Message: aws.String("x")})
			return err
		}, missing, http.StatusNotFound},
		{"GetTopicAttributes", func() error {
			_, err := b.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topicA})
			return err
		}, denied, http.StatusForbidden},
		{"SetTopicAttributes", func() error {
			_, err := b.sns.SetTopicAttributes(ctx, &snssdk.SetTopicAttributesInput{TopicArn: &topicA,
				AttributeName: aws.String("DisplayName"), AttributeValue: aws.String("mine")})
			return err
		}, denied, http.StatusForbidden},
		{"Subscribe", func() error {
			_, err := b.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topicA, Protocol: aws.String("sqs"),
				Endpoint: aws.String("arn:aws:sqs:us-east-1:" + accB + ":inbox")})
			return err
		}, denied, http.StatusForbidden},
		{"ListSubscriptionsByTopic", func() error {
			_, err := b.sns.ListSubscriptionsByTopic(ctx, &snssdk.ListSubscriptionsByTopicInput{TopicArn: &topicA})
			return err
		}, denied, http.StatusForbidden},
		{"GetSubscriptionAttributes", func() error {
			_, err := b.sns.GetSubscriptionAttributes(ctx, &snssdk.GetSubscriptionAttributesInput{SubscriptionArn: &subA})
			return err
		}, denied, http.StatusForbidden},
		{"SetSubscriptionAttributes", func() error {
			_, err := b.sns.SetSubscriptionAttributes(ctx, &snssdk.SetSubscriptionAttributesInput{SubscriptionArn: &subA,
				AttributeName: aws.String("RawMessageDelivery"), AttributeValue: aws.String("true")})
			return err
		}, denied, http.StatusForbidden},
		{"Unsubscribe", func() error {
			_, err := b.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: &subA})
			return err
		}, denied, http.StatusForbidden},
		{"TagResource", func() error {
			_, err := b.sns.TagResource(ctx, &snssdk.TagResourceInput{ResourceArn: &topicA,
				Tags: []snstypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}, denied, http.StatusForbidden},
		{"DeleteTopic", func() error {
			_, err := b.sns.DeleteTopic(ctx, &snssdk.DeleteTopicInput{TopicArn: &topicA})
			return err
		}, denied, http.StatusForbidden},
	} {
		t.Run(tt.what, func(t *testing.T) {
			wantAPIError(t, tt.call(), tt.code, tt.status)
		})
	}
	if _, err := a.sns.GetTopicAttributes(ctx, &snssdk.GetTopicAttributesInput{TopicArn: &topicA}); err != nil {
		t.Errorf("A's topic after B's attempts: %v", err)
	}
	subs, err := b.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{})
	if err != nil || len(subs.Subscriptions) != 1 || aws.ToString(subs.Subscriptions[0].TopicArn) != otherB {
		t.Errorf("B lists subscriptions %v (%v), want only its own: A's are of A's topic", subs, err)
	}
	subs, err = a.sns.ListSubscriptions(ctx, &snssdk.ListSubscriptionsInput{})
	if err != nil || len(subs.Subscriptions) != 2 {
		t.Errorf("A lists subscriptions %v (%v), want its two", subs, err)
	}
	if unsigned {
		// With auth off, a request without a key is the configured
		// account's: it sees neither account's topics.
		list, err := f.sns.ListTopics(ctx, &snssdk.ListTopicsInput{})
		if err != nil || len(list.Topics) != 0 {
			t.Errorf("the default account lists %v (%v)", list, err)
		}
	}
	if _, err := a.sns.Unsubscribe(ctx, &snssdk.UnsubscribeInput{SubscriptionArn: &subA}); err != nil {
		t.Errorf("A unsubscribes its own: %v", err)
	}

	// Alarms: the same name in two accounts is two alarms.
	putAlarm(ctx, t, a, "high", topicA)
	putAlarm(ctx, t, b, "high", topicB)
	putAlarm(ctx, t, a, "only-a", "")
	// An alarm's actions name topics of its own account.
	_, err = b.cw.PutMetricAlarm(ctx, alarmInput("steal", topicA))
	wantAPIError(t, err, "ValidationError", http.StatusBadRequest)
	for who, c := range map[string]struct {
		cl    authClients
		acc   string
		names []string
	}{"A": {a, accA, []string{"high", "only-a"}}, "B": {b, accB, []string{"high"}}} {
		out, err := c.cl.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{})
		if err != nil {
			t.Fatalf("%s DescribeAlarms: %v", who, err)
		}
		var names []string
		for _, al := range out.MetricAlarms {
			names = append(names, aws.ToString(al.AlarmName))
			if want := "arn:aws:cloudwatch:us-east-1:" + c.acc + ":alarm:" + aws.ToString(al.AlarmName); aws.ToString(al.AlarmArn) != want {
				t.Errorf("%s's alarm ARN %s, want %s", who, aws.ToString(al.AlarmArn), want)
			}
		}
		if strings.Join(names, ",") != strings.Join(c.names, ",") {
			t.Errorf("%s describes alarms %v, want %v", who, names, c.names)
		}
		hist, err := c.cl.cw.DescribeAlarmHistory(ctx, &cwsdk.DescribeAlarmHistoryInput{HistoryItemType: cwtypes.HistoryItemTypeConfigurationUpdate})
		if err != nil || len(hist.AlarmHistoryItems) != len(c.names) {
			t.Errorf("%s's alarm history %v (%v), want one creation per alarm of its own", who, hist, err)
		}
	}
	_, err = b.cw.DeleteAlarms(ctx, &cwsdk.DeleteAlarmsInput{AlarmNames: []string{"only-a"}})
	wantAPIError(t, err, "ResourceNotFound", http.StatusNotFound)
	_, err = b.cw.SetAlarmState(ctx, &cwsdk.SetAlarmStateInput{AlarmName: aws.String("only-a"), StateValue: cwtypes.StateValueAlarm, StateReason: aws.String("x")})
	wantAPIError(t, err, "ResourceNotFound", http.StatusNotFound)
	_, err = b.cw.ListTagsForResource(ctx, &cwsdk.ListTagsForResourceInput{ResourceARN: aws.String("arn:aws:cloudwatch:us-east-1:" + accA + ":alarm:only-a")})
	wantAPIError(t, err, "ResourceNotFoundException", http.StatusNotFound)
	if _, err := b.cw.DeleteAlarms(ctx, &cwsdk.DeleteAlarmsInput{AlarmNames: []string{"high"}}); err != nil {
		t.Fatalf("B deletes its alarm: %v", err)
	}
	if out, err := a.cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{AlarmNames: []string{"high"}}); err != nil || len(out.MetricAlarms) != 1 {
		t.Errorf("A's alarm after B deleted its own: %v (%v)", out, err)
	}

	// Metrics: each account lists and reads its own queues' and topics'.
	// Only B has a topic "other", published to once; A published twice
	// to its "events", B never to its own.
	published := func(cl authClients, topic string) (listed bool, sum float64) {
		t.Helper()
		out, err := cl.cw.ListMetrics(ctx, &cwsdk.ListMetricsInput{Namespace: aws.String("AWS/SNS"), MetricName: aws.String("NumberOfMessagesPublished"),
			Dimensions: []cwtypes.DimensionFilter{{Name: aws.String("TopicName"), Value: aws.String(topic)}}})
		if err != nil {
			t.Fatalf("ListMetrics: %v", err)
		}
		stats, err := cl.cw.GetMetricStatistics(ctx, &cwsdk.GetMetricStatisticsInput{Namespace: aws.String("AWS/SNS"),
			MetricName: aws.String("NumberOfMessagesPublished"), Dimensions: []cwtypes.Dimension{{Name: aws.String("TopicName"), Value: aws.String(topic)}},
			StartTime: aws.Time(f.clk.Now().Add(-time.Hour)), EndTime: aws.Time(f.clk.Now().Add(time.Hour)), Period: aws.Int32(7200),
			Statistics: []cwtypes.Statistic{cwtypes.StatisticSum}})
		if err != nil {
			t.Fatalf("GetMetricStatistics: %v", err)
		}
		for _, d := range stats.Datapoints {
			sum += aws.ToFloat64(d.Sum)
		}
		return len(out.Metrics) == 1, sum
	}
	for _, c := range []struct {
		who, topic string
		cl         authClients
		listed     bool
		sum        float64
	}{
		{"A", "events", a, true, 2},
		{"A", "other", a, false, 0},
		{"B", "events", b, false, 0},
		{"B", "other", b, true, 1},
	} {
		if listed, sum := published(c.cl, c.topic); listed != c.listed || sum != c.sum {
			t.Errorf("%s: NumberOfMessagesPublished of %s listed %v, sum %v; want %v, %v", c.who, c.topic, listed, sum, c.listed, c.sum)
		}
	}
	if unsigned {
		// The configured account's metrics stay its own and visible to it.
		url := f.createQueue(t, "metered", nil)
		if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("m")}); err != nil {
			t.Fatal(err)
		}
		def := clientsOf(f.srv.URL(), "AKIDFERRYTEST", "secret", "us-east-1")
		out, err := def.cw.ListMetrics(ctx, &cwsdk.ListMetricsInput{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent")})
		if err != nil || len(out.Metrics) != 1 {
			t.Errorf("the configured account lists %v (%v), want its queue's metric", out, err)
		}
		for who, cl := range map[string]authClients{"A": a, "B": b} {
			out, err = cl.cw.ListMetrics(ctx, &cwsdk.ListMetricsInput{Namespace: aws.String("AWS/SQS"),
				Dimensions: []cwtypes.DimensionFilter{{Name: aws.String("QueueName"), Value: aws.String("metered")}}})
			if err != nil || len(out.Metrics) != 0 {
				t.Errorf("%s lists the configured account's metrics %v (%v)", who, out, err)
			}
		}
	}
}

func createTopic(ctx context.Context, t *testing.T, c authClients, name string) string {
	t.Helper()
	out, err := c.sns.CreateTopic(ctx, &snssdk.CreateTopicInput{Name: &name})
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", name, err)
	}
	return aws.ToString(out.TopicArn)
}

func createQueueIn(ctx context.Context, t *testing.T, c authClients, name string) string {
	t.Helper()
	out, err := c.json.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func subscribe(ctx context.Context, t *testing.T, c authClients, topic, queueARN string) string {
	t.Helper()
	out, err := c.sns.Subscribe(ctx, &snssdk.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), Endpoint: &queueARN,
		ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatalf("Subscribe %s: %v", queueARN, err)
	}
	return aws.ToString(out.SubscriptionArn)
}

// receiveBodies receives what the queue holds now (no wait): SNS's copies
// are in their queues once Publish has answered.
func receiveBodies(ctx context.Context, t *testing.T, c authClients, url string) []string {
	t.Helper()
	out, err := c.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies
}

func alarmInput(name, topic string) *cwsdk.PutMetricAlarmInput {
	in := &cwsdk.PutMetricAlarmInput{AlarmName: &name, Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("inbox")}},
		Statistic:  cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(100),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold}
	if topic != "" {
		in.AlarmActions = []string{topic}
	}
	return in
}

func putAlarm(ctx context.Context, t *testing.T, c authClients, name, topic string) {
	t.Helper()
	if _, err := c.cw.PutMetricAlarm(ctx, alarmInput(name, topic)); err != nil {
		t.Fatalf("PutMetricAlarm %s: %v", name, err)
	}
}
