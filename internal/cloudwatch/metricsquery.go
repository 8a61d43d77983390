package cloudwatch

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/metrics"
)

// Limits of the metric queries.
const (
	listMetricsPage         = 500
	maxStatisticsDatapoints = 1440
	defaultMaxDatapoints    = 100800
	recentlyActive          = 3 * time.Hour
)

func (s *Service) listMetrics(ctx context.Context, in *ListMetricsInput) (*ListMetricsOutput, error) {
	var v violations
	checkNamespace(&v, nonEmpty(in.Namespace), "namespace")
	v.length(nonEmpty(in.MetricName), "metricName", 1, 255)
	v.listMax(len(in.Dimensions), fmt.Sprint(len(in.Dimensions))+" dimension filters", "dimensions", 10)
	for i, d := range in.Dimensions {
		f := fmt.Sprintf("dimensions.%d.member", i+1)
		v.required(d.Name != "", f+".name")
		v.length(nonEmpty(d.Name), f+".name", 1, 255)
		v.length(d.Value, f+".value", 1, 1024)
	}
	v.enum(in.RecentlyActive, "recentlyActive", []string{"PT3H"})
	v.length(nonEmpty(in.OwningAccount), "owningAccount", 1, 255)
	if err := v.err(); err != nil {
		return nil, err
	}
	after, err := decodeToken(in.NextToken)
	if err != nil {
		return nil, invalidValue("The parameter NextToken is invalid.")
	}
	out := &ListMetricsOutput{Metrics: []Metric{}}
	// The caller's series only: OwningAccount names another account's
	// only across a monitoring account's link, which Ferry has not.
	if in.OwningAccount != "" && in.OwningAccount != s.accountOf(ctx) {
		return out, nil
	}
	account := s.ownerOf(ctx)
	now := s.clock.Now()
	for _, k := range s.metrics.Series() {
		pos := seriesToken(k)
		if k.Account != account ||
			after != "" && pos <= after ||
			in.Namespace != "" && k.Namespace != in.Namespace ||
			in.MetricName != "" && k.Metric != in.MetricName ||
			!matchesFilters(k.Dimension, in.Dimensions) {
			continue
		}
		if in.RecentlyActive != "" && len(s.metrics.Datapoints(k.Account, k.Namespace, k.Metric, k.Dimension, now.Add(-recentlyActive), now.Add(time.Minute))) == 0 {
			continue
		}
		if len(out.Metrics) == listMetricsPage {
			out.NextToken = encodeToken(seriesToken(lastKey(out.Metrics)))
			break
		}
		out.Metrics = append(out.Metrics, Metric{Namespace: k.Namespace, MetricName: k.Metric,
			Dimensions: []Dimension{{Name: k.Dimension.Name, Value: k.Dimension.Value}}})
	}
	return out, nil
}

// seriesToken is a series' position among the account's in Series()
// order, for NextToken.
func seriesToken(k metrics.SeriesKey) string {
	return k.Namespace + "\x00" + k.Metric + "\x00" + k.Dimension.Name + "\x00" + k.Dimension.Value
}

func lastKey(ms []Metric) metrics.SeriesKey {
	m := ms[len(ms)-1]
	return metrics.SeriesKey{Namespace: m.Namespace, Metric: m.MetricName,
		Dimension: metrics.Dimension{Name: m.Dimensions[0].Name, Value: m.Dimensions[0].Value}}
}

// matchesFilters: every filter names the series' dimension (and its value,
// when the filter has one).
func matchesFilters(d metrics.Dimension, filters []DimensionFilter) bool {
	for _, f := range filters {
		if f.Name != d.Name || f.Value != nil && *f.Value != d.Value {
			return false
		}
	}
	return true
}

// seriesOf is the series a metric request names: Ferry keeps one series
// per single dimension, so any other dimension set has no data.
func seriesOf(dims []Dimension) (metrics.Dimension, bool) {
	if len(dims) != 1 {
		return metrics.Dimension{}, false
	}
	return metrics.Dimension{Name: dims[0].Name, Value: dims[0].Value}, true
}

