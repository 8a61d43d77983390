package cloudwatch

import (
	"slices"
	"sort"
	"time"

	"github.com/ferrymq/ferry/internal/metrics"
)

// activeFor is how long an SQS queue stays active after its last API
// activity: CloudWatch reports an active queue's metrics every minute.
const activeFor = 6 * time.Hour

// sqsCounters are the SQS metrics that count API activity; while a queue
// is active, a minute without samples reads as zero.
var sqsCounters = metrics.ActivityCounters

// datapoints returns a series' minutes that start in [from, to), oldest
// first, as CloudWatch reports them at now. Ferry's store keeps only
// minutes with samples; SQS reports its counters every minute while the
// queue is active (any of its counters moved in the last 6 hours), so such
// a complete minute without samples reads as a zero. The series are
// account's: no account reads another's.
func (s *Service) datapoints(account, ns, metric string, dim metrics.Dimension, from, to, now time.Time) []metrics.Datapoint {
	dps := s.metrics.Datapoints(account, ns, metric, dim, from, to)
	if ns != metrics.NamespaceSQS || dim.Name != metrics.DimQueueName || !slices.Contains(sqsCounters, metric) {
		return dps
	}
	if cur := now.Truncate(time.Minute); to.After(cur) {
		to = cur // the current minute is not reported yet
	}
	if oldest := now.Add(-metrics.DefaultRetention).Truncate(time.Minute).Add(time.Minute); from.Before(oldest) {
		from = oldest
	}
	first := from.Truncate(time.Minute)
	if first.Before(from) {
		first = first.Add(time.Minute)
	}
	complete := sort.Search(len(dps), func(i int) bool { return !dps[i].Timestamp.Before(to) })
	if !first.Before(to) || complete >= int(to.Sub(first)/time.Minute) {
		return dps // nothing to fill: no complete minute, or none missing
	}
	// The minutes with activity, from 6 hours before the range on.
	var active []time.Time
	for _, c := range sqsCounters {
		for _, d := range s.metrics.Datapoints(account, ns, c, dim, first.Add(-activeFor), to) {
			active = append(active, d.Timestamp)
		}
	}
	if len(active) == 0 {
		return dps
	}
	slices.SortFunc(active, func(a, b time.Time) int { return a.Compare(b) })
	out := make([]metrics.Datapoint, 0, int(to.Sub(first)/time.Minute))
	i, j := 0, -1 // i: next real datapoint; j: latest activity at or before the minute
	for m := first; m.Before(to); m = m.Add(time.Minute) {
		for j+1 < len(active) && !active[j+1].After(m) {
			j++
		}
		if i < len(dps) && dps[i].Timestamp.Equal(m) {
			out = append(out, dps[i])
			i++
			continue
		}
		if j >= 0 && m.Sub(active[j]) < activeFor {
			out = append(out, metrics.Datapoint{Timestamp: m, SampleCount: 1})
		}
	}
	// Real datapoints of the current minute, which the loop stops before.
	return append(out, dps[i:]...)
}
