package cloudwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/metrics"
)

// extraPeriods is how many periods beyond EvaluationPeriods an evaluation
// looks back for real datapoints (CloudWatch's "evaluation range").
const extraPeriods = 2

// arm schedules the next evaluation at the next minute boundary: one timer,
// no polling, and none at all while there is no alarm. The caller holds mu.
func (s *Service) arm() {
	if s.closed || s.armed || len(s.alarms) == 0 {
		return
	}
	s.gen++
	gen := s.gen
	s.armed = true
	// On a shared store the tick comes s.after past the minute (zero
	// otherwise), once every node has saved the minute that ended.
	now := s.clock.Now()
	next := now.Add(-s.after).Truncate(time.Minute).Add(time.Minute + s.after)
	s.wg.Add(1)
	s.timer = s.clock.AfterFunc(next.Sub(now), func() { s.tick(gen) })
}

// disarm stops the timer; a tick already on its way finds its generation
// gone and does nothing. The caller holds mu.
func (s *Service) disarm() {
	if s.armed && s.timer.Stop() {
		s.wg.Done() // the tick that will not run
	}
	s.armed = false
	s.gen++
}

// tick evaluates every alarm, then schedules the next minute.
func (s *Service) tick(gen uint64) {
	defer s.wg.Done()
	s.mu.Lock()
	current := gen == s.gen
	if current {
		s.armed = false
	}
	s.mu.Unlock()
	if !current {
		return
	}
	if s.lead(s.ctx) {
		s.evaluate(s.ctx, nil, s.now())
	}
	s.mu.Lock()
	s.arm()
	s.mu.Unlock()
	s.ticks.Add(1)
}

// change is a state transition whose actions are to run.
type change struct {
	alarm    alarm // as it is after the change
	oldState string
	actions  []string // empty when the alarm's actions are disabled
}

// evaluate assesses the named alarms (every alarm when names is nil) at
// now, records each state change, then runs the actions of the changes.
func (s *Service) evaluate(ctx context.Context, names []string, now time.Time) {
	var changes []*change
	s.mu.Lock()
	list := s.sorted()
	if names != nil {
		list = list[:0]
		for _, n := range names {
			if a := s.alarms[n]; a != nil {
				list = append(list, a)
			}
		}
	}
	for _, a := range list {
		r := s.assess(a, now)
		if r.keep || r.state == a.State {
			continue
		}
		var ch *change
		err := retryRaces(func() error {
			if s.cluster != nil {
				// Another node may have changed the alarm since this
				// node heard of it: decide on the stored one. (After a
				// lost race save has read it again.)
				fresh, err := s.current(ctx, s.key(a))
				if err != nil {
					return err
				}
				if fresh == nil {
					return nil // deleted meanwhile
				}
				a, r = fresh, s.assess(fresh, now)
			} else if a = s.alarms[s.key(a)]; a == nil {
				return nil
			} else {
				r = s.assess(a, now)
			}
			if r.keep || r.state == a.State {
				return nil
			}
			var err error
			ch, err = s.transition(ctx, a, r.state, r.reason, r.data, now)
			return err
		})
		if err != nil {
			s.log.ErrorContext(ctx, "cloudwatch: record alarm state", "alarm", a.Name, "err", err)
			continue
		}
		if ch != nil {
			changes = append(changes, ch)
		}
	}
	s.mu.Unlock()
	for _, ch := range changes {
		s.runActions(ctx, ch)
	}
}

// transition sets a's state (a copy replaces it, so that readers outside
// mu keep a consistent alarm), makes it durable and records the history;
// errLostRace when the store no longer has a.
// A new state value returns the change; the same value only updates the
// reason. The caller holds mu.
func (s *Service) transition(ctx context.Context, a *alarm, state, reason, data string, now time.Time) (*change, error) {
	c := *a
	c.StateReason, c.StateReasonData, c.StateUpdated = reason, data, now
	if state != a.State {
		c.State, c.StateTransitioned = state, now
	}
	if err := s.save(ctx, &c); err != nil {
		return nil, err
	}
	s.alarms[s.key(&c)] = &c
	if state == a.State {
		return nil, nil
	}
	s.recordState(ctx, a, &c, now)
	ch := &change{alarm: c, oldState: a.State}
	if c.ActionsEnabled {
		ch.actions = c.actionsFor(state)
	}
	return ch, nil
}

// assessment is what an evaluation concluded.
type assessment struct {
	keep   bool // TreatMissingData ignore with no data: the state stays
	state  string
	reason string
	data   string // StateReasonData JSON
}