// aggregate folds one-minute datapoints into count periods from from,
// oldest first; a period without samples has SampleCount 0.
func aggregate(dps []metrics.Datapoint, from time.Time, period time.Duration, count int) []metrics.Datapoint {
	out := make([]metrics.Datapoint, count)
	for _, d := range dps {
		i := int(d.Timestamp.Sub(from) / period)
		if d.Timestamp.Before(from) || i >= count {
			continue
		}
		o := &out[i]
		if o.SampleCount == 0 {
			*o = d
			o.Timestamp = from.Add(time.Duration(i) * period)
			continue
		}
		o.Sum += d.Sum
		o.SampleCount += d.SampleCount
		o.Minimum = min(o.Minimum, d.Minimum)
		o.Maximum = max(o.Maximum, d.Maximum)
	}
	return out
}

// statValue is one statistic of an aggregated period.
func statValue(stat string, d metrics.Datapoint) float64 {
	switch stat {
	case "SampleCount":
		return d.SampleCount
	case "Average":
		return d.Average()
	case "Minimum":
		return d.Minimum
	case "Maximum":
		return d.Maximum
	}
	return d.Sum
}

// validQueryPeriod: 1, 5, 10, 30 seconds (high resolution) or whole
// minutes.
func validQueryPeriod(p int32) bool {
	return p == 1 || p == 5 || p == 10 || p == 30 || (p > 0 && p%60 == 0)
}

// timeRange checks StartTime and EndTime.
func timeRange(start, end time.Time) (time.Time, time.Time, error) {
	if !start.Before(end) {
		return start, end, invalidValue("The parameter StartTime must be less than the parameter EndTime.")
	}
	return start.UTC(), end.UTC(), nil
}

// periodCount is how many periods of p seconds cover [start, end).
func periodCount(start, end time.Time, p int32) int64 {
	d := int64(time.Duration(p) * time.Second)
	return (int64(end.Sub(start)) + d - 1) / d
}

func (s *Service) getMetricStatistics(ctx context.Context, in *GetMetricStatisticsInput) (*GetMetricStatisticsOutput, error) {
	for _, r := range []struct {
		name    string
		present bool
	}{{"Namespace", in.Namespace != ""}, {"MetricName", in.MetricName != ""}, {"StartTime", !in.StartTime.IsZero()},
		{"EndTime", !in.EndTime.IsZero()}, {"Period", in.Period != nil}} {
		if !r.present {
			return nil, errMissingParameter.WithMessage("The parameter %s is required.", r.name)
		}
	}
	var v violations
	checkNamespace(&v, &in.Namespace, "namespace")
	v.length(&in.MetricName, "metricName", 1, 255)
	checkDimensions(&v, in.Dimensions, "dimensions")
	v.min(in.Period, "period", 1)
	v.listMax(len(in.Statistics), "["+strings.Join(in.Statistics, ", ")+"]", "statistics", 5)
	for i, st := range in.Statistics {
		v.enum(st, fmt.Sprintf("statistics.%d.member", i+1), statistics)
	}
	v.listMax(len(in.ExtendedStatistics), "["+strings.Join(in.ExtendedStatistics, ", ")+"]", "extendedStatistics", 10)
	v.enum(in.Unit, "unit", standardUnits)
	if err := v.err(); err != nil {
		return nil, err
	}
	if err := checkDistinctDimensions(in.Dimensions); err != nil {
		return nil, err
	}
	if !validQueryPeriod(*in.Period) {
		return nil, invalidValue("The parameter Period must be 1, 5, 10, 30, 60, or any multiple of 60.")
	}
	if len(in.Statistics) == 0 && len(in.ExtendedStatistics) == 0 {
		return nil, errMissingParameter.WithMessage("The parameter Statistics or ExtendedStatistics is required.")
	}
	for _, st := range in.ExtendedStatistics {
		if err := checkExtendedStatistic(st); err != nil {
			return nil, err
		}
	}
	if len(in.ExtendedStatistics) > 0 {
		// Ferry keeps statistic sets (sum, count, minimum, maximum) per
		// minute, from which no percentile can be computed.
		return nil, invalidCombination("The percentile statistics %s are not available: Ferry keeps statistic sets only.",
			strings.Join(in.ExtendedStatistics, ", "))
	}
	start, end, err := timeRange(in.StartTime, in.EndTime)
	if err != nil {
		return nil, err
	}
	if count := periodCount(start, end, *in.Period); count > maxStatisticsDatapoints {
		return nil, invalidCombination("You have requested up to %d datapoints, which exceeds the limit of %d. "+
			"You may reduce the datapoints requested by increasing Period, or decreasing the time range.", count, maxStatisticsDatapoints)
	}
	// The start is rounded down to the minute, as CloudWatch rounds it for
	// data younger than 15 days; periods count from there.
	start = start.Truncate(time.Minute)
	count := periodCount(start, end, *in.Period)
	out := &GetMetricStatisticsOutput{Label: in.MetricName, Datapoints: []Datapoint{}}
	dim, ok := seriesOf(in.Dimensions)
	unit := unitOf(in.MetricName)
	if !ok || in.Unit != "" && in.Unit != unit {
		return out, nil
	}
	period := time.Duration(*in.Period) * time.Second
	for _, d := range aggregate(s.datapoints(s.ownerOf(ctx), in.Namespace, in.MetricName, dim, start, end, s.clock.Now()), start, period, int(count)) {
		if d.SampleCount == 0 {
			continue
		}
		dp := Datapoint{Timestamp: ptr(d.Timestamp), Unit: unit}
		for _, st := range in.Statistics {
			val := ptr(statValue(st, d))
			switch st {
			case "SampleCount":
				dp.SampleCount = val
			case "Average":
				dp.Average = val
			case "Sum":
				dp.Sum = val
			case "Minimum":
				dp.Minimum = val
			case "Maximum":
				dp.Maximum = val
			}
		}
		out.Datapoints = append(out.Datapoints, dp)
	}
	return out, nil
}

