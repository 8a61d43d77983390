package cloudwatch

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Limits of the CloudWatch API.
const (
	maxAlarms          = 10000 // metric alarms per account and region
	maxActions         = 5     // per state
	maxDimensions      = 30
	maxTags            = 50
	maxDescribeRecords = 100
	maxDeleteAlarms    = 100
	maxDayPeriods      = 24 * 60 * 60     // Period × EvaluationPeriods below an hour's period
	maxWeekPeriods     = 7 * 24 * 60 * 60 // ... and from an hour's period up
)

// percentile matches the percentile statistics (p0.0 to p100).
var percentile = regexp.MustCompile(`^p(\d{1,2}(\.\d{0,10})?|100(\.0{0,10})?)$`)

// checkDimensions validates a metric's dimensions at field.
func checkDimensions(v *violations, dims []Dimension, field string) {
	v.listMax(len(dims), fmt.Sprint(len(dims))+" dimensions", field, maxDimensions)
	for i, d := range dims {
		f := fmt.Sprintf("%s.%d.member", field, i+1)
		v.required(d.Name != "", f+".name")
		v.length(nonEmpty(d.Name), f+".name", 1, 255)
		v.required(d.Value != "", f+".value")
		v.length(nonEmpty(d.Value), f+".value", 1, 1024)
	}
}

// checkDistinctDimensions refuses a dimension named twice, as CloudWatch
// does.
func checkDistinctDimensions(dims []Dimension) error {
	seen := map[string]bool{}
	for _, d := range dims {
		if seen[d.Name] {
			return invalidValue("No Metric may specify the same dimension name twice.")
		}
		seen[d.Name] = true
	}
	return nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// checkNamespace: 1–255 characters, not starting with a colon.
func checkNamespace(v *violations, ns *string, field string) {
	v.length(ns, field, 1, 255)
	if ns != nil && strings.HasPrefix(*ns, ":") {
		v.add(ns, field, "Member must satisfy regular expression pattern: [^:].*")
	}
}

// validatePut checks a PutMetricAlarm request and returns the alarm it
// describes (configuration only; the caller sets state and times).
func (s *Service) validatePut(in *PutMetricAlarmInput, account string) (*alarm, error) {
	var v violations
	v.required(in.AlarmName != "", "alarmName")
	v.length(nonEmpty(in.AlarmName), "alarmName", 1, 255)
	v.length(in.AlarmDescription, "alarmDescription", 0, 1024)
	for _, l := range []struct {
		field string
		arns  []string
	}{{"oKActions", in.OKActions}, {"alarmActions", in.AlarmActions}, {"insufficientDataActions", in.InsufficientDataActions}} {
		v.listMax(len(l.arns), "["+strings.Join(l.arns, ", ")+"]", l.field, maxActions)
		for i, a := range l.arns {
			v.length(&a, fmt.Sprintf("%s.%d.member", l.field, i+1), 1, 1024)
		}
	}
	v.length(nonEmpty(in.MetricName), "metricName", 1, 255)
	checkNamespace(&v, nonEmpty(in.Namespace), "namespace")
	v.enum(in.Statistic, "statistic", statistics)
	checkDimensions(&v, in.Dimensions, "dimensions")
	v.min(in.Period, "period", 1)
	v.enum(in.Unit, "unit", standardUnits)
	v.required(in.EvaluationPeriods != nil, "evaluationPeriods")
	v.min(in.EvaluationPeriods, "evaluationPeriods", 1)
	v.min(in.DatapointsToAlarm, "datapointsToAlarm", 1)
	v.required(in.ComparisonOperator != "", "comparisonOperator")
	v.enum(in.ComparisonOperator, "comparisonOperator", comparisonOperators)
	v.length(nonEmpty(in.TreatMissingData), "treatMissingData", 1, 255)
	v.length(nonEmpty(in.EvaluateLowSampleCountPercentile), "evaluateLowSampleCountPercentile", 1, 255)
	v.length(nonEmpty(in.ThresholdMetricId), "thresholdMetricId", 1, 255)
	checkTags(&v, in.Tags)
	if err := v.err(); err != nil {
		return nil, err
	}

	// Checks beyond the model's constraints, in CloudWatch's words.
	if in.ComparisonOperator != "" && !slices.Contains(comparisonOperators[:4], in.ComparisonOperator) && in.ThresholdMetricId == "" {
		return nil, validation("Comparison operators for ranges require ThresholdMetricId to be set")
	}
	if in.ThresholdMetricId != "" || len(in.Metrics) > 0 {
		// Metric math and anomaly detection bands are not evaluated by Ferry.
		return nil, validation("Metric math alarms (Metrics, ThresholdMetricId) are not supported; give MetricName, Namespace, Statistic and Period.")
	}
	switch {
	case in.MetricName == "":
		return nil, validation("MetricName must be set.")
	case in.Namespace == "":
		return nil, validation("Namespace must be set.")
	case in.Period == nil:
		return nil, validation("Period must be set.")
	case in.Statistic == "" && in.ExtendedStatistic == "":
		return nil, validation("One of Statistic or ExtendedStatistic must be set.")
	case in.Statistic != "" && in.ExtendedStatistic != "":
		return nil, validation("Statistic and ExtendedStatistic cannot both be set.")
	case in.Threshold == nil:
		return nil, validation("Threshold must be set.")
	}
	if in.ExtendedStatistic != "" && !percentile.MatchString(in.ExtendedStatistic) {
		return nil, invalidValue("The value %s for parameter ExtendedStatistic is not supported.", in.ExtendedStatistic)
	}
	if err := checkDistinctDimensions(in.Dimensions); err != nil {
		return nil, err
	}
	period := *in.Period
	if !validPeriod(period) {
		return nil, validation("Period must be 10, 20, 30 or a multiple of 60")
	}
	n := *in.EvaluationPeriods
	limit := int64(maxDayPeriods)
	if period >= 3600 {
		limit = maxWeekPeriods
	}
	if int64(period)*int64(n) > limit {
		if limit == maxDayPeriods {
			return nil, validation("Metrics cannot be checked across more than a day (EvaluationPeriods * Period must be <= 86400)")
		}
		return nil, validation("Metrics cannot be checked across more than 7 days (EvaluationPeriods * Period must be <= 604800)")
	}
	if in.DatapointsToAlarm != nil && *in.DatapointsToAlarm > n {
		return nil, validation("DatapointsToAlarm must be less than or equal to EvaluationPeriods")
	}
	if in.TreatMissingData != "" && !slices.Contains(treatMissingValues, in.TreatMissingData) {
		return nil, validation("Option %s is not supported. Supported options for parameter TreatMissingData are: [missing, ignore, breaching, notBreaching].", in.TreatMissingData)
	}
	if p := in.EvaluateLowSampleCountPercentile; p != "" && p != "evaluate" && p != "ignore" {
		return nil, validation("Option %s is not supported. Supported options for parameter EvaluateLowSampleCountPercentile are evaluate and ignore.", p)
	}
	threshold := *in.Threshold
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return nil, invalidValue("The value %s for parameter Threshold is invalid.", formatDouble(threshold))
	}
	for _, arns := range [][]string{in.OKActions, in.AlarmActions, in.InsufficientDataActions} {
		for _, a := range arns {
			if err := s.checkAction(a, account); err != nil {
				return nil, err
			}
		}
	}
	a := &alarm{
		Name:                             in.AlarmName,
		Description:                      in.AlarmDescription,
		ActionsEnabled:                   in.ActionsEnabled == nil || *in.ActionsEnabled,
		OKActions:                        dedupe(in.OKActions),
		AlarmActions:                     dedupe(in.AlarmActions),
		InsufficientDataActions:          dedupe(in.InsufficientDataActions),
		Namespace:                        in.Namespace,
		MetricName:                       in.MetricName,
		Dimensions:                       in.Dimensions,
		Statistic:                        in.Statistic,
		ExtendedStatistic:                in.ExtendedStatistic,
		Period:                           period,
		Unit:                             in.Unit,
		EvaluationPeriods:                n,
		Threshold:                        threshold,
		ComparisonOperator:               in.ComparisonOperator,
		TreatMissingData:                 in.TreatMissingData,
		EvaluateLowSampleCountPercentile: in.EvaluateLowSampleCountPercentile,
		Tags:                             in.Tags,
	}
	if in.DatapointsToAlarm != nil {
		a.DatapointsToAlarm = *in.DatapointsToAlarm
	}
	return a, nil
}

