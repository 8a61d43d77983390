package cloudwatch

import (
	"context"
	"encoding/json"
	"github.com/ferrymq/ferry/internal/testwait"
	"strconv"
	"strings"
	"testing"
	"time"
)

// minute m after t0, as a state reason writes it.
func at(m int) string { return t0.Add(time.Duration(m) * time.Minute).Format("02/01/06 15:04:05") }

func TestEvaluation(t *testing.T) {
	t.Parallel()
	type point struct {
		minute int
		values []float64
	}
	// Every case evaluates at minute 5: the last complete period is minute
	// 4, and the evaluation range reaches EvaluationPeriods+2 periods back.
	// The metric is a gauge, whose missing minutes stay missing, unless the
	// case names an SQS counter, whose missing minutes of an active queue
	// read as zeros.
	for _, tc := range []struct {
		name    string
		counter bool // NumberOfMessagesReceived rather than a gauge
		mod     func(*PutMetricAlarmInput)
		initial string // set with SetAlarmState before the data, if any
		points  []point
		want    string
		reason  string
	}{
		{name: "one datapoint over", points: []point{{4, []float64{1, 1, 1}}}, want: stateAlarm,
			reason: "Threshold Crossed: 1 datapoint [3.0 (" + at(4) + ")] was greater than or equal to the threshold (1.0)."},
		{name: "one datapoint under", mod: func(in *PutMetricAlarmInput) { in.Threshold = ptr(5.0) }, points: []point{{4, []float64{1}}}, want: stateOK,
			reason: "Threshold Crossed: 1 datapoint [1.0 (" + at(4) + ")] was not greater than or equal to the threshold (5.0)."},
		{name: "2 of 3 breach", mod: func(in *PutMetricAlarmInput) {
			in.EvaluationPeriods, in.DatapointsToAlarm, in.Threshold, in.ComparisonOperator = ptr[int32](3), ptr[int32](2), ptr(1.0), "GreaterThanThreshold"
		}, points: []point{{2, []float64{5}}, {3, []float64{0}}, {4, []float64{5}}}, want: stateAlarm,
			reason: "Threshold Crossed: 2 out of the last 3 datapoints [5.0 (" + at(4) + "), 5.0 (" + at(2) + ")] were greater than the threshold (1.0) " +
				"(minimum 2 datapoints for INSUFFICIENT_DATA -> ALARM transition)."},
		{name: "1 of 3 breach, 2 needed", mod: func(in *PutMetricAlarmInput) {
			in.EvaluationPeriods, in.DatapointsToAlarm, in.ComparisonOperator = ptr[int32](3), ptr[int32](2), "GreaterThanThreshold"
		}, points: []point{{2, []float64{5}}, {3, []float64{0}}, {4, []float64{0}}}, want: stateOK,
			reason: "Threshold Crossed: 2 datapoints were not greater than the threshold (1.0). The most recent datapoints which crossed the threshold: " +
				"[0.0 (" + at(4) + "), 0.0 (" + at(3) + "), 5.0 (" + at(2) + ")]."},
		{name: "no data, missing", initial: stateOK, mod: func(in *PutMetricAlarmInput) { in.EvaluationPeriods = ptr[int32](2) }, want: stateInsufficient,
			reason: "Insufficient Data: 2 datapoints were unknown."},
		{name: "no data, ignore keeps the state", initial: stateAlarm, mod: func(in *PutMetricAlarmInput) { in.TreatMissingData = "ignore" },
			want: stateAlarm, reason: "set by hand"},
		{name: "no data, breaching", mod: func(in *PutMetricAlarmInput) { in.EvaluationPeriods = ptr[int32](2); in.TreatMissingData = "breaching" },
			want: stateAlarm, reason: "Threshold Crossed: no datapoints were received for 2 periods and 2 missing datapoints were treated as [Breaching]."},
		{name: "no data, notBreaching", mod: func(in *PutMetricAlarmInput) { in.TreatMissingData = "notBreaching" },
			want: stateOK, reason: "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [NonBreaching]."},
		{name: "looks back past missing periods", mod: func(in *PutMetricAlarmInput) { in.EvaluationPeriods = ptr[int32](2) },
			points: []point{{1, []float64{2}}, {2, []float64{3}}}, want: stateAlarm,
			reason: "Threshold Crossed: 2 out of the last 2 datapoints [3.0 (" + at(2) + "), 2.0 (" + at(1) + ")] were greater than or equal to the threshold (1.0) " +
				"(minimum 2 datapoints for INSUFFICIENT_DATA -> ALARM transition)."},
		{name: "missing filled as breaching", mod: func(in *PutMetricAlarmInput) { in.EvaluationPeriods = ptr[int32](3); in.TreatMissingData = "breaching" },
			points: []point{{4, []float64{1}}}, want: stateAlarm},
		{name: "missing filled as not breaching", mod: func(in *PutMetricAlarmInput) {
			in.EvaluationPeriods, in.DatapointsToAlarm, in.TreatMissingData = ptr[int32](3), ptr[int32](1), "notBreaching"
		}, points: []point{{4, []float64{1}}}, want: stateAlarm},
		{name: "too few real datapoints with missing", mod: func(in *PutMetricAlarmInput) { in.EvaluationPeriods = ptr[int32](3) },
			points: []point{{4, []float64{1}}}, want: stateOK},
		{name: "data older than the range", initial: stateAlarm, points: []point{{1, []float64{9}}}, want: stateInsufficient},
		{name: "another unit sees nothing", mod: func(in *PutMetricAlarmInput) { in.Unit = "Bytes" }, initial: stateOK,
			points: []point{{4, []float64{9}}}, want: stateInsufficient},
		{name: "average", mod: func(in *PutMetricAlarmInput) { in.Statistic = "Average"; in.Threshold = ptr(2.5) },
			points: []point{{4, []float64{2, 4}}}, want: stateAlarm,
			reason: "Threshold Crossed: 1 datapoint [3.0 (" + at(4) + ")] was greater than or equal to the threshold (2.5)."},
		{name: "counter of an active queue reads zero", counter: true, mod: func(in *PutMetricAlarmInput) { in.EvaluationPeriods = ptr[int32](2) },
			points: []point{{1, []float64{2}}, {2, []float64{3}}}, want: stateOK,
			reason: "Threshold Crossed: 2 datapoints were not greater than or equal to the threshold (1.0). The most recent datapoints which crossed the threshold: " +
				"[0.0 (" + at(4) + "), 0.0 (" + at(3) + ")]."},
		{name: "counter over the threshold", counter: true, points: []point{{4, []float64{1}}}, want: stateAlarm,
			reason: "Threshold Crossed: 1 datapoint [1.0 (" + at(4) + ")] was greater than or equal to the threshold (1.0)."},
		{name: "counter of an idle queue is missing", counter: true, initial: stateOK, want: stateInsufficient},
		{name: "five-minute period", mod: func(in *PutMetricAlarmInput) { in.Period = ptr[int32](300); in.Threshold = ptr(3.0) },
			points: []point{{0, []float64{1}}, {3, []float64{2}}}, want: stateAlarm,
			reason: "Threshold Crossed: 1 datapoint [3.0 (" + at(0) + ")] was greater than or equal to the threshold (3.0)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			ctx := context.Background()
			in := input("a")
			in.AlarmActions, in.OKActions = nil, nil
			metric := "NumberOfMessagesReceived"
			if !tc.counter {
				metric = "ApproximateNumberOfMessagesVisible"
			}
			in.MetricName = metric
			if tc.mod != nil {
				tc.mod(in)
			}
			if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
				t.Fatal(err)
			}
			if tc.initial != "" {
				if _, err := r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "a", StateValue: tc.initial, StateReason: ptr("set by hand")}); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tc.points {
				r.record("q", metric, p.minute, p.values...)
			}
			r.svc.evaluate(ctx, nil, t0.Add(5*time.Minute+7*time.Second))
			a := r.alarm("a")
			if a.State != tc.want || tc.reason != "" && a.StateReason != tc.reason {
				t.Errorf("state %s, reason %q\nwant  %s, reason %q", a.State, a.StateReason, tc.want, tc.reason)
			}
			if a.StateReason != "set by hand" && !json.Valid([]byte(a.StateReasonData)) {
				t.Errorf("StateReasonData %q is not JSON", a.StateReasonData)
			}
		})
	}
}

