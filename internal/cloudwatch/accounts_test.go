package cloudwatch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/protocol"
)

// Each account reads its own series only, of the request's region:
// ListMetrics, GetMetricStatistics and GetMetricData of the same queue
// name give each account its own figures, a queue of one account is
// nothing to another, and an alarm evaluates its own account's metric.
func TestMetricsPerAccount(t *testing.T) {
	t.Parallel()
	const other = "222222222222"
	r := newRig(t)
	own := context.Background() // the configured account
	theirs := protocol.WithInfo(own, &protocol.RequestInfo{Account: other})
	r.record("q", "NumberOfMessagesSent", 1, 2)
	r.recordIn(other, "q", "NumberOfMessagesSent", 1, 7)
	r.recordIn(other, "only-theirs", "ApproximateNumberOfMessagesVisible", 1, 5)
	// A queue of the configured account in another region (region.Owner).
	west := protocol.WithInfo(own, &protocol.RequestInfo{Region: "us-west-2"})
	r.recordIn(ownAccount+"@us-west-2", "q", "NumberOfMessagesSent", 1, 9)
	r.recordIn(other, "only-theirs", "ApproximateNumberOfMessagesVisible", 4, 5)
	r.clk.Set(t0.Add(5*time.Minute + 7*time.Second))

	list := func(ctx context.Context, in *ListMetricsInput) []string {
		t.Helper()
		out, err := r.svc.listMetrics(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range out.Metrics {
			got = append(got, m.MetricName+"/"+m.Dimensions[0].Value)
		}
		return got
	}
	for _, c := range []struct {
		who  string
		ctx  context.Context
		in   ListMetricsInput
		want []string
	}{
		{"the configured account", own, ListMetricsInput{}, []string{"NumberOfMessagesSent/q"}},
		{"the other account", theirs, ListMetricsInput{}, []string{"ApproximateNumberOfMessagesVisible/only-theirs", "NumberOfMessagesSent/q"}},
		{"the other account, its own as owner", theirs, ListMetricsInput{OwningAccount: other}, []string{"ApproximateNumberOfMessagesVisible/only-theirs", "NumberOfMessagesSent/q"}},
		{"the configured account, the other as owner", own, ListMetricsInput{OwningAccount: other}, nil},
		{"the configured account, recently active", own, ListMetricsInput{RecentlyActive: "PT3H"}, []string{"NumberOfMessagesSent/q"}},
		{"the configured account in us-west-2", west, ListMetricsInput{}, []string{"NumberOfMessagesSent/q"}},
	} {
		if got := list(c.ctx, &c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s lists %v, want %v", c.who, got, c.want)
		}
	}

	sum := func(ctx context.Context, metric, queue string) []float64 {
		t.Helper()
		out, err := r.svc.getMetricStatistics(ctx, &GetMetricStatisticsInput{Namespace: "AWS/SQS", MetricName: metric,
			Dimensions: []Dimension{{Name: "QueueName", Value: queue}}, StartTime: t0, EndTime: t0.Add(2 * time.Minute),
			Period: ptr[int32](60), Statistics: []string{"Sum"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []float64
		for _, d := range out.Datapoints {
			got = append(got, *d.Sum)
		}
		return got
	}
	for _, c := range []struct {
		who           string
		ctx           context.Context
		metric, queue string
		want          []float64
	}{
		{"the configured account", own, "NumberOfMessagesSent", "q", []float64{2}},
		{"the other account", theirs, "NumberOfMessagesSent", "q", []float64{7}},
		{"the other account", theirs, "ApproximateNumberOfMessagesVisible", "only-theirs", []float64{5}},
		{"the configured account", own, "ApproximateNumberOfMessagesVisible", "only-theirs", nil},
		{"the configured account in us-west-2", west, "NumberOfMessagesSent", "q", []float64{9}},
	} {
		if got := sum(c.ctx, c.metric, c.queue); !slices.Equal(got, c.want) {
			t.Errorf("%s reads %s of %s: %v, want %v", c.who, c.metric, c.queue, got, c.want)
		}
	}

	data := func(ctx context.Context, accountID string) []float64 {
		t.Helper()
		out, err := r.svc.getMetricData(ctx, &GetMetricDataInput{StartTime: t0, EndTime: t0.Add(2 * time.Minute),
			MetricDataQueries: []MetricDataQuery{{Id: "m", AccountId: accountID, MetricStat: &MetricStat{
				Metric: &Metric{Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent", Dimensions: []Dimension{{Name: "QueueName", Value: "q"}}},
				Period: ptr[int32](60), Stat: "Sum"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.MetricDataResults[0].Values
	}
	if got := data(own, ""); !slices.Equal(got, []float64{2}) {
		t.Errorf("GetMetricData of the configured account: %v, want [2]", got)
	}
	if got := data(theirs, ""); !slices.Equal(got, []float64{7}) {
		t.Errorf("GetMetricData of the other account: %v, want [7]", got)
	}
	if got := data(theirs, other); !slices.Equal(got, []float64{7}) {
		t.Errorf("GetMetricData of the other account naming itself: %v, want [7]", got)
	}
	if got := data(own, other); len(got) != 0 {
		t.Errorf("GetMetricData naming another account: %v, want no data", got)
	}

	// The same alarm in both accounts: only the other account's queue has
	// messages.
	for _, ctx := range []context.Context{own, theirs} {
		in := input("visible")
		in.AlarmActions, in.OKActions = nil, nil
		in.MetricName = "ApproximateNumberOfMessagesVisible"
		in.Dimensions = []Dimension{{Name: "QueueName", Value: "only-theirs"}}
		if _, err := r.svc.putMetricAlarm(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	r.svc.evaluate(own, nil, t0.Add(5*time.Minute+7*time.Second))
	for _, c := range []struct {
		who, key, want string
	}{
		{"the configured account's", r.svc.alarmKey(ownAccount, "visible"), stateInsufficient},
		{"the other account's", r.svc.alarmKey(other, "visible"), stateAlarm},
	} {
		if a := r.alarm(c.key); a.State != c.want {
			t.Errorf("%s alarm is %s (%s), want %s", c.who, a.State, a.StateReason, c.want)
		}
	}
}
