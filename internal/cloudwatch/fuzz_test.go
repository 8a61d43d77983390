package cloudwatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/protocol"
)

// FuzzPutMetricAlarm: any request either makes an alarm that evaluates
// and describes cleanly, or is refused with an AWS error; never a panic.
func FuzzPutMetricAlarm(f *testing.F) {
	f.Add("a", "Sum", "", int32(60), int32(1), int32(1), 1.0, "GreaterThanThreshold", "missing", topicARN, "QueueName", "q")
	f.Add("", "Median", "p99.5", int32(45), int32(0), int32(3), -0.5, "LessThanLowerThreshold", "zero", "arn:aws:sns", "", "")
	f.Add("b", "", "p50", int32(3600), int32(168), int32(2), 1e308, "LessThanOrEqualToThreshold", "breaching", "arn:aws:sns:us-east-1:000000000000:t:x", "A", "\x00")
	f.Fuzz(func(t *testing.T, name, stat, ext string, period, n, m int32, threshold float64, op, treat, action, dimName, dimValue string) {
		r := newRig(t)
		in := &PutMetricAlarmInput{AlarmName: name, Namespace: "AWS/SQS", MetricName: "NumberOfMessagesReceived",
			Statistic: stat, ExtendedStatistic: ext, Period: &period, EvaluationPeriods: &n, DatapointsToAlarm: &m,
			Threshold: &threshold, ComparisonOperator: op, TreatMissingData: treat, AlarmActions: []string{action},
			Dimensions: []Dimension{{Name: dimName, Value: dimValue}}}
		ctx := context.Background()
		if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
			var e *protocol.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("refusal is not an AWS sender error: %v", err)
			}
			return
		}
		r.record(dimValue, "NumberOfMessagesReceived", 1, 5)
		r.svc.evaluate(ctx, nil, t0.Add(2*time.Minute))
		if _, err := r.svc.describeAlarms(ctx, &DescribeAlarmsInput{}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSetAlarmState: any StateReasonData is stored only if it is a JSON
// object, and history stays valid JSON.
func FuzzSetAlarmState(f *testing.F) {
	f.Add("ALARM", "why", `{"a":1}`)
	f.Add("OK", "", `[1,2`)
	f.Add("BAD", "x", ``)
	f.Fuzz(func(t *testing.T, state, reason, data string) {
		r := newRig(t)
		ctx := context.Background()
		if _, err := r.svc.putMetricAlarm(ctx, input("a")); err != nil {
			t.Fatal(err)
		}
		_, err := r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "a", StateValue: state, StateReason: &reason, StateReasonData: &data})
		if err != nil {
			var e *protocol.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("refusal is not an AWS sender error: %v", err)
			}
			return
		}
		out, err := r.svc.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range out.AlarmHistoryItems {
			if !jsonValid(h.HistoryData) {
				t.Fatalf("history data %q is not JSON", h.HistoryData)
			}
		}
	})
}
