package cloudwatch

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
)

// alarm is a metric alarm: its configuration as PutMetricAlarm set it and
// its state. It is stored as JSON under its key (Service.key).
type alarm struct {
	Name string `json:"name"`
	// Account is the alarm's owner key (region.Owner: its account and
	// region); "" for the configured account in the home region, so that
	// its records keep the form they always had.
	Account                 string      `json:"account,omitempty"`
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

	// stored is the record this alarm was read from or written as; a
	// change of a copy replaces it only if the store still has it (save).
	// Nil for an alarm not stored yet.
	stored []byte
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

// errLostRace: a change was built on an alarm that another node changed
// (or made, or deleted) before the change was written; save has read the
// alarm again, and the change is built again on it (retryRaces).
var errLostRace = errors.New("cloudwatch: the alarm changed meanwhile")

// maxRaces bounds how often one change is built again.
const maxRaces = 20

// save makes a durable: it inserts a new alarm (a.stored nil), or
// replaces the record a was read from if the store still has it. When the
// store has something else it reads the alarm into memory and returns
// errLostRace. The caller holds mu.
func (s *Service) save(ctx context.Context, a *alarm) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	var ok bool
	if a.stored == nil {
		ok, err = s.records.InsertRecord(ctx, kindAlarm, s.key(a), b)
	} else {
		ok, err = s.records.SwapRecord(ctx, kindAlarm, s.key(a), a.stored, b)
	}
	switch {
	case err != nil:
		return err
	case !ok:
		if _, err := s.reread(ctx, s.key(a)); err != nil {
			return err
		}
		return errLostRace
	}
	a.stored = b
	return nil
}

// retryRaces runs try until it does not lose a race, each time on the
// alarm as save read it. The caller holds mu.
func retryRaces(try func() error) error {
	for attempt := 0; ; attempt++ {
		if err := try(); err != errLostRace || attempt == maxRaces {
			return err
		}
	}
}

// Alarms are per account and region, as the metric series they watch:
// "account" below is an owner key (region.Owner), the account alone in the
// home region. Each alarm is known, in memory and as a record, by its key:
// its name for the configured account in the home region (as before
// accounts were told apart), and for another owner a record separator, the
// owner and the name. CloudWatch's alarm names cannot hold control
// characters, so no name of the configured account takes another's key.
const accountKeyMark = "\x1e"

// alarmKey is the key of account's alarm called name.
func (s *Service) alarmKey(account, name string) string {
	if account == s.account {
		return name
	}
	return accountKeyMark + account + "/" + name
}

// key is a's key.
func (s *Service) key(a *alarm) string { return s.alarmKey(s.ownerOfAlarm(a), a.Name) }

// ownerOfAlarm is a's owner key (region.Owner).
func (s *Service) ownerOfAlarm(a *alarm) string {
	if a.Account == "" {
		return s.account
	}
	return a.Account
}

// storedOwner is an owner key as an alarm stores it ("" for the
// configured account in the home region).
func (s *Service) storedOwner(owner string) string {
	if owner == s.account {
		return ""
	}
	return owner
}

// accountOf is the account the request is served in, as the protocol
// layer decided it (protocol.Auth); the configured account for a call
// that came through no handler.
func (s *Service) accountOf(ctx context.Context) string {
	if a := protocol.Info(ctx).Account; a != "" {
		return a
	}
	return s.account
}

// ownerOf is the key of the request's alarms and metric series: its
// account's, of the region it is served in (region.Owner), as SQS keeps
// the queues whose series they are. An alarm watches its owner's series.
func (s *Service) ownerOf(ctx context.Context) string {
	return region.Owner(s.accountOf(ctx), protocol.Info(ctx).Region, s.region)
}

// split is the account and region of an owner key.
func (s *Service) split(owner string) (account, reg string) { return region.Split(owner, s.region) }

// ownAlarms are the alarms of account, sorted by name. The caller holds mu.
func (s *Service) ownAlarms(account string) []*alarm {
	stored := s.storedOwner(account)
	out := make([]*alarm, 0, len(s.alarms))
	for _, a := range s.sorted() {
		if a.Account == stored {
			out = append(out, a)
		}
	}
	return out
}
