package enginetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/engine"
)

// What a store keeps beside the queues (records, metric points) and what
// it reports of itself (Monitor).

// PutRecord stores a record.
func (h *H) PutRecord(kind, key, value string) {
	h.Helper()
	if err := h.B.PutRecord(h.Ctx, kind, key, []byte(value)); err != nil {
		h.Fatalf("PutRecord(%s, %s): %v", kind, key, err)
	}
}

// WantRecords checks a kind's records, key=value in key order.
func (h *H) WantRecords(kind string, want ...string) {
	h.Helper()
	recs, err := h.B.Records(h.Ctx, kind)
	if err != nil {
		h.Fatalf("Records(%s): %v", kind, err)
	}
	got := make([]string, len(recs))
	for i, r := range recs {
		got[i] = r.Key + "=" + string(r.Value)
	}
	if !slices.Equal(got, want) {
		h.Fatalf("Records(%s) = %q, want %q", kind, got, want)
	}
}

// putTestRecords stores the records of testRecords and returns what each
// kind then holds.
func putTestRecords(h *H) map[string][]string {
	h.Helper()
	for _, r := range []struct{ kind, key, value string }{
		{"topic", "b", "2"}, {"topic", "a", "1"}, {"topic", "c", "3"},
		{"topics", "x", "a kind whose name starts with another's"}, {"top", "y", "and the other way"},
		{"sub", "a", "s"}, {"sub", "a/b", "t"}, {"sub", "B", "u"}, {"sub", "a0", "v"}, {"sub", "é", ""},
	} {
		h.PutRecord(r.kind, r.key, r.value)
	}
	h.PutRecord("topic", "b", "two")
	for _, key := range []string{"c", "never"} {
		if err := h.B.DeleteRecord(h.Ctx, "topic", key); err != nil {
			h.Fatalf("DeleteRecord(topic, %s): %v", key, err)
		}
	}
	return map[string][]string{
		"topic":  {"a=1", "b=two"},
		"topics": {"x=a kind whose name starts with another's"},
		"top":    {"y=and the other way"},
		"sub":    {"B=u", "a=s", "a/b=t", "a0=v", "é="},
		"none":   nil,
	}
}

func testRecords(h *H) {
	for kind, want := range putTestRecords(h) {
		h.WantRecords(kind, want...)
	}
	// The store keeps its own copies, and hands out copies.
	v := []byte("mine")
	if err := h.B.PutRecord(h.Ctx, "k", "key", v); err != nil {
		h.Fatal(err)
	}
	v[0] = 'X'
	recs, err := h.B.Records(h.Ctx, "k")
	if err != nil || len(recs) != 1 {
		h.Fatalf("Records(k) = %v, %v", recs, err)
	}
	recs[0].Value[0] = 'Y'
	h.WantRecords("k", "key=mine")
	// A kind emptied and filled again.
	for _, key := range []string{"a", "b"} {
		if err := h.B.DeleteRecord(h.Ctx, "topic", key); err != nil {
			h.Fatal(err)
		}
	}
	h.WantRecords("topic")
	h.PutRecord("topic", "z", "back")
	h.WantRecords("topic", "z=back")
}

// Point is a point of metric of the QueueName dimension.
func Point(minute int64, namespace, metric, queue string, sum float64) engine.MetricPoint {
	return engine.MetricPoint{Namespace: namespace, Metric: metric, DimName: "QueueName", DimValue: queue,
		Minute: minute, Sum: sum, Count: 2, Min: sum / 4, Max: sum / 2}
}

// OfAccount is p as a point of account's series.
func OfAccount(account string, p engine.MetricPoint) engine.MetricPoint {
	p.Account = account
	return p
}

// WantPoints checks MetricPoints(from): ordered by minute, and within a
// minute, in whatever order, the points of want.
func (h *H) WantPoints(from int64, want ...engine.MetricPoint) {
	h.Helper()
	got, err := h.B.MetricPoints(h.Ctx, from)
	if err != nil {
		h.Fatalf("MetricPoints(%d): %v", from, err)
	}
	if !slices.IsSortedFunc(got, func(a, b engine.MetricPoint) int { return cmp.Compare(a.Minute, b.Minute) }) {
		h.Fatalf("MetricPoints(%d) not by minute: %+v", from, got)
	}
	key := func(p engine.MetricPoint) string { return fmt.Sprintf("%+v", p) }
	g, w := make([]string, len(got)), make([]string, len(want))
	for i, p := range got {
		g[i] = key(p)
	}
	for i, p := range want {
		w[i] = key(p)
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		h.Fatalf("MetricPoints(%d) =\n%q\nwant\n%q", from, g, w)
	}
}

