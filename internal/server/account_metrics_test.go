package server_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// Two accounts with auth off, each a 12-digit access key.
const (
	metricsAccountA = "111111111111"
	metricsAccountB = "222222222222"
)

// statWith reads one statistic of a queue's metric over [from, to) as
// the client's account: the datapoints, one per period.
func statWith(t testing.TB, cw *cwsdk.Client, metric, queue string, from, to time.Time, period int32) []cwtypes.Datapoint {
	t.Helper()
	out, err := cw.GetMetricStatistics(ctxT(t), &cwsdk.GetMetricStatisticsInput{
		Namespace: aws.String("AWS/SQS"), MetricName: aws.String(metric),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(queue)}},
		StartTime:  aws.Time(from), EndTime: aws.Time(to), Period: aws.Int32(period),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticSum, cwtypes.StatisticSampleCount, cwtypes.StatisticMaximum},
	})
	if err != nil {
		t.Fatalf("GetMetricStatistics %s: %v", metric, err)
	}
	return out.Datapoints
}

// sums are the Sum of each datapoint.
func sums(dps []cwtypes.Datapoint) []float64 {
	var out []float64
	for _, d := range dps {
		out = append(out, aws.ToFloat64(d.Sum))
	}
	return out
}

// listedQueues are the QueueName values of the SQS metric the client's
// account lists.
func listedQueues(t testing.TB, cw *cwsdk.Client, metric string) []string {
	t.Helper()
	out, err := cw.ListMetrics(ctxT(t), &cwsdk.ListMetricsInput{Namespace: aws.String("AWS/SQS"), MetricName: aws.String(metric)})
	if err != nil {
		t.Fatalf("ListMetrics: %v", err)
	}
	var names []string
	for _, m := range out.Metrics {
		names = append(names, aws.ToString(m.Dimensions[0].Value))
	}
	slices.Sort(names)
	return names
}

// sendN sends n messages to the queue at url.
func sendN(t testing.TB, c *sqs.Client, url string, n int) {
	t.Helper()
	for i := range n {
		if _, err := c.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
			t.Fatalf("send %d to %s: %v", i, url, err)
		}
	}
}

