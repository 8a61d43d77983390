package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cwsdk "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

func cwV2(url string) *cwsdk.Client {
	return cwsdk.New(cwsdk.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkHTTP,
	})
}

// cluster is nodes on one schema and one fake clock.
type cluster struct {
	clk   *clock.Fake
	nodes []*ferry
}

// step moves the clock 10 s, past the next save of every running node,
// and waits for the samplers' and the alarm evaluations' ticks it fires.
func (c *cluster) step(t testing.TB) {
	t.Helper()
	type mark struct{ sampler, cw uint64 }
	before := make([]mark, len(c.nodes))
	next := c.clk.Now().Add(10 * time.Second)
	evaluates := make([]bool, len(c.nodes)) // an alarm tick falls due
	for i, f := range c.nodes {
		before[i] = mark{f.srv.Sampler().Ticks(), f.srv.CloudWatch().Ticks()}
		due := c.clk.Now().Add(-20 * time.Second).Truncate(time.Minute).Add(time.Minute + 20*time.Second)
		evaluates[i] = !due.After(next) && alarmsIn(t, f) > 0
	}
	c.clk.Set(next)
	testwait.Eventually(t, "every node's ticks", func() bool {
		for i, f := range c.nodes {
			if f.srv.Sampler().Ticks() == before[i].sampler || evaluates[i] && f.srv.CloudWatch().Ticks() == before[i].cw {
				return false
			}
		}
		return true
	})
}

// until steps the clock until it has passed at, then once more, so that
// every node has saved and read what the minute before at holds.
func (c *cluster) until(t testing.TB, at time.Time) {
	t.Helper()
	for c.clk.Now().Before(at) {
		c.step(t)
	}
	c.step(t)
}

func (c *cluster) drop(f *ferry) {
	for i, g := range c.nodes {
		if g == f {
			c.nodes = append(c.nodes[:i], c.nodes[i+1:]...)
			return
		}
	}
}

// alarmsIn counts the node's alarms, as its API lists them.
func alarmsIn(t testing.TB, f *ferry) int {
	t.Helper()
	out, err := cwV2(f.srv.URL()).DescribeAlarms(ctxT(t), &cwsdk.DescribeAlarmsInput{})
	if err != nil {
		t.Fatalf("DescribeAlarms: %v", err)
	}
	return len(out.MetricAlarms)
}

// stat reads one statistic of a queue's metric over [from, to) through
// the node's CloudWatch API, as the configured account: the datapoints,
// one per period.
func stat(t testing.TB, f *ferry, metric, queue string, from, to time.Time, period int32) []cwtypes.Datapoint {
	t.Helper()
	return statWith(t, cwV2(f.srv.URL()), metric, queue, from, to, period)
}

// gaugeMinute is the one datapoint of the queue's visible count in the
// minute at, as the node reads it.
func gaugeMinute(t testing.TB, f *ferry, queue string, at time.Time) (sum, samples float64) {
	t.Helper()
	dps := stat(t, f, "ApproximateNumberOfMessagesVisible", queue, at, at.Add(time.Minute), 60)
	if len(dps) != 1 {
		t.Fatalf("%s: %d datapoints of ApproximateNumberOfMessagesVisible in the minute %s", f.srv.URL(), len(dps), at.Format(time.TimeOnly))
	}
	return *dps[0].Sum, *dps[0].SampleCount
}

