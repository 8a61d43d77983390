package cloudwatch

import (
	"context"
	"encoding/json"
	"time"
)

// alarm is a metric alarm: its configuration as PutMetricAlarm set it and
// its state. It is stored as JSON under its name.
type alarm struct {
	Name                    string      `json:"name"`
	Description             *string     `json:"description,omitempty"`
	ActionsEnabled          bool        `json:"actionsEnabled"`
	OKActions               []string    `json:"okActions"`
	AlarmActions            []string    `json:"alarmActions"`
	InsufficientDataActions []string    `json:"insufficientDataActions"`
	Namespace               string      `json:"namespace"`
	MetricName              string      `json:"metricName"`
	Dimensions              []Dimension `json:"dimensions"`
	Statistic               string      `json:"statistic,omitempty"`
	ExtendedStatistic       string      `json:"extendedStatistic,omitempty"`
	Period                  int32       `json:"period"`
	Unit                    string      `json:"unit,omitempty"`
	EvaluationPeriods       int32       `json:"evaluationPeriods"`
	// DatapointsToAlarm is 0 when not set (then it is EvaluationPeriods).
	DatapointsToAlarm  int32   `json:"datapointsToAlarm,omitempty"`
	Threshold          float64 `json:"threshold"`
	ComparisonOperator string  `json:"comparisonOperator"`
	// TreatMissingData is "" when not set (then it is "missing").
	TreatMissingData                 string    `json:"treatMissingData,omitempty"`
	EvaluateLowSampleCountPercentile string    `json:"evaluateLowSampleCountPercentile,omitempty"`
	Tags                             []Tag     `json:"tags,omitempty"`
	ConfigUpdated                    time.Time `json:"configUpdated"`

	State             string    `json:"state"`
	StateReason       string    `json:"stateReason"`
	StateReasonData   string    `json:"stateReasonData,omitempty"`
	StateUpdated      time.Time `json:"stateUpdated"`
	StateTransitioned time.Time `json:"stateTransitioned"`
}

// m is the number of breaching datapoints that sets off the alarm.
func (a *alarm) m() int {
	if a.DatapointsToAlarm > 0 {
		return int(a.DatapointsToAlarm)
	}
	return int(a.EvaluationPeriods)
}

func (a *alarm) treatMissing() string {
	if a.TreatMissingData == "" {
		return "missing"
	}
	return a.TreatMissingData
}

// actionsFor is the action list of a state.
func (a *alarm) actionsFor(state string) []string {
	switch state {
	case stateAlarm:
		return a.AlarmActions
	case stateOK:
		return a.OKActions
	}
	return a.InsufficientDataActions
}

// output is the alarm as DescribeAlarms shows it.
func (a *alarm) output(arn string) MetricAlarm {
	out := MetricAlarm{
		AlarmName:                          a.Name,
		AlarmArn:                           arn,
		AlarmDescription:                   a.Description,
		AlarmConfigurationUpdatedTimestamp: ptr(a.ConfigUpdated),
		ActionsEnabled:                     a.ActionsEnabled,
		OKActions:                          nonNil(a.OKActions),
		AlarmActions:                       nonNil(a.AlarmActions),
		InsufficientDataActions:            nonNil(a.InsufficientDataActions),
		StateValue:                         a.State,
		StateReason:                        a.StateReason,
		StateReasonData:                    a.StateReasonData,
		StateUpdatedTimestamp:              ptr(a.StateUpdated),
		MetricName:                         a.MetricName,
		Namespace:                          a.Namespace,
		Statistic:                          a.Statistic,
		ExtendedStatistic:                  a.ExtendedStatistic,
		Dimensions:                         nonNil(a.Dimensions),
		Period:                             a.Period,
		Unit:                               a.Unit,
		EvaluationPeriods:                  a.EvaluationPeriods,
		Threshold:                          ptr(a.Threshold),
		ComparisonOperator:                 a.ComparisonOperator,
		TreatMissingData:                   a.TreatMissingData,
		EvaluateLowSampleCountPercentile:   a.EvaluateLowSampleCountPercentile,
		StateTransitionedTimestamp:         ptr(a.StateTransitioned),
	}
	if a.DatapointsToAlarm > 0 {
		out.DatapointsToAlarm = ptr(a.DatapointsToAlarm)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// save makes the alarm durable. The caller holds mu.
func (s *Service) save(ctx context.Context, a *alarm) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.records.PutRecord(ctx, kindAlarm, a.Name, b)
}
