package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	cwv1 "github.com/aws/aws-sdk-go/service/cloudwatch"

	"github.com/ferrymq/ferry/internal/testwait"
)

// cwClient speaks CloudWatch over the query protocol (aws-sdk-go v1.46).
func cwClient(url string) *cwv1.CloudWatch { return cwv1.New(v1Session(url, nil)) }

func wantCWError(t *testing.T, err error, code, message string, status int) {
	t.Helper()
	var rf awserr.RequestFailure
	if err == nil {
		t.Fatalf("want %s, got success", code)
	}
	if !errors.As(err, &rf) {
		t.Fatalf("want %s, got %v", code, err)
	}
	if rf.Code() != code || rf.StatusCode() != status || message != "" && rf.Message() != message {
		t.Errorf("error = %s %d %q, want %s %d %q", rf.Code(), rf.StatusCode(), rf.Message(), code, status, message)
	}
}

// alarmNotification is CloudWatch's alarm message, as a subscriber reads
// it inside the SNS envelope.
type alarmNotification struct {
	AlarmName, AWSAccountId, NewStateValue, NewStateReason, OldStateValue, Region, AlarmArn string
	StateChangeTime                                                                         string
	AlarmActions                                                                            []string
	Trigger                                                                                 struct {
		MetricName, Namespace, StatisticType, Statistic, ComparisonOperator string
		Period, EvaluationPeriods                                           int
		Threshold                                                           float64
		Dimensions                                                          []struct{ Name, Value string }
	}
}