// slot is one period of the evaluation range.
type slot struct {
	start       time.Time
	ok          bool // a datapoint exists
	value       float64
	sampleCount float64
}

// assess evaluates a as CloudWatch does. It looks at EvaluationPeriods +
// extraPeriods periods ending at the last complete one. With at least N
// (EvaluationPeriods) real datapoints it takes the N most recent of them
// and TreatMissingData plays no part. With fewer, the missing ones are
// filled as TreatMissingData says (breaching, notBreaching; missing and
// ignore fill nothing). With none at all, missing gives
// INSUFFICIENT_DATA, ignore keeps the state, breaching and notBreaching
// give ALARM and OK. The alarm goes to ALARM when at least M
// (DatapointsToAlarm) of the evaluated datapoints breach, to OK otherwise.
func (s *Service) assess(a *alarm, now time.Time) assessment {
	period := time.Duration(a.Period) * time.Second
	n := int(a.EvaluationPeriods)
	end := alignDown(now, period)
	slots := s.periods(a, end.Add(-time.Duration(n+extraPeriods)*period), end, period)

	var real []slot // newest first
	for i := len(slots) - 1; i >= 0; i-- {
		if slots[i].ok {
			real = append(real, slots[i])
		}
	}
	// The reason and its data are written only for a new state: most
	// evaluations change nothing.
	if len(real) == 0 {
		var state string
		switch a.treatMissing() {
		case "ignore":
			return assessment{keep: true}
		case "breaching":
			state = stateAlarm
		case "notBreaching":
			state = stateOK
		default:
			state = stateInsufficient
		}
		if state == a.State {
			return assessment{state: state}
		}
		rd := newReasonData(a, now, slots)
		for i := 0; i < n && i < len(slots); i++ {
			rd.EvaluatedDatapoints = append(rd.EvaluatedDatapoints, evaluatedPoint{Timestamp: cwTime(slots[len(slots)-1-i].start)})
		}
		if state == stateInsufficient {
			return assessment{state: state, data: rd.json(),
				reason: fmt.Sprintf("Insufficient Data: %s %s unknown.", plural(n, "datapoint"), wasWere(n))}
		}
		treated := "Breaching"
		if state == stateOK {
			treated = "NonBreaching"
		}
		return assessment{state: state, data: rd.json(), reason: fmt.Sprintf(
			"Threshold Crossed: no datapoints were received for %s and %d missing %s %s treated as [%s].",
			plural(n, "period"), n, word(n, "datapoint"), wasWere(n), treated)}
	}

	eval := real
	if len(eval) > n {
		eval = eval[:n]
	}
	var breaching, calm []slot
	for _, sl := range eval {
		if crosses(a.ComparisonOperator, sl.value, a.Threshold) {
			breaching = append(breaching, sl)
		} else {
			calm = append(calm, sl)
		}
	}
	nb := len(breaching)
	if len(eval) < n && a.treatMissing() == "breaching" {
		nb += n - len(eval) // the missing datapoints count as breaching
	}
	m := a.m()
	state := stateOK
	if nb >= m {
		state = stateAlarm
	}
	if state == a.State {
		return assessment{state: state}
	}

	rd := newReasonData(a, now, slots)
	rd.StartDate = cwTime(eval[len(eval)-1].start)
	for _, sl := range eval {
		rd.EvaluatedDatapoints = append(rd.EvaluatedDatapoints, evaluatedPoint{Timestamp: cwTime(sl.start),
			SampleCount: ptr(javaDouble(sl.sampleCount)), Value: ptr(javaDouble(sl.value))})
	}
	op, thr := opWords(a.ComparisonOperator), formatDouble(a.Threshold)
	var reason string
	switch {
	case state == stateAlarm && n == 1:
		reason = fmt.Sprintf("Threshold Crossed: 1 datapoint %s was %s the threshold (%s).", pointList(breaching), op, thr)
	case state == stateAlarm:
		reason = fmt.Sprintf("Threshold Crossed: %d out of the last %d datapoints %s %s %s the threshold (%s) (minimum %s for %s -> ALARM transition).",
			nb, n, pointList(breaching), wasWere(nb), op, thr, plural(m, "datapoint"), a.State)
	case n == 1:
		reason = fmt.Sprintf("Threshold Crossed: 1 datapoint %s was not %s the threshold (%s).", pointList(calm), op, thr)
	default:
		k := n - nb
		reason = fmt.Sprintf("Threshold Crossed: %s %s not %s the threshold (%s). The most recent datapoints which crossed the threshold: %s.",
			plural(k, "datapoint"), wasWere(k), op, thr, pointList(eval))
	}
	return assessment{state: state, reason: reason, data: rd.json()}
}