// queryID: a GetMetricData query id starts with a lowercase letter.
var queryID = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`)

func (s *Service) getMetricData(ctx context.Context, in *GetMetricDataInput) (*GetMetricDataOutput, error) {
	var v violations
	v.required(in.MetricDataQueries != nil, "metricDataQueries")
	v.required(!in.StartTime.IsZero(), "startTime")
	v.required(!in.EndTime.IsZero(), "endTime")
	v.enum(in.ScanBy, "scanBy", scanBys)
	for i, q := range in.MetricDataQueries {
		f := fmt.Sprintf("metricDataQueries.%d.member", i+1)
		v.required(q.Id != "", f+".id")
		v.length(nonEmpty(q.Id), f+".id", 1, 255)
		v.length(nonEmpty(q.Expression), f+".expression", 1, 2048)
		v.min(q.Period, f+".period", 1)
		if ms := q.MetricStat; ms != nil {
			v.required(ms.Metric != nil, f+".metricStat.metric")
			v.required(ms.Period != nil, f+".metricStat.period")
			v.min(ms.Period, f+".metricStat.period", 1)
			v.required(ms.Stat != "", f+".metricStat.stat")
			v.enum(ms.Unit, f+".metricStat.unit", standardUnits)
			if ms.Metric != nil {
				checkNamespace(&v, nonEmpty(ms.Metric.Namespace), f+".metricStat.metric.namespace")
				v.length(nonEmpty(ms.Metric.MetricName), f+".metricStat.metric.metricName", 1, 255)
				checkDimensions(&v, ms.Metric.Dimensions, f+".metricStat.metric.dimensions")
			}
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	if len(in.MetricDataQueries) == 0 {
		return nil, validation("The parameter MetricDataQueries must contain at least one query.")
	}
	if len(in.MetricDataQueries) > 500 {
		return nil, validation("The collection MetricDataQueries must not have a size greater than 500.")
	}
	ids := map[string]bool{}
	for i, q := range in.MetricDataQueries {
		p := fmt.Sprintf("MetricDataQueries.member.%d", i+1)
		switch {
		case !queryID.MatchString(q.Id):
			return nil, validation("Invalid metric data query id %q in %s.Id: it must start with a lowercase letter and hold only letters, digits and underscores.", q.Id, p)
		case ids[q.Id]:
			return nil, validation("The value %s for parameter MetricDataQueries.Id is not unique.", q.Id)
		case q.Expression != "" && q.MetricStat != nil:
			return nil, validation("Exactly one of MetricStat and Expression must be set in %s.", p)
		case q.Expression != "":
			return nil, validation("Metric math expressions are not supported (%s.Expression); use MetricStat queries.", p)
		case q.MetricStat == nil:
			return nil, validation("Exactly one of MetricStat and Expression must be set in %s.", p)
		}
		ids[q.Id] = true
		ms := q.MetricStat
		if ms.Metric.Namespace == "" || ms.Metric.MetricName == "" {
			return nil, validation("%s.MetricStat.Metric must have a Namespace and a MetricName.", p)
		}
		if !validQueryPeriod(*ms.Period) {
			return nil, validation("The value %d for parameter %s.MetricStat.Period must be 1, 5, 10, 30, 60, or any multiple of 60.", *ms.Period, p)
		}
		if !slices.Contains(statistics, ms.Stat) {
			if percentile.MatchString(ms.Stat) {
				return nil, invalidCombination("The percentile statistic %s is not available: Ferry keeps statistic sets only.", ms.Stat)
			}
			return nil, validation("The value %s for parameter %s.MetricStat.Stat is not a valid statistic.", ms.Stat, p)
		}
		if err := checkDistinctDimensions(ms.Metric.Dimensions); err != nil {
			return nil, err
		}
	}
	start, end, err := timeRange(in.StartTime, in.EndTime)
	if err != nil {
		return nil, err
	}
	start = start.Truncate(time.Minute)
	budget := int64(defaultMaxDatapoints)
	if in.MaxDatapoints != nil && *in.MaxDatapoints > 0 {
		budget = int64(*in.MaxDatapoints)
	}
	resumeQ, resumeP := 0, 0
	if in.NextToken != "" {
		pos, err := decodeToken(in.NextToken)
		if err != nil {
			return nil, err
		}
		q, p, ok := strings.Cut(pos, ":")
		var e1, e2 error
		resumeQ, e1 = strconv.Atoi(q)
		resumeP, e2 = strconv.Atoi(p)
		if !ok || e1 != nil || e2 != nil || resumeQ < 0 || resumeP < 0 || resumeQ >= len(in.MetricDataQueries) {
			return nil, errInvalidNextToken
		}
	}
	out := &GetMetricDataOutput{MetricDataResults: []MetricDataResult{}, Messages: []MessageData{}}
	account, owner := s.accountOf(ctx), s.ownerOf(ctx)
	for qi := resumeQ; qi < len(in.MetricDataQueries); qi++ {
		q := in.MetricDataQueries[qi]
		if q.ReturnData != nil && !*q.ReturnData {
			continue
		}
		// AccountId names another account's series only from a monitoring
		// account linked to it, which Ferry has not (as OwningAccount).
		times, values := []time.Time{}, []float64{}
		if q.AccountId == "" || q.AccountId == account {
			times, values = s.series(owner, q.MetricStat, start, end, in.ScanBy == "TimestampAscending")
		}
		skip := 0
		if qi == resumeQ {
			skip = min(resumeP, len(times))
		}
		times, values = times[skip:], values[skip:]
		r := MetricDataResult{Id: q.Id, Label: q.Label, StatusCode: "Complete", Messages: []MessageData{}}
		if r.Label == "" {
			r.Label = q.MetricStat.Metric.MetricName
		}
		if int64(len(times)) > budget {
			times, values = times[:budget], values[:budget]
			r.StatusCode = "PartialData"
			out.NextToken = encodeToken(fmt.Sprintf("%d:%d", qi, skip+int(budget)))
		}
		budget -= int64(len(times))
		r.Timestamps, r.Values = times, values
		out.MetricDataResults = append(out.MetricDataResults, r)
		if out.NextToken != "" {
			break
		}
		if budget == 0 && qi+1 < len(in.MetricDataQueries) {
			out.NextToken = encodeToken(fmt.Sprintf("%d:0", qi+1))
			break
		}
	}
	return out, nil
}

// series is a MetricStat's periods with data in [start, end), newest
// first unless ascending.
func (s *Service) series(account string, ms *MetricStat, start, end time.Time, ascending bool) (times []time.Time, values []float64) {
	times, values = []time.Time{}, []float64{}
	dim, ok := seriesOf(ms.Metric.Dimensions)
	if !ok || ms.Unit != "" && ms.Unit != unitOf(ms.Metric.MetricName) {
		return times, values
	}
	count := periodCount(start, end, *ms.Period)
	period := time.Duration(*ms.Period) * time.Second
	aggs := aggregate(s.datapoints(account, ms.Metric.Namespace, ms.Metric.MetricName, dim, start, end, s.clock.Now()), start, period, int(count))
	for i := range aggs {
		d := aggs[i]
		if !ascending {
			d = aggs[len(aggs)-1-i]
		}
		if d.SampleCount > 0 {
			times = append(times, d.Timestamp)
			values = append(values, statValue(ms.Stat, d))
		}
	}
	return times, values
}