// TestAccountMetrics: each account's queues have metrics of their own,
// counters and gauges, which only that account lists and reads, and which
// its alarms evaluate; the same queue name in two accounts is two series.
// Across a restart the configured account's points read as before (they
// are stored as they always were) and another account's as its own.
func TestAccountMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := start(t, onDisk(dir))
	url := f.srv.URL()
	a := clientsOf(url, metricsAccountA, "x", "us-east-1")
	b := clientsOf(url, metricsAccountB, "x", "us-east-1")

	mine := f.createQueue(t, "mine", nil)
	sendN(t, f.json, mine, 1)
	ordersA := createQueueIn(ctxT(t), t, a, "orders")
	ordersB := createQueueIn(ctxT(t), t, b, "orders")
	onlyB := createQueueIn(ctxT(t), t, b, "only-b")
	sendN(t, a.json, ordersA, 1)
	sendN(t, b.json, ordersB, 3)
	sendN(t, b.json, onlyB, 2)
	// The same alarm in A and B, on their own "orders".
	for _, c := range []authClients{a, b} {
		if _, err := c.cw.PutMetricAlarm(ctxT(t), &cwsdk.PutMetricAlarmInput{
			AlarmName: aws.String("orders-deep"), Namespace: aws.String("AWS/SQS"),
			MetricName: aws.String("ApproximateNumberOfMessagesVisible"),
			Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("orders")}},
			Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1),
			Threshold: aws.Float64(3), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold,
		}); err != nil {
			t.Fatalf("PutMetricAlarm: %v", err)
		}
	}

	m0 := epoch.Truncate(time.Minute)
	m1 := f.tick(t) // samples every account's gauges into m1
	state := func(c authClients) (string, string) {
		out, err := c.cw.DescribeAlarms(ctxT(t), &cwsdk.DescribeAlarmsInput{AlarmNames: []string{"orders-deep"}})
		if err != nil || len(out.MetricAlarms) != 1 {
			t.Fatalf("DescribeAlarms: %v %v", out, err)
		}
		return string(out.MetricAlarms[0].StateValue), aws.ToString(out.MetricAlarms[0].StateReason)
	}
	// The evaluation after m1 sees each account's own queue: B's holds 3
	// messages, A's 1.
	f.clk.Set(m1.Add(time.Minute + 30*time.Second))
	testwait.Eventually(t, "both alarms evaluated on m1", func() bool {
		sa, _ := state(a)
		sb, _ := state(b)
		return sa != "INSUFFICIENT_DATA" && sb != "INSUFFICIENT_DATA"
	})
	wantReason := "Threshold Crossed: 1 datapoint [3.0 (" + m1.Format("02/01/06 15:04:05") + ")] was greater than or equal to the threshold (3.0)."
	if s, reason := state(b); s != "ALARM" || reason != wantReason {
		t.Errorf("B's alarm is %s (%s), want ALARM (%s)", s, reason, wantReason)
	}
	if s, reason := state(a); s != "OK" {
		t.Errorf("A's alarm is %s (%s), want OK: A's queue holds 1 message", s, reason)
	}

	check := func(when, url string) {
		t.Helper()
		a, b, def := clientsOf(url, metricsAccountA, "x", "us-east-1"), clientsOf(url, metricsAccountB, "x", "us-east-1"), cwV2(url)
		from, to := m0.Add(-time.Hour), m1.Add(time.Hour)
		for _, c := range []struct {
			who           string
			cw            *cwsdk.Client
			metric, queue string
			want          []float64
		}{
			{"B", b.cw, "NumberOfMessagesSent", "orders", []float64{3}},
			{"A", a.cw, "NumberOfMessagesSent", "orders", []float64{1}},
			{"B", b.cw, "NumberOfMessagesSent", "only-b", []float64{2}},
			{"A", a.cw, "NumberOfMessagesSent", "only-b", nil},
			{"the configured account", def, "NumberOfMessagesSent", "only-b", nil},
			{"the configured account", def, "NumberOfMessagesSent", "mine", []float64{1}},
			{"B", b.cw, "NumberOfMessagesSent", "mine", nil},
		} {
			if got := sums(statWith(t, c.cw, c.metric, c.queue, from, to, 7200)); !slices.Equal(got, c.want) {
				t.Errorf("%s: %s reads %s of %s as %v, want %v", when, c.who, c.metric, c.queue, got, c.want)
			}
		}
		for _, c := range []struct {
			who   string
			cw    *cwsdk.Client
			queue string
			want  float64
		}{{"B", b.cw, "orders", 3}, {"A", a.cw, "orders", 1}, {"B", b.cw, "only-b", 2}} {
			dps := statWith(t, c.cw, "ApproximateNumberOfMessagesVisible", c.queue, m1, m1.Add(time.Minute), 60)
			if len(dps) != 1 || aws.ToFloat64(dps[0].Maximum) != c.want || aws.ToFloat64(dps[0].SampleCount) != 1 {
				t.Errorf("%s: %s reads the visible messages of %s in m1 as %+v, want one sample of %v", when, c.who, c.queue, dps, c.want)
			}
		}
		if dps := statWith(t, a.cw, "ApproximateNumberOfMessagesVisible", "only-b", m0, m1.Add(time.Hour), 60); len(dps) != 0 {
			t.Errorf("%s: A reads B's gauge %+v", when, dps)
		}
		for _, c := range []struct {
			who  string
			cw   *cwsdk.Client
			want []string
		}{
			{"A", a.cw, []string{"orders"}},
			{"B", b.cw, []string{"only-b", "orders"}},
			{"the configured account", def, []string{"mine"}},
		} {
			for _, metric := range []string{"NumberOfMessagesSent", "ApproximateNumberOfMessagesVisible"} {
				if got := listedQueues(t, c.cw, metric); !slices.Equal(got, c.want) {
					t.Errorf("%s: %s lists %s of %v, want %v", when, c.who, metric, got, c.want)
				}
			}
		}
	}
	check("before the restart", url)

	stop(t, f)
	f2 := start(t, onDisk(dir), onClock(f.clk))
	// The configured account's points are stored without an account, as
	// before metrics were kept per account; another account's name it.
	stored, err := f2.srv.Engine().(engine.MetricStore).MetricPoints(ctxT(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	accounts := map[string]string{}
	for _, p := range stored {
		if p.Metric == "NumberOfMessagesSent" {
			accounts[p.DimValue+"@"+p.Account] = p.Account
		}
	}
	for _, k := range []string{"mine@", "orders@" + metricsAccountA, "orders@" + metricsAccountB, "only-b@" + metricsAccountB} {
		if _, ok := accounts[k]; !ok {
			t.Errorf("no stored point %s among %v", k, accounts)
		}
	}
	if len(accounts) != 4 {
		t.Errorf("stored points of NumberOfMessagesSent %v, want 4 series", accounts)
	}
	check("after the restart", f2.srv.URL())
}

// TestClusterAccountMetrics: on two nodes another account's counters and
// gauges are the cluster's, each node reading the sum of both, and its
// gauges sampled once a minute; the configured account reads none of them.
func TestClusterAccountMetrics(t *testing.T) {
	t.Parallel()
	dbURL, schema := pgtest.Schema(t)
	clk := clock.NewFake(epoch)
	c := &cluster{clk: clk}
	na := start(t, onClock(clk), onSharedSchema(t, dbURL, schema))
	nb := start(t, onClock(clk), onSharedSchema(t, dbURL, schema))
	c.nodes = []*ferry{na, nb}
	ba := clientsOf(na.srv.URL(), metricsAccountB, "x", "us-east-1")
	bb := clientsOf(nb.srv.URL(), metricsAccountB, "x", "us-east-1")
	q := createQueueIn(ctxT(t), t, ba, "work")
	sendN(t, ba.json, q, 2)
	sendN(t, bb.json, q, 3)
	m := clk.Now().Truncate(time.Minute).Add(time.Minute)
	c.until(t, m.Add(time.Minute))
	for _, cl := range []authClients{ba, bb} {
		if got := sums(statWith(t, cl.cw, "NumberOfMessagesSent", "work", epoch.Add(-time.Hour), epoch.Add(time.Hour), 7200)); !slices.Equal(got, []float64{5}) {
			t.Errorf("B reads NumberOfMessagesSent %v, want the cluster's [5]", got)
		}
		dps := statWith(t, cl.cw, "ApproximateNumberOfMessagesVisible", "work", m, m.Add(time.Minute), 60)
		if len(dps) != 1 || aws.ToFloat64(dps[0].Sum) != 5 || aws.ToFloat64(dps[0].SampleCount) != 1 {
			t.Errorf("B reads the visible messages of the minute %s as %+v, want one sample of 5", m.Format(time.TimeOnly), dps)
		}
	}
	for _, f := range c.nodes {
		if dps := stat(t, f, "NumberOfMessagesSent", "work", epoch.Add(-time.Hour), epoch.Add(time.Hour), 7200); len(dps) != 0 {
			t.Errorf("the configured account reads B's counter: %+v", dps)
		}
	}
}
