package cloudwatch

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

const unchecked = "Unchecked: Initial alarm creation"

func (s *Service) putMetricAlarm(ctx context.Context, in *PutMetricAlarmInput) (*EmptyOutput, error) {
	account := s.ownerOf(ctx)
	a, err := s.validatePut(in, account)
	if err != nil {
		return nil, err
	}
	a.Account = s.storedOwner(account)
	key := s.key(a)
	now := s.now()
	s.mu.Lock()
	put := *a
	err = retryRaces(func() error {
		old, err := s.current(ctx, key)
		if err != nil {
			return s.internal(ctx, "read alarm", err)
		}
		if old == nil && len(s.ownAlarms(account)) >= maxAlarms {
			return errLimitExceeded.WithMessage("The maximum allowed number of alarms (%d) has been reached.", maxAlarms)
		}
		a = new(alarm)
		*a = put
		a.ConfigUpdated = now
		kind := "Create"
		if old != nil {
			// An update keeps the state (it is evaluated again below) and the
			// tags: CloudWatch ignores Tags on an update (TagResource changes them).
			kind = "Update"
			a.State, a.StateReason, a.StateReasonData = old.State, old.StateReason, old.StateReasonData
			a.StateUpdated, a.StateTransitioned = old.StateUpdated, old.StateTransitioned
			a.Tags = old.Tags
			a.stored = old.stored
		} else {
			a.State, a.StateReason = stateInsufficient, unchecked
			a.StateUpdated, a.StateTransitioned = now, now
		}
		if err := s.save(ctx, a); err != nil {
			if err == errLostRace {
				return err
			}
			return s.internal(ctx, "put alarm", err)
		}
		s.alarms[key] = a
		s.recordConfig(ctx, kind, old, a, now)
		return nil
	})
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.arm()
	s.mu.Unlock()

	// A new or changed alarm is evaluated at once.
	s.evaluate(ctx, []string{key}, now)
	return &EmptyOutput{}, nil
}

func (s *Service) describeAlarms(ctx context.Context, in *DescribeAlarmsInput) (*DescribeAlarmsOutput, error) {
	var v violations
	v.listMax(len(in.AlarmNames), "["+strings.Join(in.AlarmNames, ", ")+"]", "alarmNames", maxDescribeRecords)
	for i, n := range in.AlarmNames {
		v.length(&n, fmt.Sprintf("alarmNames.%d.member", i+1), 1, 255)
	}
	v.length(in.AlarmNamePrefix, "alarmNamePrefix", 1, 255)
	v.length(in.ChildrenOfAlarmName, "childrenOfAlarmName", 1, 255)
	v.length(in.ParentsOfAlarmName, "parentsOfAlarmName", 1, 255)
	v.length(in.ActionPrefix, "actionPrefix", 1, 1024)
	for i, t := range in.AlarmTypes {
		v.enum(t, fmt.Sprintf("alarmTypes.%d.member", i+1), alarmTypes)
	}
	v.enum(in.StateValue, "stateValue", stateValues)
	v.min(in.MaxRecords, "maxRecords", 1)
	v.max(in.MaxRecords, "maxRecords", maxDescribeRecords)
	if err := v.err(); err != nil {
		return nil, err
	}
	limit := 50
	if in.MaxRecords != nil {
		limit = int(*in.MaxRecords)
	}
	after, err := decodeToken(in.NextToken)
	if err != nil {
		return nil, err
	}
	out := &DescribeAlarmsOutput{CompositeAlarms: []CompositeAlarm{}, MetricAlarms: []MetricAlarm{}}
	// Without AlarmTypes only metric alarms are listed. Ferry has no
	// composite alarms, so no alarm has children or parents.
	if len(in.AlarmTypes) > 0 && !slices.Contains(in.AlarmTypes, "MetricAlarm") ||
		in.ChildrenOfAlarmName != nil || in.ParentsOfAlarmName != nil {
		return out, nil
	}
	account := s.ownerOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range in.AlarmNames {
		// On a shared store an alarm made through another node a moment
		// ago may not be in memory yet.
		if _, err := s.find(ctx, s.alarmKey(account, n)); err != nil {
			return nil, s.internal(ctx, "read alarm", err)
		}
	}
	for _, a := range s.ownAlarms(account) {
		if a.Name <= after && after != "" {
			continue
		}
		if len(in.AlarmNames) > 0 && !slices.Contains(in.AlarmNames, a.Name) ||
			in.AlarmNamePrefix != nil && !strings.HasPrefix(a.Name, *in.AlarmNamePrefix) ||
			in.StateValue != "" && a.State != in.StateValue ||
			in.ActionPrefix != nil && !hasActionPrefix(a, *in.ActionPrefix) {
			continue
		}
		if len(out.MetricAlarms) == limit {
			out.NextToken = encodeToken(out.MetricAlarms[limit-1].AlarmName)
			break
		}
		out.MetricAlarms = append(out.MetricAlarms, a.output(s.alarmARN(account, a.Name)))
	}
	return out, nil
}