// newReasonData starts the StateReasonData of an evaluation over slots.
func newReasonData(a *alarm, now time.Time, slots []slot) reasonData {
	rd := reasonData{Version: "1.0", QueryDate: cwTime(now), Unit: a.Unit, Statistic: a.Statistic, Period: a.Period,
		RecentDatapoints: []javaDouble{}, Threshold: javaDouble(a.Threshold)}
	if a.ExtendedStatistic != "" {
		rd.Statistic = a.ExtendedStatistic
	}
	for _, sl := range slots {
		if sl.ok {
			rd.RecentDatapoints = append(rd.RecentDatapoints, javaDouble(sl.value))
		}
	}
	return rd
}

// periods aggregates the alarm's metric into the periods [from, to), oldest
// first. Ferry keeps one series per metric and single dimension; an alarm
// on any other dimension set, on another unit than the metric's, or on a
// percentile (Ferry keeps no distributions) sees no datapoints.
func (s *Service) periods(a *alarm, from, to time.Time, period time.Duration) []slot {
	count := int(to.Sub(from) / period)
	slots := make([]slot, count)
	for i := range slots {
		slots[i].start = from.Add(time.Duration(i) * period)
	}
	if len(a.Dimensions) != 1 || a.ExtendedStatistic != "" || a.Unit != "" && a.Unit != unitOf(a.MetricName) {
		return slots
	}
	dim := metrics.Dimension{Name: a.Dimensions[0].Name, Value: a.Dimensions[0].Value}
	aggs := aggregate(s.datapoints(s.ownerOfAlarm(a), a.Namespace, a.MetricName, dim, from, to, to), from, period, count)
	for i, ag := range aggs {
		if ag.SampleCount > 0 {
			slots[i].ok, slots[i].value, slots[i].sampleCount = true, statValue(a.Statistic, ag), ag.SampleCount
		}
	}
	return slots
}

// alignDown is t rounded down to a multiple of d since the epoch.
func alignDown(t time.Time, d time.Duration) time.Time {
	return time.Unix(0, t.UnixNano()-t.UnixNano()%int64(d)).UTC()
}

func crosses(op string, v, threshold float64) bool {
	switch op {
	case "GreaterThanOrEqualToThreshold":
		return v >= threshold
	case "GreaterThanThreshold":
		return v > threshold
	case "LessThanThreshold":
		return v < threshold
	case "LessThanOrEqualToThreshold":
		return v <= threshold
	}
	return false
}

func opWords(op string) string {
	switch op {
	case "GreaterThanOrEqualToThreshold":
		return "greater than or equal to"
	case "GreaterThanThreshold":
		return "greater than"
	case "LessThanThreshold":
		return "less than"
	}
	return "less than or equal to"
}

// pointList writes datapoints as a state reason does: [3.0 (30/11/26 03:10:00), ...].
func pointList(points []slot) string {
	parts := make([]string, len(points))
	for i, p := range points {
		parts[i] = formatDouble(p.value) + " (" + reasonTime(p.start) + ")"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func word(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

func plural(n int, w string) string { return fmt.Sprintf("%d %s", n, word(n, w)) }

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// reasonData is the StateReasonData CloudWatch writes for a metric alarm.
type reasonData struct {
	Version             string           `json:"version"`
	QueryDate           string           `json:"queryDate"`
	StartDate           string           `json:"startDate,omitempty"`
	Unit                string           `json:"unit,omitempty"`
	Statistic           string           `json:"statistic"`
	Period              int32            `json:"period"`
	RecentDatapoints    []javaDouble     `json:"recentDatapoints"`
	Threshold           javaDouble       `json:"threshold"`
	EvaluatedDatapoints []evaluatedPoint `json:"evaluatedDatapoints"`
}

type evaluatedPoint struct {
	Timestamp   string      `json:"timestamp"`
	SampleCount *javaDouble `json:"sampleCount,omitempty"`
	Value       *javaDouble `json:"value,omitempty"`
}

func (r reasonData) json() string {
	if r.EvaluatedDatapoints == nil {
		r.EvaluatedDatapoints = []evaluatedPoint{}
	}
	b, _ := json.Marshal(r) // plain strings and numbers: cannot fail
	return string(b)
}
