package cloudwatch

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPutMetricAlarmValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	long := strings.Repeat("a", 256)
	for _, tc := range []struct {
		name    string
		mod     func(*PutMetricAlarmInput)
		code    string
		message string
	}{
		{"no name", func(in *PutMetricAlarmInput) { in.AlarmName = "" }, "ValidationError",
			"1 validation error detected: Value null at 'alarmName' failed to satisfy constraint: Member must not be null"},
		{"long name", func(in *PutMetricAlarmInput) { in.AlarmName = long }, "ValidationError",
			"1 validation error detected: Value '" + long + "' at 'alarmName' failed to satisfy constraint: Member must have length less than or equal to 255"},
		{"unknown statistic", func(in *PutMetricAlarmInput) { in.Statistic = "Median" }, "ValidationError",
			"1 validation error detected: Value 'Median' at 'statistic' failed to satisfy constraint: Member must satisfy enum value set: [SampleCount, Average, Sum, Minimum, Maximum]"},
		{"two errors", func(in *PutMetricAlarmInput) { in.Statistic = "Median"; in.EvaluationPeriods = ptr[int32](0) }, "ValidationError",
			"2 validation errors detected: Value 'Median' at 'statistic' failed to satisfy constraint: Member must satisfy enum value set: " +
				"[SampleCount, Average, Sum, Minimum, Maximum]; Value '0' at 'evaluationPeriods' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		{"no evaluation periods", func(in *PutMetricAlarmInput) { in.EvaluationPeriods = nil }, "ValidationError",
			"1 validation error detected: Value null at 'evaluationPeriods' failed to satisfy constraint: Member must not be null"},
		{"zero period", func(in *PutMetricAlarmInput) { in.Period = ptr[int32](0) }, "ValidationError",
			"1 validation error detected: Value '0' at 'period' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		{"period not a minute multiple", func(in *PutMetricAlarmInput) { in.Period = ptr[int32](45) }, "ValidationError",
			"Period must be 10, 20, 30 or a multiple of 60"},
		{"bad unit", func(in *PutMetricAlarmInput) { in.Unit = "Parsecs" }, "ValidationError", ""},
		{"bad operator", func(in *PutMetricAlarmInput) { in.ComparisonOperator = "Equal" }, "ValidationError", ""},
		{"band operator", func(in *PutMetricAlarmInput) { in.ComparisonOperator = "GreaterThanUpperThreshold" }, "ValidationError",
			"Comparison operators for ranges require ThresholdMetricId to be set"},
		{"metric math", func(in *PutMetricAlarmInput) { in.Metrics = []MetricDataQuery{{Id: "m1", Expression: "m2*2"}} }, "ValidationError", ""},
		{"M greater than N", func(in *PutMetricAlarmInput) { in.DatapointsToAlarm = ptr[int32](2) }, "ValidationError",
			"DatapointsToAlarm must be less than or equal to EvaluationPeriods"},
		{"over a day", func(in *PutMetricAlarmInput) { in.Period = ptr[int32](600); in.EvaluationPeriods = ptr[int32](145) }, "ValidationError",
			"Metrics cannot be checked across more than a day (EvaluationPeriods * Period must be <= 86400)"},
		{"bad treat missing", func(in *PutMetricAlarmInput) { in.TreatMissingData = "zero" }, "ValidationError",
			"Option zero is not supported. Supported options for parameter TreatMissingData are: [missing, ignore, breaching, notBreaching]."},
		{"both statistics", func(in *PutMetricAlarmInput) { in.ExtendedStatistic = "p99" }, "ValidationError", ""},
		{"no statistic", func(in *PutMetricAlarmInput) { in.Statistic = "" }, "ValidationError", ""},
		{"bad percentile", func(in *PutMetricAlarmInput) { in.Statistic = ""; in.ExtendedStatistic = "p101" }, "InvalidParameterValue", ""},
		{"no threshold", func(in *PutMetricAlarmInput) { in.Threshold = nil }, "ValidationError", ""},
		{"threshold not a number", func(in *PutMetricAlarmInput) { in.Threshold = ptr(math.NaN()) }, "InvalidParameterValue",
			"The value NaN for parameter Threshold is invalid."},
		{"dimension twice", func(in *PutMetricAlarmInput) {
			in.Dimensions = append(in.Dimensions, Dimension{Name: "QueueName", Value: "r"})
		}, "InvalidParameterValue", "No Metric may specify the same dimension name twice."},
		{"not an arn", func(in *PutMetricAlarmInput) { in.AlarmActions = []string{"alerts"} }, "ValidationError", "Invalid arn syntax: alerts"},
		{"auto scaling action", func(in *PutMetricAlarmInput) {
			in.AlarmActions = []string{"arn:aws:autoscaling:us-east-1:000000000000:scalingPolicy:x"}
		}, "ValidationError", ""},
		{"topic of another region", func(in *PutMetricAlarmInput) {
			in.OKActions = []string{"arn:aws:sns:eu-west-1:000000000000:alerts"}
		}, "ValidationError", ""},
		{"six actions", func(in *PutMetricAlarmInput) {
			in.AlarmActions = []string{topicARN + "1", topicARN + "2", topicARN + "3", topicARN + "4", topicARN + "5", topicARN + "6"}
		}, "ValidationError", ""},
		{"empty tag key", func(in *PutMetricAlarmInput) { in.Tags = []Tag{{Value: "v"}} }, "ValidationError", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input("v")
			tc.mod(in)
			_, err := r.svc.putMetricAlarm(context.Background(), in)
			wantError(t, err, tc.code, tc.message)
		})
	}
	if n := len(r.svc.alarms); n != 0 {
		t.Errorf("%d alarms were created by bad requests", n)
	}
}

func TestOtherActionsValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.svc.putMetricAlarm(ctx, input("a")); err != nil {
		t.Fatal(err)
	}
	_, err := r.svc.describeAlarms(ctx, &DescribeAlarmsInput{MaxRecords: ptr[int32](101)})
	wantError(t, err, "ValidationError", "1 validation error detected: Value '101' at 'maxRecords' failed to satisfy constraint: Member must have value less than or equal to 100")
	_, err = r.svc.describeAlarms(ctx, &DescribeAlarmsInput{NextToken: "!!"})
	wantError(t, err, "InvalidNextToken", "")
	_, err = r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "a", StateValue: "OK"})
	wantError(t, err, "ValidationError", "1 validation error detected: Value null at 'stateReason' failed to satisfy constraint: Member must not be null")
	_, err = r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "a", StateValue: "OK", StateReason: ptr("x"), StateReasonData: ptr("[1,")})
	wantError(t, err, "InvalidFormat", "")
	_, err = r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "b", StateValue: "OK", StateReason: ptr("x")})
	wantError(t, err, "ResourceNotFound", "")
	_, err = r.svc.deleteAlarms(ctx, &AlarmNamesInput{AlarmNames: []string{"a", "b"}})
	wantError(t, err, "ResourceNotFound", "")
	if _, ok := r.svc.alarms["a"]; !ok {
		t.Error("a failed DeleteAlarms deleted an alarm")
	}
	_, err = r.svc.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{HistoryItemType: "Everything"})
	wantError(t, err, "ValidationError", "")
	_, err = r.svc.listTagsForResource(ctx, &ResourceARNInput{ResourceARN: "arn:aws:cloudwatch:us-east-1:000000000000:alarm:b"})
	wantError(t, err, "ResourceNotFoundException", "")

	gms := func(mod func(*GetMetricStatisticsInput)) error {
		in := &GetMetricStatisticsInput{Namespace: "AWS/SQS", MetricName: "NumberOfMessagesReceived", StartTime: t0.Add(-time.Hour),
			EndTime: t0.Add(time.Hour), Period: ptr[int32](60), Statistics: []string{"Sum"}}
		mod(in)
		_, err := r.svc.getMetricStatistics(ctx, in)
		return err
	}
	for _, tc := range []struct {
		name, code, message string
		mod                 func(*GetMetricStatisticsInput)
	}{
		{"no period", "MissingParameter", "The parameter Period is required.", func(in *GetMetricStatisticsInput) { in.Period = nil }},
		{"bad period", "InvalidParameterValue", "The parameter Period must be 1, 5, 10, 30, 60, or any multiple of 60.",
			func(in *GetMetricStatisticsInput) { in.Period = ptr[int32](61) }},
		{"no statistics", "MissingParameter", "", func(in *GetMetricStatisticsInput) { in.Statistics = nil }},
		{"unknown statistic", "ValidationError", "", func(in *GetMetricStatisticsInput) { in.Statistics = []string{"Median"} }},
		{"start after end", "InvalidParameterValue", "The parameter StartTime must be less than the parameter EndTime.",
			func(in *GetMetricStatisticsInput) { in.StartTime, in.EndTime = in.EndTime, in.StartTime }},
		{"no start", "MissingParameter", "The parameter StartTime is required.", func(in *GetMetricStatisticsInput) { in.StartTime = time.Time{} }},
		{"percentile", "InvalidParameterCombination", "", func(in *GetMetricStatisticsInput) { in.ExtendedStatistics = []string{"p99"} }},
		{"bad percentile", "InvalidParameterValue", "", func(in *GetMetricStatisticsInput) { in.ExtendedStatistics = []string{"median"} }},
		{"too many datapoints", "InvalidParameterCombination", "You have requested up to 1441 datapoints, which exceeds the limit of 1440. " +
			"You may reduce the datapoints requested by increasing Period, or decreasing the time range.",
			func(in *GetMetricStatisticsInput) {
				in.EndTime = t0
				in.StartTime = t0.Add(-24*time.Hour - time.Minute)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantError(t, gms(tc.mod), tc.code, tc.message) })
	}

	gmd := func(q MetricDataQuery) error {
		_, err := r.svc.getMetricData(ctx, &GetMetricDataInput{StartTime: t0.Add(-time.Hour), EndTime: t0.Add(time.Hour),
			MetricDataQueries: []MetricDataQuery{q}})
		return err
	}
	stat := &MetricStat{Metric: &Metric{Namespace: "AWS/SQS", MetricName: "NumberOfMessagesReceived"}, Period: ptr[int32](60), Stat: "Sum"}
	wantError(t, gmd(MetricDataQuery{Id: "Upper", MetricStat: stat}), "ValidationError", "")
	wantError(t, gmd(MetricDataQuery{Id: "e1", Expression: "SUM(METRICS())"}), "ValidationError", "")
	wantError(t, gmd(MetricDataQuery{Id: "m1"}), "ValidationError", "")
	bad := *stat
	bad.Stat = "p90"
	wantError(t, gmd(MetricDataQuery{Id: "m1", MetricStat: &bad}), "InvalidParameterCombination", "")
	_, err = r.svc.getMetricData(ctx, &GetMetricDataInput{StartTime: t0.Add(-time.Hour), EndTime: t0.Add(time.Hour),
		MetricDataQueries: []MetricDataQuery{{Id: "m1", MetricStat: stat}}, NextToken: encodeToken("7:0")})
	wantError(t, err, "InvalidNextToken", "")
}

func TestFormatDouble(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   float64
		want string
	}{{0, "0.0"}, {1, "1.0"}, {21.5, "21.5"}, {-3, "-3.0"}, {1e7, "1.0E7"}, {1.5e-4, "1.5E-4"}, {123456.25, "123456.25"}} {
		if got := formatDouble(tc.in); got != tc.want {
			t.Errorf("formatDouble(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