// putTestPoints stores the points of testMetricPoints and returns them as
// stored.
func putTestPoints(h *H) []engine.MetricPoint {
	h.Helper()
	points := []engine.MetricPoint{
		Point(100, "AWS/SQS", "NumberOfMessagesSent", "a", 1),
		Point(101, "AWS/SQS", "NumberOfMessagesSent", "a", 2),
		Point(101, "AWS/SQS", "NumberOfMessagesSent", "b", 3),
		Point(101, "AWS/SNS", "NumberOfMessagesSent", "a", 4),
		Point(102, "AWS/SQS", "SentMessageSize", "b", 5),
		Point(103, "AWS/SQS", "NumberOfMessagesSent", "a", 6),
		// Another account's series of the same names is another series.
		OfAccount(Other, Point(101, "AWS/SQS", "NumberOfMessagesSent", "a", 8)),
	}
	// A later put of the same series and minute replaces the point, of
	// its account only.
	again := Point(101, "AWS/SQS", "NumberOfMessagesSent", "a", 7)
	for _, put := range [][]engine.MetricPoint{points, {again}, nil} {
		if err := h.B.PutMetricPoints(h.Ctx, put); err != nil {
			h.Fatalf("PutMetricPoints(%d points): %v", len(put), err)
		}
	}
	points[1] = again
	return points
}

func testMetricPoints(h *H) {
	h.WantPoints(0)
	all := putTestPoints(h)
	h.WantPoints(0, all...)
	h.WantPoints(101, all[1:]...)
	h.WantPoints(103, all[5])
	h.WantPoints(104)
	if err := h.B.DeleteMetricPointsBefore(h.Ctx, 102); err != nil {
		h.Fatal(err)
	}
	h.WantPoints(0, all[4:6]...)
	if err := h.B.DeleteMetricPointsBefore(h.Ctx, 0); err != nil {
		h.Fatal(err)
	}
	h.WantPoints(0, all[4:6]...)
}

// testDeleteMetricPoints: deleting an account's points takes every minute
// of its series, in every region, and no other account's; what is
// deleted stays deleted across a crash or a restart.
func testDeleteMetricPoints(h *H) {
	all := putTestPoints(h) // the configured account's ("") and Other's
	west := OfAccount(Other+"@eu-west-1", Point(102, "AWS/SQS", "NumberOfMessagesSent", "a", 9))
	kept := OfAccount(Account, Point(103, "AWS/SNS", "NumberOfMessagesPublished", "a", 10))
	if err := h.B.PutMetricPoints(h.Ctx, []engine.MetricPoint{west, kept}); err != nil {
		h.Fatal(err)
	}
	del := func(pick func(string) bool) {
		h.Helper()
		if err := h.B.DeleteMetricPoints(h.Ctx, pick); err != nil {
			h.Fatalf("DeleteMetricPoints: %v", err)
		}
	}
	del(func(string) bool { return false })
	h.WantPoints(0, append(all, west, kept)...)
	del(func(a string) bool { return a == Other || strings.HasPrefix(a, Other+"@") })
	h.WantPoints(0, append(all[:6:6], kept)...)
	del(func(a string) bool { return a == "" })
	h.WantPoints(0, kept)
	switch {
	case h.d.Crash != nil:
		h.Crash()
	case h.d.Reopen != nil:
		h.Restart(0)
	default:
		return
	}
	h.WantPoints(0, kept)
}

// testMonitor: a healthy store accepts writes, says it is durable exactly
// when the driver can restart it, and brings a collector that gathers
// cleanly, also once the store is closed.
func testMonitor(h *H) {
	if r := h.B.Refusing(); r != "" {
		h.Fatalf("Refusing() = %q on a healthy store", r)
	}
	if r := h.B.Unreachable(context.Background()); r != "" {
		h.Fatalf("Unreachable() = %q on a healthy store", r)
	}
	if got, want := h.B.Durable(), h.d.Reopen != nil; got != want {
		h.Fatalf("Durable() = %v, but the driver's Reopen is set: %v", got, want)
	}
	c := h.B.Collector()
	if c == nil {
		return
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		h.Fatalf("register the store's collector: %v", err)
	}
	if _, err := reg.Gather(); err != nil {
		h.Fatalf("gather: %v", err)
	}
	if err := h.B.Close(); err != nil {
		h.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		h.Fatalf("gather after close: %v", err)
	}
}