// The dead-letter queue monitoring AWS documents: an alarm on the DLQ's
// NumberOfMessagesReceived notifies an SNS topic that a queue subscribes to.
func TestCloudWatchDeadLetterAlarm(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	cw := cwClient(f.srv.URL())

	f.createQueue(t, "orders-dlq", nil)
	src := f.createQueue(t, "orders", map[string]string{"RedrivePolicy": redrivePolicy("orders-dlq", 1), "VisibilityTimeout": "5"})
	dlq := f.srv.URL() + "/000000000000/orders-dlq"
	ops := f.createQueue(t, "ops", nil)
	topic := f.createTopic(t, "dlq-alarms", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"ops", nil)

	_, err := cw.PutMetricAlarmWithContext(ctx, &cwv1.PutMetricAlarmInput{
		AlarmName:          awsv1.String("orders-dlq-not-empty"),
		AlarmDescription:   awsv1.String("a message reached the dead-letter queue"),
		Namespace:          awsv1.String("AWS/SQS"),
		MetricName:         awsv1.String("NumberOfMessagesReceived"),
		Dimensions:         []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("orders-dlq")}},
		Statistic:          awsv1.String("Sum"),
		Period:             awsv1.Int64(60),
		EvaluationPeriods:  awsv1.Int64(1),
		Threshold:          awsv1.Float64(1),
		ComparisonOperator: awsv1.String("GreaterThanOrEqualToThreshold"),
		AlarmActions:       []*string{awsv1.String(topic)},
	})
	if err != nil {
		t.Fatalf("PutMetricAlarm: %v", err)
	}
	desc, err := cw.DescribeAlarmsWithContext(ctx, &cwv1.DescribeAlarmsInput{AlarmNames: []*string{awsv1.String("orders-dlq-not-empty")}})
	if err != nil || len(desc.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms: %v %v", desc, err)
	}
	a := desc.MetricAlarms[0]
	if *a.StateValue != "INSUFFICIENT_DATA" || *a.StateReason != "Unchecked: Initial alarm creation" ||
		*a.AlarmArn != "arn:aws:cloudwatch:us-east-1:000000000000:alarm:orders-dlq-not-empty" || *a.Threshold != 1 ||
		!a.StateUpdatedTimestamp.Equal(epoch.Truncate(time.Millisecond)) {
		t.Fatalf("new alarm = %v", a)
	}

	// A consumer that fails: the second receive moves the message.
	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Some(t, "nothing arrived", func() []string {
		var ids []string
		for _, m := range f.receiveAll(t, src, 1) {
			ids = append(ids, *m.MessageId)
		}
		return ids
	}); len(got) != 1 {
		t.Fatalf("first receive: %v", got)
	}
	f.clk.Advance(5 * time.Second)
	if got := f.receiveAll(t, src, 1); len(got) != 0 {
		t.Fatalf("the message was handed out again: %v", got)
	}
	got := f.receiveAll(t, dlq, 10)
	if len(got) != 1 || *got[0].Body != "poison" {
		t.Fatalf("dead-letter queue holds %v", got)
	}

	// The next minute's evaluation sees the receive and sets off the alarm.
	f.clk.Advance(time.Minute)
	msgs := testwait.Some(t, "nothing arrived", func() []string {
		var bodies []string
		for _, m := range f.receiveAll(t, ops, 10) {
			bodies = append(bodies, *m.Body)
		}
		return bodies
	})
	var env struct{ Type, Subject, Message, TopicArn string }
	if err := json.Unmarshal([]byte(msgs[0]), &env); err != nil {
		t.Fatalf("envelope %q: %v", msgs[0], err)
	}
	if env.Type != "Notification" || env.TopicArn != topic || env.Subject != `ALARM: "orders-dlq-not-empty" in US East (N. Virginia)` {
		t.Errorf("envelope = %+v", env)
	}
	var n alarmNotification
	if err := json.Unmarshal([]byte(env.Message), &n); err != nil {
		t.Fatalf("notification %q: %v", env.Message, err)
	}
	minute := epoch.Truncate(time.Minute).Add(5 * time.Second).Truncate(time.Minute)
	wantReason := "Threshold Crossed: 1 datapoint [1.0 (" + minute.Format("02/01/06 15:04:05") +
		")] was greater than or equal to the threshold (1.0)."
	if n.AlarmName != "orders-dlq-not-empty" || n.NewStateValue != "ALARM" || n.OldStateValue != "INSUFFICIENT_DATA" ||
		n.NewStateReason != wantReason || n.AWSAccountId != "000000000000" || n.Region != "US East (N. Virginia)" ||
		n.Trigger.MetricName != "NumberOfMessagesReceived" || n.Trigger.Statistic != "SUM" || n.Trigger.StatisticType != "Statistic" ||
		n.Trigger.Threshold != 1 || n.Trigger.Period != 60 || len(n.AlarmActions) != 1 || n.AlarmActions[0] != topic ||
		!strings.HasSuffix(n.StateChangeTime, "+0000") {
		t.Errorf("notification = %s", env.Message)
	}
	if !strings.Contains(env.Message, `"Dimensions":[{"value":"orders-dlq","name":"QueueName"}]`) ||
		!strings.Contains(env.Message, `"Threshold":1.0`) {
		t.Errorf("notification trigger = %s", env.Message)
	}

	desc, err = cw.DescribeAlarmsWithContext(ctx, &cwv1.DescribeAlarmsInput{StateValue: awsv1.String("ALARM")})
	if err != nil || len(desc.MetricAlarms) != 1 || *desc.MetricAlarms[0].StateReason != wantReason {
		t.Fatalf("DescribeAlarms ALARM: %v %v", desc, err)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(*desc.MetricAlarms[0].StateReasonData), &data); err != nil || data["statistic"] != "Sum" {
		t.Errorf("StateReasonData = %s (%v)", *desc.MetricAlarms[0].StateReasonData, err)
	}

	hist, err := cw.DescribeAlarmHistoryWithContext(ctx, &cwv1.DescribeAlarmHistoryInput{AlarmName: awsv1.String("orders-dlq-not-empty")})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, h := range hist.AlarmHistoryItems {
		kinds = append(kinds, *h.HistoryItemType+": "+*h.HistorySummary)
	}
	want := []string{
		"Action: Successfully executed action " + topic,
		"StateUpdate: Alarm updated from INSUFFICIENT_DATA to ALARM",
		`ConfigurationUpdate: Alarm "orders-dlq-not-empty" created`,
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Errorf("history:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}

	// The metric behind it reads back through GetMetricStatistics.
	stats, err := cw.GetMetricStatisticsWithContext(ctx, &cwv1.GetMetricStatisticsInput{
		Namespace: awsv1.String("AWS/SQS"), MetricName: awsv1.String("NumberOfMessagesReceived"),
		Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("orders-dlq")}},
		StartTime:  awsv1.Time(epoch.Add(-time.Hour)), EndTime: awsv1.Time(epoch.Add(time.Hour)),
		Period: awsv1.Int64(3600), Statistics: []*string{awsv1.String("Sum"), awsv1.String("SampleCount")},
	})
	if err != nil || len(stats.Datapoints) != 1 || *stats.Datapoints[0].Sum != 1 || *stats.Datapoints[0].Unit != "Count" || *stats.Label != "NumberOfMessagesReceived" {
		t.Errorf("GetMetricStatistics: %v %v", stats, err)
	}

	// A minute without receives reads zero on an active queue: back to OK.
	f.clk.Advance(time.Minute)
	testwait.Eventually(t, "the alarm to be OK", func() bool { return alarmState(t, cw) == "OK" })
}