func hasActionPrefix(a *alarm, prefix string) bool {
	for _, l := range [][]string{a.OKActions, a.AlarmActions, a.InsufficientDataActions} {
		for _, x := range l {
			if strings.HasPrefix(x, prefix) {
				return true
			}
		}
	}
	return false
}

// sorted lists the alarms by name. The caller holds mu.
func (s *Service) sorted() []*alarm {
	out := make([]*alarm, 0, len(s.alarms))
	for _, a := range s.alarms {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// encodeToken and decodeToken make an opaque NextToken of a position.
func encodeToken(pos string) string { return base64.RawURLEncoding.EncodeToString([]byte(pos)) }

func decodeToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return "", errInvalidNextToken
	}
	return string(b), nil
}

func (s *Service) describeAlarmsForMetric(ctx context.Context, in *DescribeAlarmsForMetricInput) (*DescribeAlarmsForMetricOutput, error) {
	var v violations
	v.required(in.MetricName != "", "metricName")
	v.length(nonEmpty(in.MetricName), "metricName", 1, 255)
	v.required(in.Namespace != "", "namespace")
	checkNamespace(&v, nonEmpty(in.Namespace), "namespace")
	v.enum(in.Statistic, "statistic", statistics)
	checkDimensions(&v, in.Dimensions, "dimensions")
	v.min(in.Period, "period", 1)
	v.enum(in.Unit, "unit", standardUnits)
	if err := v.err(); err != nil {
		return nil, err
	}
	out := &DescribeAlarmsForMetricOutput{MetricAlarms: []MetricAlarm{}}
	account := s.ownerOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.ownAlarms(account) {
		if a.Namespace != in.Namespace || a.MetricName != in.MetricName ||
			in.Statistic != "" && a.Statistic != in.Statistic ||
			in.ExtendedStatistic != "" && a.ExtendedStatistic != in.ExtendedStatistic ||
			in.Period != nil && a.Period != *in.Period ||
			in.Unit != "" && a.Unit != in.Unit ||
			!sameDimensions(a.Dimensions, in.Dimensions) {
			continue
		}
		out.MetricAlarms = append(out.MetricAlarms, a.output(s.alarmARN(account, a.Name)))
	}
	return out, nil
}

// sameDimensions: the same set of name/value pairs, in any order.
func sameDimensions(a, b []Dimension) bool {
	if len(a) != len(b) {
		return false
	}
	for _, d := range a {
		if !slices.Contains(b, d) {
			return false
		}
	}
	return true
}

func checkAlarmNames(names []string) error {
	var v violations
	v.required(names != nil, "alarmNames")
	v.listMax(len(names), "["+strings.Join(names, ", ")+"]", "alarmNames", maxDeleteAlarms)
	for i, n := range names {
		v.length(&n, fmt.Sprintf("alarmNames.%d.member", i+1), 1, 255)
	}
	return v.err()
}

