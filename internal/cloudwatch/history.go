package cloudwatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// History bounds: CloudWatch keeps 30 days; Ferry also caps the count so
// that a flapping alarm cannot grow memory without end.
const (
	historyRetention = 30 * 24 * time.Hour
	maxHistory       = 20000
)

// historyItem is one entry of an alarm's history, stored as JSON.
type historyItem struct {
	key       string
	AlarmName string `json:"alarmName"`
	// Account is the alarm's, as the alarm stores it ("" for the
	// configured account).
	Account   string    `json:"account,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Summary   string    `json:"summary"`
	Data      string    `json:"data"`
}

// addHistory makes an item durable and keeps it. A failed write is logged:
// the change it describes is already durable. The caller holds mu.
func (s *Service) addHistory(ctx context.Context, h historyItem) {
	s.seq++
	h.key = fmt.Sprintf("%020d-%010d", h.Timestamp.UnixNano(), s.seq%1e10)
	if s.node != "" {
		// Nodes sharing a store count apart: the node tells their keys apart.
		h.key += "-" + s.node
	}
	b, err := json.Marshal(h)
	if err == nil {
		err = s.records.PutRecord(ctx, kindHistory, h.key, b)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "cloudwatch: record alarm history", "alarm", h.AlarmName, "err", err)
	}
	if n := len(s.history); s.cluster != nil && n > 0 && s.history[n-1].key > h.key {
		// Items other nodes made may be newer: the history stays in key
		// order, which rereadHistory searches.
		i := sort.Search(n, func(i int) bool { return s.history[i].key > h.key })
		s.history = append(s.history, historyItem{})
		copy(s.history[i+1:], s.history[i:])
		s.history[i] = h
	} else {
		s.history = append(s.history, h)
	}
	if err := s.pruneHistory(ctx, h.Timestamp); err != nil {
		s.log.ErrorContext(ctx, "cloudwatch: prune alarm history", "err", err)
	}
}

// pruneHistory drops the items older than the retention and those beyond
// the cap, oldest first. The caller holds mu (or is New).
func (s *Service) pruneHistory(ctx context.Context, now time.Time) error {
	cut := now.Add(-historyRetention)
	n := 0
	for n < len(s.history) && (s.history[n].Timestamp.Before(cut) || len(s.history)-n > maxHistory) {
		if err := s.records.DeleteRecord(ctx, kindHistory, s.history[n].key); err != nil {
			s.history = s.history[n:]
			return err
		}
		n++
	}
	// Re-slicing (no copy) keeps appends amortised; the dropped front is
	// freed when append next reallocates.
	s.history = s.history[n:]
	return nil
}

// historyAlarm is an alarm's configuration as history data shows it.
type historyAlarm struct {
	Dimensions                         []historyDimension `json:"dimensions"`
	MetricName                         string             `json:"metricName"`
	Namespace                          string             `json:"namespace"`
	OKActions                          []string           `json:"okactions"`
	ComparisonOperator                 string             `json:"comparisonOperator"`
	Threshold                          javaDouble         `json:"threshold"`
	Period                             int32              `json:"period"`
	EvaluationPeriods                  int32              `json:"evaluationPeriods"`
	DatapointsToAlarm                  int32              `json:"datapointsToAlarm,omitempty"`
	InsufficientDataActions            []string           `json:"insufficientDataActions"`
	AlarmActions                       []string           `json:"alarmActions"`
	ActionsEnabled                     bool               `json:"actionsEnabled"`
	AlarmName                          string             `json:"alarmName"`
	AlarmArn                           string             `json:"alarmArn"`
	AlarmDescription                   *string            `json:"alarmDescription,omitempty"`
	AlarmConfigurationUpdatedTimestamp string             `json:"alarmConfigurationUpdatedTimestamp"`
	StateValue                         string             `json:"stateValue"`
	StateReason                        string             `json:"stateReason"`
	StateUpdatedTimestamp              string             `json:"stateUpdatedTimestamp"`
	Statistic                          string             `json:"statistic,omitempty"`
	ExtendedStatistic                  string             `json:"extendedStatistic,omitempty"`
	Unit                               string             `json:"unit,omitempty"`
	TreatMissingData                   string             `json:"treatMissingData,omitempty"`
	EvaluateLowSampleCountPercentile   string             `json:"evaluateLowSampleCountPercentile,omitempty"`
}

type historyDimension struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s *Service) historyAlarm(a *alarm) historyAlarm {
	h := historyAlarm{
		Dimensions: []historyDimension{}, MetricName: a.MetricName, Namespace: a.Namespace, OKActions: nonNil(a.OKActions),
		ComparisonOperator: a.ComparisonOperator, Threshold: javaDouble(a.Threshold), Period: a.Period,
		EvaluationPeriods: a.EvaluationPeriods, DatapointsToAlarm: a.DatapointsToAlarm,
		InsufficientDataActions: nonNil(a.InsufficientDataActions), AlarmActions: nonNil(a.AlarmActions),
		ActionsEnabled: a.ActionsEnabled, AlarmName: a.Name, AlarmArn: s.alarmARN(s.ownerOfAlarm(a), a.Name), AlarmDescription: a.Description,
		AlarmConfigurationUpdatedTimestamp: cwTime(a.ConfigUpdated), StateValue: a.State, StateReason: a.StateReason,
		StateUpdatedTimestamp: cwTime(a.StateUpdated), Statistic: a.Statistic, ExtendedStatistic: a.ExtendedStatistic,
		Unit: a.Unit, TreatMissingData: a.TreatMissingData, EvaluateLowSampleCountPercentile: a.EvaluateLowSampleCountPercentile,
	}
	for _, d := range a.Dimensions {
		h.Dimensions = append(h.Dimensions, historyDimension{Name: d.Name, Value: d.Value})
	}
	return h
}

// recordConfig records a ConfigurationUpdate: kind is Create, Update or
// Delete; old is nil on Create, cur nil on Delete. The caller holds mu.
func (s *Service) recordConfig(ctx context.Context, kind string, old, cur *alarm, now time.Time) {
	doc := map[string]any{"type": kind, "version": "1.0"}
	var name, verb, account string
	switch kind {
	case "Create":
		name, verb, account = cur.Name, "created", cur.Account
		doc["createdAlarm"] = s.historyAlarm(cur)
	case "Update":
		name, verb, account = cur.Name, "updated", cur.Account
		before, after := toMap(s.historyAlarm(old)), toMap(s.historyAlarm(cur))
		changed := map[string]any{}
		for k, v := range before {
			if fmt.Sprint(after[k]) != fmt.Sprint(v) {
				changed[k] = v
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				changed[k] = nil
			}
		}
		doc["originalUpdatedFields"] = changed
		doc["updatedAlarm"] = s.historyAlarm(cur)
	default:
		name, verb, account = old.Name, "deleted", old.Account
		doc["deletedAlarm"] = s.historyAlarm(old)
	}
	b, _ := json.Marshal(doc)
	s.addHistory(ctx, historyItem{AlarmName: name, Account: account, Timestamp: now, Type: "ConfigurationUpdate",
		Summary: fmt.Sprintf("Alarm %q %s", name, verb), Data: string(b)})
}

// toMap turns a document into a map, keeping numbers as written (1.0).
func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	_ = dec.Decode(&m)
	return m
}

// historyState is one side of a StateUpdate's data.
type historyState struct {
	StateValue      string          `json:"stateValue"`
	StateReason     string          `json:"stateReason"`
	StateReasonData json.RawMessage `json:"stateReasonData,omitempty"`
}

func stateOf(a *alarm) historyState {
	h := historyState{StateValue: a.State, StateReason: a.StateReason}
	if a.StateReasonData != "" && json.Valid([]byte(a.StateReasonData)) {
		h.StateReasonData = json.RawMessage(a.StateReasonData)
	}
	return h
}

// recordState records a StateUpdate from old to cur. The caller holds mu.
func (s *Service) recordState(ctx context.Context, old, cur *alarm, now time.Time) {
	b, _ := json.Marshal(struct {
		Version  string       `json:"version"`
		OldState historyState `json:"oldState"`
		NewState historyState `json:"newState"`
	}{"1.0", stateOf(old), stateOf(cur)})
	s.addHistory(ctx, historyItem{AlarmName: cur.Name, Account: cur.Account, Timestamp: now, Type: "StateUpdate",
		Summary: fmt.Sprintf("Alarm updated from %s to %s", old.State, cur.State), Data: string(b)})
}

// recordAction records the outcome of one action of the state change at
// at (the action runs at once, so the item carries the change's time).
func (s *Service) recordAction(ctx context.Context, a *alarm, arn, message string, at time.Time, failure error) {
	doc := struct {
		ActionState          string `json:"actionState"`
		StateUpdateTimestamp int64  `json:"stateUpdateTimestamp"`
		NotificationResource string `json:"notificationResource"`
		PublishedMessage     string `json:"publishedMessage,omitempty"`
		Error                string `json:"error,omitempty"`
	}{"Succeeded", at.UnixMilli(), arn, message, ""}
	summary := "Successfully executed action " + arn
	if failure != nil {
		doc.ActionState, doc.PublishedMessage, doc.Error = "Failed", "", failure.Error()
		summary = "Failed to execute action " + arn + ". Received error: " + strconv.Quote(failure.Error())
	}
	b, _ := json.Marshal(doc)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addHistory(ctx, historyItem{AlarmName: a.Name, Account: a.Account, Timestamp: at, Type: "Action", Summary: summary, Data: string(b)})
}

func (s *Service) describeAlarmHistory(ctx context.Context, in *DescribeAlarmHistoryInput) (*DescribeAlarmHistoryOutput, error) {
	var v violations
	v.length(in.AlarmName, "alarmName", 1, 255)
	for i, t := range in.AlarmTypes {
		v.enum(t, fmt.Sprintf("alarmTypes.%d.member", i+1), alarmTypes)
	}
	v.enum(in.HistoryItemType, "historyItemType", historyItemTypes)
	v.min(in.MaxRecords, "maxRecords", 1)
	v.max(in.MaxRecords, "maxRecords", maxDescribeRecords)
	v.enum(in.ScanBy, "scanBy", scanBys)
	if err := v.err(); err != nil {
		return nil, err
	}
	var from, to time.Time
	if in.StartDate != nil {
		from = *in.StartDate
	}
	if in.EndDate != nil {
		to = *in.EndDate
	}
	limit := maxDescribeRecords
	if in.MaxRecords != nil {
		limit = int(*in.MaxRecords)
	}
	offset := 0
	if in.NextToken != "" {
		pos, err := decodeToken(in.NextToken)
		if err != nil {
			return nil, err
		}
		if offset, err = strconv.Atoi(pos); err != nil || offset < 0 {
			return nil, errInvalidNextToken
		}
	}
	out := &DescribeAlarmHistoryOutput{AlarmHistoryItems: []AlarmHistoryItem{}}
	if len(in.AlarmTypes) > 0 && !slices.Contains(in.AlarmTypes, "MetricAlarm") {
		return out, nil
	}
	// Items past the retention are pruned on the next write; until then
	// they are not shown.
	cut := s.clock.Now().Add(-historyRetention)
	account := s.storedOwner(s.ownerOf(ctx))
	s.mu.Lock()
	var match []historyItem
	for _, h := range s.history {
		if h.Timestamp.Before(cut) || h.Account != account ||
			in.AlarmName != nil && h.AlarmName != *in.AlarmName ||
			in.HistoryItemType != "" && h.Type != in.HistoryItemType ||
			!from.IsZero() && h.Timestamp.Before(from) ||
			!to.IsZero() && h.Timestamp.After(to) {
			continue
		}
		match = append(match, h)
	}
	s.mu.Unlock()
	if in.ScanBy != "TimestampAscending" {
		slices.Reverse(match)
	}
	if offset > len(match) {
		return nil, errInvalidNextToken
	}
	match = match[offset:]
	if len(match) > limit {
		match = match[:limit]
		out.NextToken = encodeToken(strconv.Itoa(offset + limit))
	}
	for _, h := range match {
		out.AlarmHistoryItems = append(out.AlarmHistoryItems, AlarmHistoryItem{AlarmName: h.AlarmName, AlarmType: "MetricAlarm",
			Timestamp: ptr(h.Timestamp), HistoryItemType: h.Type, HistorySummary: h.Summary, HistoryData: h.Data})
	}
	return out, nil
}
