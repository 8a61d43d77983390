package cloudwatch

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// notification is CloudWatch's alarm notification, the message it
// publishes to an SNS topic; members are in CloudWatch's order.
type notification struct {
	AlarmName                          string   `json:"AlarmName"`
	AlarmDescription                   *string  `json:"AlarmDescription"`
	AWSAccountId                       string   `json:"AWSAccountId"`
	AlarmConfigurationUpdatedTimestamp string   `json:"AlarmConfigurationUpdatedTimestamp"`
	NewStateValue                      string   `json:"NewStateValue"`
	NewStateReason                     string   `json:"NewStateReason"`
	StateChangeTime                    string   `json:"StateChangeTime"`
	Region                             string   `json:"Region"`
	AlarmArn                           string   `json:"AlarmArn"`
	OldStateValue                      string   `json:"OldStateValue"`
	OKActions                          []string `json:"OKActions"`
	AlarmActions                       []string `json:"AlarmActions"`
	InsufficientDataActions            []string `json:"InsufficientDataActions"`
	Trigger                            trigger  `json:"Trigger"`
}

type trigger struct {
	MetricName                       string             `json:"MetricName"`
	Namespace                        string             `json:"Namespace"`
	StatisticType                    string             `json:"StatisticType"`
	Statistic                        string             `json:"Statistic"`
	Unit                             *string            `json:"Unit"`
	Dimensions                       []triggerDimension `json:"Dimensions"`
	Period                           int32              `json:"Period"`
	EvaluationPeriods                int32              `json:"EvaluationPeriods"`
	DatapointsToAlarm                *int32             `json:"DatapointsToAlarm,omitempty"`
	ComparisonOperator               string             `json:"ComparisonOperator"`
	Threshold                        javaDouble         `json:"Threshold"`
	TreatMissingData                 string             `json:"TreatMissingData"`
	EvaluateLowSampleCountPercentile string             `json:"EvaluateLowSampleCountPercentile"`
}

// triggerDimension is written value first, as CloudWatch writes it.
type triggerDimension struct {
	Value string `json:"value"`
	Name  string `json:"name"`
}

// message builds the notification of ch.
func (s *Service) message(ch *change) (subject, body string) {
	a := &ch.alarm
	account, reg := s.split(s.ownerOfAlarm(a))
	n := notification{
		AlarmName: a.Name, AlarmDescription: a.Description, AWSAccountId: account,
		AlarmConfigurationUpdatedTimestamp: cwTime(a.ConfigUpdated), NewStateValue: a.State, NewStateReason: a.StateReason,
		StateChangeTime: cwTime(a.StateTransitioned), Region: regionName(reg), AlarmArn: s.alarmARN(s.ownerOfAlarm(a), a.Name),
		OldStateValue: ch.oldState, OKActions: nonNil(a.OKActions), AlarmActions: nonNil(a.AlarmActions),
		InsufficientDataActions: nonNil(a.InsufficientDataActions),
		Trigger: trigger{MetricName: a.MetricName, Namespace: a.Namespace, StatisticType: "Statistic",
			Statistic: strings.ToUpper(a.Statistic), Dimensions: []triggerDimension{}, Period: a.Period,
			EvaluationPeriods: a.EvaluationPeriods, ComparisonOperator: a.ComparisonOperator,
			Threshold: javaDouble(a.Threshold), TreatMissingData: a.TreatMissingData,
			EvaluateLowSampleCountPercentile: a.EvaluateLowSampleCountPercentile},
	}
	if a.ExtendedStatistic != "" {
		n.Trigger.StatisticType, n.Trigger.Statistic = "ExtendedStatistic", a.ExtendedStatistic
	}
	if a.Unit != "" {
		n.Trigger.Unit = &a.Unit
	}
	if a.DatapointsToAlarm > 0 {
		n.Trigger.DatapointsToAlarm = ptr(a.DatapointsToAlarm)
	}
	for _, d := range a.Dimensions {
		n.Trigger.Dimensions = append(n.Trigger.Dimensions, triggerDimension{Value: d.Value, Name: d.Name})
	}
	b, _ := json.Marshal(n) // strings and numbers only: cannot fail
	return subjectOf(a.State, a.Name, regionName(reg)), string(b)
}

// maxSubject is the longest subject SNS takes (fewer than 100 characters).
const maxSubject = 99

// subjectOf is the notification's subject: ALARM: "name" in US East (N. Virginia),
// cut to what SNS accepts.
func subjectOf(state, name, region string) string {
	s := state + `: "` + name + `" in ` + region
	if utf8.RuneCountInString(s) > maxSubject {
		s = string([]rune(s)[:maxSubject])
	}
	return s
}

var errNoNotifier = errors.New("no SNS service to publish to")

// runActions publishes the notification of ch to each of its topics and
// records each outcome in the alarm's history.
func (s *Service) runActions(ctx context.Context, ch *change) {
	if len(ch.actions) == 0 {
		return
	}
	subject, body := s.message(ch)
	for _, arn := range ch.actions {
		err := errNoNotifier
		if s.notifier != nil {
			err = s.notifier.Notify(ctx, arn, subject, body)
		}
		if err != nil {
			s.log.WarnContext(ctx, "cloudwatch: alarm action failed", "alarm", ch.alarm.Name, "action", arn, "err", err)
		}
		s.recordAction(ctx, &ch.alarm, arn, body, ch.alarm.StateTransitioned, err)
	}
}