func TestStateReasonData(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	in := input("a")
	in.Unit = "Count"
	if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	r.record("q", "NumberOfMessagesReceived", 4, 2, 1.5)
	r.svc.evaluate(ctx, nil, t0.Add(5*time.Minute))
	want := `{"version":"1.0","queryDate":"2026-11-30T03:05:00.000+0000","startDate":"2026-11-30T03:04:00.000+0000","unit":"Count",` +
		`"statistic":"Sum","period":60,"recentDatapoints":[3.5],"threshold":1.0,` +
		`"evaluatedDatapoints":[{"timestamp":"2026-11-30T03:04:00.000+0000","sampleCount":2.0,"value":3.5}]}`
	if got := r.alarm("a").StateReasonData; got != want {
		t.Errorf("StateReasonData\n got %s\nwant %s", got, want)
	}
}

func TestActionsAndNotification(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	in := input("dlq-alarm")
	in.AlarmDescription = ptr("messages in the DLQ")
	in.DatapointsToAlarm = ptr[int32](1)
	if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	if n := r.notifier.notes(); len(n) != 0 {
		t.Fatalf("a new alarm that stays INSUFFICIENT_DATA notified: %v", n)
	}
	r.record("q", "NumberOfMessagesReceived", 4, 3)
	r.svc.evaluate(ctx, nil, t0.Add(5*time.Minute))
	notes := r.notifier.notes()
	if len(notes) != 1 || notes[0].topic != topicARN || notes[0].subject != `ALARM: "dlq-alarm" in US East (N. Virginia)` {
		t.Fatalf("notes = %v", notes)
	}
	want := `{"AlarmName":"dlq-alarm","AlarmDescription":"messages in the DLQ","AWSAccountId":"000000000000",` +
		`"AlarmConfigurationUpdatedTimestamp":"2026-11-30T03:00:30.000+0000","NewStateValue":"ALARM",` +
		`"NewStateReason":"Threshold Crossed: 1 datapoint [3.0 (30/11/26 03:04:00)] was greater than or equal to the threshold (1.0).",` +
		`"StateChangeTime":"2026-11-30T03:05:00.000+0000","Region":"US East (N. Virginia)",` +
		`"AlarmArn":"arn:aws:cloudwatch:us-east-1:000000000000:alarm:dlq-alarm","OldStateValue":"INSUFFICIENT_DATA",` +
		`"OKActions":["` + topicARN + `"],"AlarmActions":["` + topicARN + `"],"InsufficientDataActions":[],` +
		`"Trigger":{"MetricName":"NumberOfMessagesReceived","Namespace":"AWS/SQS","StatisticType":"Statistic","Statistic":"SUM",` +
		`"Unit":null,"Dimensions":[{"value":"q","name":"QueueName"}],"Period":60,"EvaluationPeriods":1,"DatapointsToAlarm":1,` +
		`"ComparisonOperator":"GreaterThanOrEqualToThreshold","Threshold":1.0,"TreatMissingData":"","EvaluateLowSampleCountPercentile":""}}`
	if notes[0].message != want {
		t.Errorf("message\n got %s\nwant %s", notes[0].message, want)
	}

	// The same state again runs nothing; disabled actions run nothing.
	r.svc.evaluate(ctx, nil, t0.Add(5*time.Minute+30*time.Second))
	if _, err := r.svc.disableAlarmActions(ctx, &AlarmNamesInput{AlarmNames: []string{"dlq-alarm", "unknown"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "dlq-alarm", StateValue: stateOK, StateReason: ptr("by hand")}); err != nil {
		t.Fatal(err)
	}
	if n := len(r.notifier.notes()); n != 1 {
		t.Fatalf("%d notes with actions disabled", n)
	}
	if _, err := r.svc.enableAlarmActions(ctx, &AlarmNamesInput{AlarmNames: []string{"dlq-alarm"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "dlq-alarm", StateValue: stateAlarm, StateReason: ptr("by hand")}); err != nil {
		t.Fatal(err)
	}
	if notes := r.notifier.notes(); len(notes) != 2 || !strings.Contains(notes[1].message, `"NewStateReason":"by hand"`) {
		t.Fatalf("notes after SetAlarmState = %v", notes)
	}
	// A failing action is recorded as such.
	r.notifier.fail = errSNS
	if _, err := r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "dlq-alarm", StateValue: stateOK, StateReason: ptr("by hand")}); err != nil {
		t.Fatal(err)
	}
	out, err := r.svc.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{HistoryItemType: "Action", MaxRecords: ptr[int32](1)})
	if err != nil || len(out.AlarmHistoryItems) != 1 || out.NextToken == "" ||
		out.AlarmHistoryItems[0].HistorySummary != "Failed to execute action "+topicARN+`. Received error: "NotFound: Topic does not exist"` {
		t.Fatalf("action history = %+v (%v)", out, err)
	}
}