// deleteAlarms deletes every named alarm, or none when one does not exist.
func (s *Service) deleteAlarms(ctx context.Context, in *AlarmNamesInput) (*EmptyOutput, error) {
	if err := checkAlarmNames(in.AlarmNames); err != nil {
		return nil, err
	}
	account := s.ownerOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range in.AlarmNames {
		a, err := s.current(ctx, s.alarmKey(account, n))
		if err != nil {
			return nil, s.internal(ctx, "read alarm", err)
		}
		if a == nil {
			return nil, errResourceNotFound
		}
	}
	now := s.now()
	for _, n := range dedupe(in.AlarmNames) {
		k := s.alarmKey(account, n)
		a := s.alarms[k]
		if err := s.records.DeleteRecord(ctx, kindAlarm, k); err != nil {
			return nil, s.internal(ctx, "delete alarm", err)
		}
		delete(s.alarms, k)
		s.recordConfig(ctx, "Delete", a, nil, now)
	}
	if len(s.alarms) == 0 {
		s.disarm()
	}
	return &EmptyOutput{}, nil
}

func (s *Service) enableAlarmActions(ctx context.Context, in *AlarmNamesInput) (*EmptyOutput, error) {
	return s.setActionsEnabled(ctx, in, true)
}

func (s *Service) disableAlarmActions(ctx context.Context, in *AlarmNamesInput) (*EmptyOutput, error) {
	return s.setActionsEnabled(ctx, in, false)
}

// setActionsEnabled switches the named alarms' actions; names of no alarm
// are passed over, as CloudWatch does.
func (s *Service) setActionsEnabled(ctx context.Context, in *AlarmNamesInput, on bool) (*EmptyOutput, error) {
	if err := checkAlarmNames(in.AlarmNames); err != nil {
		return nil, err
	}
	account := s.ownerOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range in.AlarmNames {
		k := s.alarmKey(account, n)
		err := retryRaces(func() error {
			a, err := s.current(ctx, k)
			if err != nil {
				return s.internal(ctx, "read alarm", err)
			}
			if a == nil || a.ActionsEnabled == on {
				return nil
			}
			c := *a
			c.ActionsEnabled = on
			if err := s.save(ctx, &c); err != nil {
				if err == errLostRace {
					return err
				}
				return s.internal(ctx, "set alarm actions", err)
			}
			s.alarms[k] = &c
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return &EmptyOutput{}, nil
}

// setAlarmState sets the state until the next evaluation, and runs the
// actions of the new state when it differs from the old.
func (s *Service) setAlarmState(ctx context.Context, in *SetAlarmStateInput) (*EmptyOutput, error) {
	var v violations
	v.required(in.AlarmName != "", "alarmName")
	v.length(nonEmpty(in.AlarmName), "alarmName", 1, 255)
	v.required(in.StateValue != "", "stateValue")
	v.enum(in.StateValue, "stateValue", stateValues)
	v.required(in.StateReason != nil, "stateReason")
	v.length(in.StateReason, "stateReason", 0, 1023)
	v.length(in.StateReasonData, "stateReasonData", 0, 4000)
	if err := v.err(); err != nil {
		return nil, err
	}
	var data string
	if in.StateReasonData != nil && *in.StateReasonData != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(*in.StateReasonData), &obj); err != nil || obj == nil {
			return nil, errInvalidFormat.WithMessage("Invalid JSON in StateReasonData: %s", *in.StateReasonData)
		}
		data = *in.StateReasonData
	}
	now := s.now()
	s.mu.Lock()
	var ch *change
	err := retryRaces(func() error {
		a, err := s.current(ctx, s.alarmKey(s.ownerOf(ctx), in.AlarmName))
		if err != nil {
			return s.internal(ctx, "read alarm", err)
		}
		if a == nil {
			return errResourceNotFound
		}
		ch, err = s.transition(ctx, a, in.StateValue, *in.StateReason, data, now)
		if err != nil && err != errLostRace {
			return s.internal(ctx, "set alarm state", err)
		}
		return err
	})
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if ch != nil {
		s.runActions(ctx, ch)
	}
	return &EmptyOutput{}, nil
}