// alarmState is the state of the only alarm.
func alarmState(t testing.TB, cw *cwv1.CloudWatch) string {
	t.Helper()
	desc, err := cw.DescribeAlarmsWithContext(ctxT(t), &cwv1.DescribeAlarmsInput{})
	if err != nil || len(desc.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms: %v %v", desc, err)
	}
	return *desc.MetricAlarms[0].StateValue
}

// The API over the query protocol: validation errors, SetAlarmState,
// actions disabled, deletion and the metric listings.
func TestCloudWatchQueryAPI(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	cw := cwClient(f.srv.URL())
	topic := f.createTopic(t, "alerts", nil)
	f.createQueue(t, "inbox", nil)
	f.subscribe(t, topic, "sqs", arnPrefix+"inbox", nil)
	inbox := f.srv.URL() + "/000000000000/inbox"

	put := func(mod func(*cwv1.PutMetricAlarmInput)) error {
		in := &cwv1.PutMetricAlarmInput{
			AlarmName: awsv1.String("a1"), Namespace: awsv1.String("AWS/SQS"), MetricName: awsv1.String("NumberOfMessagesSent"),
			Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("inbox")}},
			Statistic:  awsv1.String("Sum"), Period: awsv1.Int64(60), EvaluationPeriods: awsv1.Int64(2), Threshold: awsv1.Float64(5),
			ComparisonOperator: awsv1.String("GreaterThanThreshold"), OKActions: []*string{awsv1.String(topic)},
			AlarmActions: []*string{awsv1.String(topic)}, TreatMissingData: awsv1.String("notBreaching"),
		}
		if mod != nil {
			mod(in)
		}
		_, err := cw.PutMetricAlarmWithContext(ctx, in)
		return err
	}
	for _, tc := range []struct {
		name    string
		mod     func(*cwv1.PutMetricAlarmInput)
		code    string
		message string
	}{
		{"bad operator", func(in *cwv1.PutMetricAlarmInput) { in.ComparisonOperator = awsv1.String("Above") }, "ValidationError",
			"1 validation error detected: Value 'Above' at 'comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: " +
				"[GreaterThanOrEqualToThreshold, GreaterThanThreshold, LessThanThreshold, LessThanOrEqualToThreshold, " +
				"LessThanLowerOrGreaterThanUpperThreshold, LessThanLowerThreshold, GreaterThanUpperThreshold]"},
		{"bad period", func(in *cwv1.PutMetricAlarmInput) { in.Period = awsv1.Int64(90) }, "ValidationError", "Period must be 10, 20, 30 or a multiple of 60"},
		{"M > N", func(in *cwv1.PutMetricAlarmInput) { in.DatapointsToAlarm = awsv1.Int64(3) }, "ValidationError",
			"DatapointsToAlarm must be less than or equal to EvaluationPeriods"},
		{"band without threshold metric", func(in *cwv1.PutMetricAlarmInput) {
			in.ComparisonOperator = awsv1.String("LessThanLowerThreshold")
		}, "ValidationError", "Comparison operators for ranges require ThresholdMetricId to be set"},
		{"ec2 action", func(in *cwv1.PutMetricAlarmInput) {
			in.AlarmActions = []*string{awsv1.String("arn:aws:automate:us-east-1:ec2:stop")}
		}, "ValidationError", ""},
		{"more than a day", func(in *cwv1.PutMetricAlarmInput) { in.EvaluationPeriods = awsv1.Int64(1441) }, "ValidationError",
			"Metrics cannot be checked across more than a day (EvaluationPeriods * Period must be <= 86400)"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCWError(t, put(tc.mod), tc.code, tc.message, 400) })
	}

	if err := put(nil); err != nil {
		t.Fatal(err)
	}
	// No data and notBreaching: the first evaluation says OK at once.
	desc, err := cw.DescribeAlarmsForMetricWithContext(ctx, &cwv1.DescribeAlarmsForMetricInput{Namespace: awsv1.String("AWS/SQS"),
		MetricName: awsv1.String("NumberOfMessagesSent"),
		Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("inbox")}}})
	if err != nil || len(desc.MetricAlarms) != 1 || *desc.MetricAlarms[0].StateValue != "OK" ||
		*desc.MetricAlarms[0].StateReason != "Threshold Crossed: no datapoints were received for 2 periods and 2 missing datapoints were treated as [NonBreaching]." {
		t.Fatalf("DescribeAlarmsForMetric: %v %v", desc, err)
	}
	okNote := testwait.Some(t, "nothing arrived", func() []string {
		var b []string
		for _, m := range f.receiveAll(t, inbox, 10) {
			b = append(b, *m.Body)
		}
		return b
	})
	if !strings.Contains(okNote[0], `\"NewStateValue\":\"OK\"`) {
		t.Errorf("OK notification = %s", okNote[0])
	}

	// SetAlarmState: validation, unknown alarm, bad JSON, then a change
	// that runs no action once actions are disabled.
	_, err = cw.SetAlarmStateWithContext(ctx, &cwv1.SetAlarmStateInput{AlarmName: awsv1.String("a1"), StateValue: awsv1.String("BROKEN"), StateReason: awsv1.String("x")})
	wantCWError(t, err, "ValidationError", "1 validation error detected: Value 'BROKEN' at 'stateValue' failed to satisfy constraint: Member must satisfy enum value set: [OK, ALARM, INSUFFICIENT_DATA]", 400)
	_, err = cw.SetAlarmStateWithContext(ctx, &cwv1.SetAlarmStateInput{AlarmName: awsv1.String("nope"), StateValue: awsv1.String("ALARM"), StateReason: awsv1.String("x")})
	wantCWError(t, err, "ResourceNotFound", "", 404)
	_, err = cw.SetAlarmStateWithContext(ctx, &cwv1.SetAlarmStateInput{AlarmName: awsv1.String("a1"), StateValue: awsv1.String("ALARM"),
		StateReason: awsv1.String("x"), StateReasonData: awsv1.String("{not json")})
	wantCWError(t, err, "InvalidFormat", "", 400)
	if _, err := cw.DisableAlarmActionsWithContext(ctx, &cwv1.DisableAlarmActionsInput{AlarmNames: []*string{awsv1.String("a1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.SetAlarmStateWithContext(ctx, &cwv1.SetAlarmStateInput{AlarmName: awsv1.String("a1"), StateValue: awsv1.String("ALARM"),
		StateReason: awsv1.String("testing"), StateReasonData: awsv1.String(`{"by":"hand"}`)}); err != nil {
		t.Fatal(err)
	}
	d2, err := cw.DescribeAlarmsWithContext(ctx, &cwv1.DescribeAlarmsInput{AlarmNamePrefix: awsv1.String("a")})
	if err != nil || len(d2.MetricAlarms) != 1 || *d2.MetricAlarms[0].StateValue != "ALARM" || *d2.MetricAlarms[0].ActionsEnabled ||
		*d2.MetricAlarms[0].StateReasonData != `{"by":"hand"}` {
		t.Fatalf("after SetAlarmState: %v %v", d2, err)
	}
	if got := f.receiveAll(t, inbox, 10); len(got) != 0 {
		t.Errorf("a disabled alarm notified: %v", got)
	}
	// The next evaluation puts it back to OK.
	f.clk.Advance(time.Minute)
	testwait.Eventually(t, "the alarm to be OK", func() bool { return alarmState(t, cw) == "OK" })
	hist, err := cw.DescribeAlarmHistoryWithContext(ctx, &cwv1.DescribeAlarmHistoryInput{AlarmName: awsv1.String("a1"),
		HistoryItemType: awsv1.String("StateUpdate"), ScanBy: awsv1.String("TimestampAscending")})
	if err != nil || len(hist.AlarmHistoryItems) != 3 || *hist.AlarmHistoryItems[1].HistorySummary != "Alarm updated from OK to ALARM" {
		t.Fatalf("history: %v %v", hist, err)
	}

	_, err = cw.DeleteAlarmsWithContext(ctx, &cwv1.DeleteAlarmsInput{AlarmNames: []*string{awsv1.String("a1"), awsv1.String("nope")}})
	wantCWError(t, err, "ResourceNotFound", "", 404)
	if _, err := cw.DeleteAlarmsWithContext(ctx, &cwv1.DeleteAlarmsInput{AlarmNames: []*string{awsv1.String("a1")}}); err != nil {
		t.Fatal(err)
	}
	d4, err := cw.DescribeAlarmsWithContext(ctx, &cwv1.DescribeAlarmsInput{})
	if err != nil || len(d4.MetricAlarms) != 0 {
		t.Fatalf("after delete: %v %v", d4, err)
	}

	// Metrics: the SQS counters of the notifications above are listed.
	lm, err := cw.ListMetricsWithContext(ctx, &cwv1.ListMetricsInput{Namespace: awsv1.String("AWS/SQS"),
		Dimensions: []*cwv1.DimensionFilter{{Name: awsv1.String("QueueName"), Value: awsv1.String("inbox")}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range lm.Metrics {
		names = append(names, *m.MetricName)
	}
	if !strings.Contains(strings.Join(names, ","), "NumberOfMessagesReceived") {
		t.Errorf("ListMetrics = %v", names)
	}
	_, err = cw.GetMetricStatisticsWithContext(ctx, &cwv1.GetMetricStatisticsInput{Namespace: awsv1.String("AWS/SQS"),
		MetricName: awsv1.String("NumberOfMessagesSent"), StartTime: awsv1.Time(epoch.Add(-48 * time.Hour)), EndTime: awsv1.Time(epoch),
		Period: awsv1.Int64(60), Statistics: []*string{awsv1.String("Sum")}})
	wantCWError(t, err, "InvalidParameterCombination", "You have requested up to 2880 datapoints, which exceeds the limit of 1440. "+
		"You may reduce the datapoints requested by increasing Period, or decreasing the time range.", 400)
	md, err := cw.GetMetricDataWithContext(ctx, &cwv1.GetMetricDataInput{StartTime: awsv1.Time(epoch.Add(-time.Hour)), EndTime: awsv1.Time(epoch.Add(time.Hour)),
		MetricDataQueries: []*cwv1.MetricDataQuery{{Id: awsv1.String("received"), MetricStat: &cwv1.MetricStat{
			Metric: &cwv1.Metric{Namespace: awsv1.String("AWS/SQS"), MetricName: awsv1.String("NumberOfMessagesReceived"),
				Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("inbox")}}},
			Period: awsv1.Int64(60), Stat: awsv1.String("Sum")}}}})
	if err != nil || len(md.MetricDataResults) != 1 || *md.MetricDataResults[0].StatusCode != "Complete" ||
		len(md.MetricDataResults[0].Values) == 0 || *md.MetricDataResults[0].Label != "NumberOfMessagesReceived" {
		t.Errorf("GetMetricData: %v %v", md, err)
	}
	_, err = cw.PutMetricDataWithContext(ctx, &cwv1.PutMetricDataInput{Namespace: awsv1.String("Custom"),
		MetricData: []*cwv1.MetricDatum{{MetricName: awsv1.String("m"), Value: awsv1.Float64(1)}}})
	wantCWError(t, err, "InvalidAction", "", 400)
}

// The Debian AWS CLI 2.9 speaks the query protocol to CloudWatch.
func TestCloudWatchDebianCLI(t *testing.T) {
	t.Parallel()
	awsCLITool.need(t)
	f := start(t)
	topic := f.createTopic(t, "cli-alerts", nil)
	if _, stderr, err := awsCLI(t, f, "cloudwatch", "put-metric-alarm", "--alarm-name", "cli-alarm",
		"--namespace", "AWS/SQS", "--metric-name", "ApproximateNumberOfMessagesVisible", "--dimensions", "Name=QueueName,Value=jobs-dlq",
		"--statistic", "Maximum", "--period", "300", "--evaluation-periods", "2", "--datapoints-to-alarm", "1", "--threshold", "0",
		"--comparison-operator", "GreaterThanThreshold", "--treat-missing-data", "notBreaching", "--alarm-actions", topic,
		"--tags", "Key=team,Value=ops"); err != nil {
		t.Fatalf("put-metric-alarm: %v\n%s", err, stderr)
	}
	out, stderr, err := awsCLI(t, f, "cloudwatch", "describe-alarms", "--alarm-names", "cli-alarm")
	if err != nil {
		t.Fatalf("describe-alarms: %v\n%s", err, stderr)
	}
	var desc struct {
		MetricAlarms []struct {
			AlarmName, StateValue, StateReason, ComparisonOperator, TreatMissingData string
			Threshold                                                                float64
			Period, EvaluationPeriods, DatapointsToAlarm                             int
			AlarmActions                                                             []string
			Dimensions                                                               []struct{ Name, Value string }
			StateUpdatedTimestamp                                                    string
		}
		CompositeAlarms []any
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil || len(desc.MetricAlarms) != 1 {
		t.Fatalf("describe-alarms said %s (%v)", out, err)
	}
	a := desc.MetricAlarms[0]
	if a.StateValue != "OK" || a.Period != 300 || a.DatapointsToAlarm != 1 || a.Threshold != 0 || a.AlarmActions[0] != topic ||
		a.Dimensions[0].Value != "jobs-dlq" || a.TreatMissingData != "notBreaching" || desc.CompositeAlarms == nil {
		t.Errorf("describe-alarms said %s", out)
	}
	if _, stderr, err := awsCLI(t, f, "cloudwatch", "set-alarm-state", "--alarm-name", "cli-alarm", "--state-value", "ALARM",
		"--state-reason", "drill"); err != nil {
		t.Fatalf("set-alarm-state: %v\n%s", err, stderr)
	}
	out, stderr, err = awsCLI(t, f, "cloudwatch", "describe-alarm-history", "--alarm-name", "cli-alarm", "--history-item-type", "StateUpdate")
	if err != nil || !strings.Contains(out, "Alarm updated from OK to ALARM") {
		t.Errorf("describe-alarm-history said %s (%v)\n%s", out, err, stderr)
	}
	out, stderr, err = awsCLI(t, f, "cloudwatch", "list-tags-for-resource", "--resource-arn", "arn:aws:cloudwatch:us-east-1:000000000000:alarm:cli-alarm")
	if err != nil || !strings.Contains(out, `"Key": "team"`) {
		t.Errorf("list-tags-for-resource said %s (%v)\n%s", out, err, stderr)
	}
	out, stderr, err = awsCLI(t, f, "cloudwatch", "get-metric-statistics", "--namespace", "AWS/SQS", "--metric-name", "NumberOfMessagesSent",
		"--start-time", "2026-01-02T00:00:00Z", "--end-time", "2026-01-02T06:00:00Z", "--period", "3600", "--statistics", "Sum")
	if err != nil || !strings.Contains(out, `"Label": "NumberOfMessagesSent"`) {
		t.Errorf("get-metric-statistics said %s (%v)\n%s", out, err, stderr)
	}
	_, stderr, err = awsCLI(t, f, "cloudwatch", "delete-alarms", "--alarm-names", "no-such-alarm")
	if err == nil || !strings.Contains(stderr, "ResourceNotFound") {
		t.Errorf("delete-alarms of a missing alarm: %v, %q", err, stderr)
	}
	if _, stderr, err := awsCLI(t, f, "cloudwatch", "delete-alarms", "--alarm-names", "cli-alarm"); err != nil {
		t.Fatalf("delete-alarms: %v\n%s", err, stderr)
	}
}

// Alarms, their state and their history survive a restart on disk.
func TestCloudWatchAlarmsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)
	f := start(t, onDisk(dir))
	cw := cwClient(f.srv.URL())
	if _, err := cw.PutMetricAlarmWithContext(ctx, &cwv1.PutMetricAlarmInput{
		AlarmName: awsv1.String("kept"), Namespace: awsv1.String("AWS/SQS"), MetricName: awsv1.String("NumberOfMessagesSent"),
		Dimensions: []*cwv1.Dimension{{Name: awsv1.String("QueueName"), Value: awsv1.String("q")}}, Statistic: awsv1.String("Sum"),
		Period: awsv1.Int64(60), EvaluationPeriods: awsv1.Int64(1), Threshold: awsv1.Float64(2.5),
		ComparisonOperator: awsv1.String("GreaterThanThreshold"), Tags: []*cwv1.Tag{{Key: awsv1.String("k"), Value: awsv1.String("v")}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.SetAlarmStateWithContext(ctx, &cwv1.SetAlarmStateInput{AlarmName: awsv1.String("kept"), StateValue: awsv1.String("ALARM"),
		StateReason: awsv1.String("drill")}); err != nil {
		t.Fatal(err)
	}
	stop(t, f)

	f2 := start(t, onDisk(dir))
	cw2 := cwClient(f2.srv.URL())
	desc, err := cw2.DescribeAlarmsWithContext(ctx, &cwv1.DescribeAlarmsInput{})
	if err != nil || len(desc.MetricAlarms) != 1 {
		t.Fatalf("after restart: %v %v", desc, err)
	}
	a := desc.MetricAlarms[0]
	if *a.StateValue != "ALARM" || *a.StateReason != "drill" || *a.Threshold != 2.5 {
		t.Errorf("after restart: %v", a)
	}
	hist, err := cw2.DescribeAlarmHistoryWithContext(ctx, &cwv1.DescribeAlarmHistoryInput{AlarmName: awsv1.String("kept")})
	if err != nil || len(hist.AlarmHistoryItems) != 2 {
		t.Errorf("history after restart: %v %v", hist, err)
	}
	tags, err := cw2.ListTagsForResourceWithContext(ctx, &cwv1.ListTagsForResourceInput{ResourceARN: a.AlarmArn})
	if err != nil || len(tags.Tags) != 1 || *tags.Tags[0].Key != "k" {
		t.Errorf("tags after restart: %v %v", tags, err)
	}
}

// aws-sdk-go-v2's CloudWatch client speaks Smithy RPC v2 CBOR.
func TestCloudWatchCBOR(t *testing.T) {
	t.Parallel()
	f := start(t)
	ctx := ctxT(t)
	cw := cwsdk.New(cwsdk.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(f.srv.URL()),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkHTTP,
	})
	topic := f.createTopic(t, "cbor-alerts", nil)
	_, err := cw.PutMetricAlarm(ctx, &cwsdk.PutMetricAlarmInput{
		AlarmName: aws.String("cbor"), Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("q")}},
		Statistic:  cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(0.5),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold, AlarmActions: []string{topic},
	})
	if err != nil {
		t.Fatalf("PutMetricAlarm: %v", err)
	}
	desc, err := cw.DescribeAlarms(ctx, &cwsdk.DescribeAlarmsInput{AlarmNames: []string{"cbor"}})
	if err != nil || len(desc.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms: %v %v", desc, err)
	}
	a := desc.MetricAlarms[0]
	if a.StateValue != cwtypes.StateValueInsufficientData || aws.ToFloat64(a.Threshold) != 0.5 ||
		!aws.ToTime(a.AlarmConfigurationUpdatedTimestamp).Equal(epoch) || aws.ToString(a.AlarmArn) != "arn:aws:cloudwatch:us-east-1:000000000000:alarm:cbor" {
		t.Errorf("alarm = %+v", a)
	}
	_, err = cw.SetAlarmState(ctx, &cwsdk.SetAlarmStateInput{AlarmName: aws.String("nope"), StateValue: cwtypes.StateValueOk, StateReason: aws.String("x")})
	var nf *cwtypes.ResourceNotFound
	if !errors.As(err, &nf) {
		t.Errorf("SetAlarmState of a missing alarm: %v", err)
	}
	stats, err := cw.GetMetricStatistics(ctx, &cwsdk.GetMetricStatisticsInput{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent"),
		StartTime: aws.Time(epoch.Add(-time.Hour)), EndTime: aws.Time(epoch), Period: aws.Int32(60), Statistics: []cwtypes.Statistic{cwtypes.StatisticSum}})
	if err != nil || aws.ToString(stats.Label) != "NumberOfMessagesSent" {
		t.Errorf("GetMetricStatistics: %v %v", stats, err)
	}
}

// TestCloudWatchJSON: CloudWatch over AWS JSON 1.0, as the JavaScript
// SDK v3 sends it by default (X-Amz-Target GraniteServiceVersion20100801),
// with timestamps as epoch seconds, doubles as numbers and the
// query-compatible error header.
func TestCloudWatchJSON(t *testing.T) {
	t.Parallel()
	f := start(t)
	cw := func(action, body string) rawResponse {
		t.Helper()
		return f.postTarget(t, "GraniteServiceVersion20100801."+action, body)
	}
	url := f.createQueue(t, "jq", nil)
	for range 3 {
		if _, err := f.json.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
			t.Fatal(err)
		}
	}
	f.clk.Advance(time.Minute)

	from, to := epoch.Add(-time.Hour).Unix(), epoch.Add(time.Hour).Unix()
	st := cw("GetMetricStatistics", fmt.Sprintf(`{"Namespace":"AWS/SQS","MetricName":"NumberOfMessagesSent",
		"Dimensions":[{"Name":"QueueName","Value":"jq"}],"StartTime":%d,"EndTime":%d.5,"Period":60,"Statistics":["Sum"]}`, from, to))
	var stats struct {
		Label      string
		Datapoints []struct {
			Timestamp float64
			Sum       float64
			Unit      string
		}
	}
	if st.Status != 200 || st.Header.Get("Content-Type") != "application/x-amz-json-1.0" || json.Unmarshal([]byte(st.Body), &stats) != nil ||
		stats.Label != "NumberOfMessagesSent" || len(stats.Datapoints) != 1 || stats.Datapoints[0].Sum != 3 ||
		stats.Datapoints[0].Timestamp != float64(epoch.Truncate(time.Minute).Unix()) || stats.Datapoints[0].Unit != "Count" {
		t.Fatalf("GetMetricStatistics: %d %s", st.Status, st.Body)
	}

	if r := cw("PutMetricAlarm", `{"AlarmName":"j","Namespace":"AWS/SQS","MetricName":"NumberOfMessagesSent",
		"Dimensions":[{"Name":"QueueName","Value":"jq"}],"Statistic":"Sum","Period":60,"EvaluationPeriods":1,
		"Threshold":2.5,"ComparisonOperator":"GreaterThanThreshold"}`); r.Status != 200 || strings.TrimSpace(r.Body) != "{}" {
		t.Fatalf("PutMetricAlarm: %d %q", r.Status, r.Body)
	}
	d := cw("DescribeAlarms", `{"AlarmNames":["j"]}`)
	var desc struct {
		MetricAlarms []struct {
			AlarmArn                           string
			Threshold                          float64
			AlarmConfigurationUpdatedTimestamp float64
			Dimensions                         []struct{ Name, Value string }
		}
	}
	if d.Status != 200 || json.Unmarshal([]byte(d.Body), &desc) != nil || len(desc.MetricAlarms) != 1 ||
		desc.MetricAlarms[0].AlarmArn != "arn:aws:cloudwatch:us-east-1:000000000000:alarm:j" || desc.MetricAlarms[0].Threshold != 2.5 ||
		desc.MetricAlarms[0].AlarmConfigurationUpdatedTimestamp != float64(epoch.Add(time.Minute).Unix()) ||
		len(desc.MetricAlarms[0].Dimensions) != 1 || desc.MetricAlarms[0].Dimensions[0].Value != "jq" {
		t.Fatalf("DescribeAlarms: %d %s", d.Status, d.Body)
	}

	for _, tc := range []struct {
		name, action, body string
		status             int
		queryError, typ    string
	}{
		{"missing alarm", "SetAlarmState", `{"AlarmName":"nope","StateValue":"OK","StateReason":"x"}`, 404,
			"ResourceNotFound;Sender", "com.amazonaws.cloudwatch.v2010_08_01#ResourceNotFound"},
		{"validation", "PutMetricAlarm", `{"AlarmName":"v"}`, 400,
			"ValidationError;Sender", "com.amazonaws.cloudwatch.v2010_08_01#ValidationError"},
		{"not a number", "GetMetricStatistics", `{"Namespace":"AWS/SQS","MetricName":"x","StartTime":"soon"}`, 400,
			"SerializationException;Sender", "com.amazon.coral.service#SerializationException"},
		{"unsupported action", "PutMetricData", `{"Namespace":"App","MetricData":[]}`, 400,
			"UnknownOperationException;Sender", "com.amazon.coral.service#UnknownOperationException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cw(tc.action, tc.body)
			var e struct {
				Type string `json:"__type"`
			}
			if r.Status != tc.status || r.Header.Get("X-Amzn-Query-Error") != tc.queryError ||
				json.Unmarshal([]byte(r.Body), &e) != nil || e.Type != tc.typ {
				t.Errorf("%d %q %s", r.Status, r.Header.Get("X-Amzn-Query-Error"), r.Body)
			}
		})
	}
}