// validPeriod: 10, 20 or 30 seconds (high resolution), or whole minutes.
func validPeriod(p int32) bool {
	return p == 10 || p == 20 || p == 30 || (p > 0 && p%60 == 0)
}

// checkAction accepts an SNS topic ARN of the alarm's account and region: the
// only action Ferry can carry out. CloudWatch's other actions (Auto
// Scaling, EC2, Systems Manager, Lambda) are refused rather than accepted
// and never run.
func (s *Service) checkAction(arn, owner string) error {
	account, reg := s.split(owner)
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] == "" {
		return validation("Invalid arn syntax: %s", arn)
	}
	if parts[2] != "sns" {
		return validation("The action %s is not supported: Ferry's alarms notify SNS topics only.", arn)
	}
	if parts[3] != reg || parts[4] != account || parts[5] == "" || strings.Contains(parts[5], ":") {
		return validation("Invalid region or account in SNS action %s: expected a topic of %s in %s.", arn, account, reg)
	}
	return nil
}

func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func checkTags(v *violations, tags []Tag) {
	for i, t := range tags {
		f := fmt.Sprintf("tags.%d.member", i+1)
		v.required(t.Key != "", f+".key")
		v.length(nonEmpty(t.Key), f+".key", 1, 128)
		v.length(&t.Value, f+".value", 0, 256)
	}
}

// checkExtendedStatistic validates a percentile of GetMetricStatistics.
func checkExtendedStatistic(st string) error {
	if !percentile.MatchString(st) {
		return invalidValue("The value %s for parameter ExtendedStatistics is not supported.", st)
	}
	return nil
}