// Two nodes on one database are one CloudWatch: each node's counts are
// the cluster's, each gauge is sampled once a minute, an alarm notifies
// once and its state reads the same on both, and when the node doing the
// background work closes, the other carries on.
func TestClusterMetricsAndAlarms(t *testing.T) {
	t.Parallel()
	url, schema := pgtest.Schema(t)
	clk := clock.NewFake(epoch)
	c := &cluster{clk: clk}
	a := start(t, onClock(clk), onSharedSchema(t, url, schema))
	ctx := ctxT(t)
	work := a.createQueue(t, "work", nil)
	ops := a.createQueue(t, "ops", nil)
	topic := a.createTopic(t, "depth-alarms", nil)
	a.subscribe(t, topic, "sqs", arnPrefix+"ops", nil)
	// B starts once the topic exists: SNS reads its topics when a node
	// starts.
	b := start(t, onClock(clk), onSharedSchema(t, url, schema))
	c.nodes = []*ferry{a, b}

	// Counters: each node counts its own sends; both read the sum.
	for i, f := range []*ferry{a, a, a, b, b} {
		if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(work), MessageBody: aws.String("m")}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	c.step(t)
	c.step(t)
	for _, f := range c.nodes {
		dps := stat(t, f, "NumberOfMessagesSent", "work", epoch.Add(-time.Hour), epoch.Add(time.Hour), 3600)
		if len(dps) != 1 || *dps[0].Sum != 5 {
			t.Fatalf("NumberOfMessagesSent on %s: %+v, want a sum of 5", f.srv.URL(), dps)
		}
	}

	// Gauges: one sample a minute in the cluster, read alike on both.
	m1 := epoch.Truncate(time.Minute).Add(time.Minute)
	c.until(t, m1)
	for _, f := range c.nodes {
		if sum, n := gaugeMinute(t, f, "work", m1); sum != 5 || n != 1 {
			t.Fatalf("visible messages in %s on %s: sum %v of %v samples, want one sample of 5", m1.Format(time.TimeOnly), f.srv.URL(), sum, n)
		}
	}

	// An alarm made on A is on B at once, fires once, and reads ALARM on B.
	cwA, cwB := cwV2(a.srv.URL()), cwV2(b.srv.URL())
	if _, err := cwA.PutMetricAlarm(ctx, &cwsdk.PutMetricAlarmInput{
		AlarmName: aws.String("work-depth"), Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateNumberOfMessagesVisible"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("work")}},
		Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, AlarmActions: []string{topic},
	}); err != nil {
		t.Fatalf("PutMetricAlarm: %v", err)
	}
	state := func(cw *cwsdk.Client) cwtypes.StateValue {
		out, err := cw.DescribeAlarms(ctxT(t), &cwsdk.DescribeAlarmsInput{AlarmNames: []string{"work-depth"}})
		if err != nil || len(out.MetricAlarms) != 1 {
			t.Fatalf("DescribeAlarms: %v %v", out, err)
		}
		return out.MetricAlarms[0].StateValue
	}
	if got := state(cwB); got != cwtypes.StateValueInsufficientData {
		t.Fatalf("the new alarm on B: %s", got)
	}
	// B hears of the alarm and evaluates (or not) from its next minute on.
	testwait.Eventually(t, "B to know the alarm", func() bool { return alarmsIn(t, b) == 1 })
	m2 := m1.Add(time.Minute)
	c.until(t, m2.Add(20*time.Second)) // minute m1 is evaluated 20 s after m2 begins
	note := b.receiveOne(t, ops)
	if aws.ToString(note.Body) == "" {
		t.Fatal("an empty notification")
	}
	if _, err := b.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(ops), ReceiptHandle: note.ReceiptHandle}); err != nil {
		t.Fatalf("delete the notification: %v", err)
	}
	testwait.Eventually(t, "ALARM on B", func() bool { return state(cwB) == cwtypes.StateValueAlarm })
	if got := state(cwA); got != cwtypes.StateValueAlarm {
		t.Fatalf("A reads %s", got)
	}
	// Two more evaluations notify nobody: the alarm stays in ALARM, and
	// it fired on one node only.
	testwait.Never(t, "a second notification", func() { c.until(t, m2.Add(2*time.Minute+20*time.Second)) }, func() bool {
		return len(a.receiveAll(t, ops, 10)) > 0
	})
	testwait.Eventually(t, "B to show the one state change", func() bool {
		hist, err := cwB.DescribeAlarmHistory(ctx, &cwsdk.DescribeAlarmHistoryInput{AlarmName: aws.String("work-depth"),
			HistoryItemType: cwtypes.HistoryItemTypeStateUpdate})
		if err != nil {
			t.Fatalf("DescribeAlarmHistory on B: %v", err)
		}
		return len(hist.AlarmHistoryItems) == 1
	})

	// The node sampling the gauges closes; the other samples and
	// evaluates from the next minute on.
	holder, other := a, b
	if b.srv.Sampler().Holding() {
		holder, other = b, a
	}
	if !holder.srv.Sampler().Holding() || other.srv.Sampler().Holding() {
		t.Fatalf("sampling lease: A %v, B %v", a.srv.Sampler().Holding(), b.srv.Sampler().Holding())
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := holder.srv.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	c.drop(holder)
	if _, err := other.json.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(work)}); err != nil {
		t.Fatalf("purge: %v", err)
	}
	m5 := clk.Now().Truncate(time.Minute).Add(time.Minute)
	c.until(t, m5.Add(time.Minute+20*time.Second)) // minute m5 sampled, then evaluated
	if !other.srv.Sampler().Holding() || !other.srv.CloudWatch().Evaluating() {
		t.Fatalf("the remaining node: sampling %v, evaluating %v", other.srv.Sampler().Holding(), other.srv.CloudWatch().Evaluating())
	}
	if sum, n := gaugeMinute(t, other, "work", m5); sum != 0 || n != 1 {
		t.Fatalf("visible messages in %s: sum %v of %v samples, want one sample of 0", m5.Format(time.TimeOnly), sum, n)
	}
	if got := state(cwV2(other.srv.URL())); got != cwtypes.StateValueOk {
		t.Fatalf("after the purge the alarm is %s, want OK", got)
	}
}