var errSNS = errorString("NotFound: Topic does not exist")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestHistoryAndRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	in := input("a")
	in.Tags = []Tag{{Key: "team", Value: "ops"}}
	if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	in = input("a")
	in.Threshold = ptr(4.0)
	in.Tags = []Tag{{Key: "ignored", Value: "on update"}}
	if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	r.record("q", "NumberOfMessagesReceived", 4, 5)
	r.svc.evaluate(ctx, nil, t0.Add(5*time.Minute))

	out, err := r.svc.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{AlarmName: ptr("a"), ScanBy: "TimestampAscending"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range out.AlarmHistoryItems {
		got = append(got, h.HistoryItemType+" "+h.HistorySummary)
		if !json.Valid([]byte(h.HistoryData)) || h.AlarmType != "MetricAlarm" {
			t.Errorf("item %+v", h)
		}
	}
	want := []string{`ConfigurationUpdate Alarm "a" created`, `ConfigurationUpdate Alarm "a" updated`,
		"StateUpdate Alarm updated from INSUFFICIENT_DATA to ALARM", "Action Successfully executed action " + topicARN}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var update struct {
		Type                  string
		OriginalUpdatedFields map[string]any
		UpdatedAlarm          map[string]any
	}
	if err := json.Unmarshal([]byte(out.AlarmHistoryItems[1].HistoryData), &update); err != nil ||
		update.Type != "Update" || update.OriginalUpdatedFields["threshold"] != 1.0 || update.UpdatedAlarm["threshold"] != 4.0 {
		t.Errorf("update data = %s", out.AlarmHistoryItems[1].HistoryData)
	}
	var state struct {
		NewState struct{ StateValue, StateReason string }
	}
	if err := json.Unmarshal([]byte(out.AlarmHistoryItems[2].HistoryData), &state); err != nil || state.NewState.StateValue != "ALARM" {
		t.Errorf("state data = %s", out.AlarmHistoryItems[2].HistoryData)
	}

	// Everything survives a restart on the same records.
	r.svc.Close()
	r.start(t)
	a := r.alarm("a")
	if a.State != stateAlarm || a.Threshold != 4 || len(a.Tags) != 1 {
		t.Errorf("after restart: %+v", a)
	}
	out2, err := r.svc.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{})
	if err != nil || len(out2.AlarmHistoryItems) != 4 || out2.AlarmHistoryItems[0].HistoryItemType != "Action" {
		t.Fatalf("history after restart: %+v (%v)", out2, err)
	}
	tags, err := r.svc.listTagsForResource(ctx, &ResourceARNInput{ResourceARN: r.svc.alarmARN(r.svc.account, "a")})
	if err != nil || len(tags.Tags) != 1 || tags.Tags[0] != (Tag{"team", "ops"}) {
		t.Errorf("tags = %v (%v)", tags, err)
	}

	// Deleting keeps the history, with a Delete item.
	if _, err := r.svc.deleteAlarms(ctx, &AlarmNamesInput{AlarmNames: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	out3, _ := r.svc.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{AlarmName: ptr("a"), HistoryItemType: "ConfigurationUpdate"})
	if len(out3.AlarmHistoryItems) != 3 || out3.AlarmHistoryItems[0].HistorySummary != `Alarm "a" deleted` || r.records.count(kindAlarm) != 0 {
		t.Errorf("after delete: %+v", out3)
	}

	// History older than 30 days goes, from memory and from the records.
	if err := r.svc.pruneHistory(ctx, t0.Add(31*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if len(r.svc.history) != 0 || r.records.count(kindHistory) != 0 {
		t.Errorf("%d items (%d records) kept past 30 days", len(r.svc.history), r.records.count(kindHistory))
	}
}

// The minute timer runs while there are alarms, evaluates without being
// asked, and Close stops it.
func TestMinuteTimer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	if r.clk.Pending() != 0 {
		t.Fatalf("%d timers pending without alarms", r.clk.Pending())
	}
	in := input("a")
	in.TreatMissingData = "breaching"
	in.AlarmActions = nil
	if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.putMetricAlarm(ctx, input("b")); err != nil {
		t.Fatal(err)
	}
	if r.clk.Pending() != 1 {
		t.Fatalf("%d timers pending, want the one minute timer", r.clk.Pending())
	}
	if _, err := r.svc.deleteAlarms(ctx, &AlarmNamesInput{AlarmNames: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "a", StateValue: stateOK, StateReason: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Minute)
	testwait.Eventually(t, "the minute's evaluation", func() bool { return r.alarm("a").State == stateAlarm })
	testwait.Pending(t, r.clk, 1) // the next minute's timer
	if r.clk.Pending() != 1 {
		t.Fatalf("%d timers pending, want the next minute's", r.clk.Pending())
	}
	if _, err := r.svc.deleteAlarms(ctx, &AlarmNamesInput{AlarmNames: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if r.clk.Pending() != 0 {
		t.Errorf("%d timers left without alarms", r.clk.Pending())
	}
	if _, err := r.svc.putMetricAlarm(ctx, input("c")); err != nil {
		t.Fatal(err)
	}
	r.svc.Close()
	if r.clk.Pending() != 0 {
		t.Errorf("%d timers left after Close", r.clk.Pending())
	}
}

// An active queue's counters read as zeros in minutes without samples,
// from its first activity on and for 6 hours after its last.
func TestCounterZeros(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	r.record("q", "NumberOfMessagesSent", 1, 2)
	r.clk.Set(t0.Add(5*time.Minute + 20*time.Second))
	get := func(start, end time.Time) []string {
		out, err := r.svc.getMetricStatistics(ctx, &GetMetricStatisticsInput{Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent",
			Dimensions: []Dimension{{Name: "QueueName", Value: "q"}}, StartTime: start, EndTime: end,
			Period: ptr[int32](60), Statistics: []string{"Sum"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range out.Datapoints {
			got = append(got, d.Timestamp.Format("15:04")+"="+strconv.FormatFloat(*d.Sum, 'f', -1, 64))
		}
		return got
	}
	if got := strings.Join(get(t0, t0.Add(time.Hour)), " "); got != "03:01=2 03:02=0 03:03=0 03:04=0" {
		t.Errorf("datapoints %s", got)
	}
	// Gauges and sizes are not filled.
	out, err := r.svc.getMetricStatistics(ctx, &GetMetricStatisticsInput{Namespace: "AWS/SQS", MetricName: "SentMessageSize",
		Dimensions: []Dimension{{Name: "QueueName", Value: "q"}}, StartTime: t0, EndTime: t0.Add(time.Hour),
		Period: ptr[int32](60), Statistics: []string{"Sum"}})
	if err != nil || len(out.Datapoints) != 0 {
		t.Errorf("SentMessageSize: %+v %v", out, err)
	}
	// Six hours after the last activity (03:01) the queue is idle.
	r.clk.Set(t0.Add(8 * time.Hour))
	got := get(t0.Add(6*time.Hour), t0.Add(8*time.Hour))
	if len(got) != 1 || got[0] != "09:00=0" {
		t.Errorf("datapoints around the end of activity: %v", got)
	}
}
