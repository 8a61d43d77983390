package console

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/topology"
)

// call runs actions as account (topology.CallFunc).
func (c *Console) call(account string) topology.CallFunc {
	return func(ctx context.Context, service, action string, in, out any) error {
		return c.b.Invoke(ctx, account, service, action, in, out)
	}
}

type failureView struct {
	At       string `json:"at"`
	Status   int    `json:"status"`
	Error    string `json:"error"`
	Endpoint string `json:"endpoint"`
}

type subscriptionView struct {
	ARN                 string        `json:"arn"`
	Protocol            string        `json:"protocol"`
	Endpoint            string        `json:"endpoint"`
	Pending             bool          `json:"pending"`
	RawDelivery         bool          `json:"rawDelivery"`
	FilterPolicy        *string       `json:"filterPolicy"`
	DeadLetterTargetARN *string       `json:"deadLetterTargetArn"`
	Delivered           int64         `json:"delivered"`
	Failed              int64         `json:"failed"`
	Retried             int64         `json:"retried"`
	DeadLettered        int64         `json:"deadLettered"`
	RecentFailures      []failureView `json:"recentFailures"`
}

type topicView struct {
	ARN           string             `json:"arn"`
	Name          string             `json:"name"`
	FIFO          bool               `json:"fifo"`
	Attributes    map[string]string  `json:"attributes"`
	Subscriptions []subscriptionView `json:"subscriptions"`
}

func (c *Console) topics(w http.ResponseWriter, r *http.Request, a *access) {
	ctx := r.Context()
	arns, err := topology.TopicARNs(ctx, c.call(a.account))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	sort.Strings(arns)
	out := struct {
		Topics []topicView `json:"topics"`
	}{Topics: make([]topicView, 0, len(arns))}
	for _, topicARN := range arns {
		var attrs struct{ Attributes map[string]string }
		if err := c.b.Invoke(ctx, a.account, "sns", "GetTopicAttributes", map[string]any{"TopicArn": topicARN}, &attrs); err != nil {
			c.fail(w, r, err)
			return
		}
		name := topicARN[strings.LastIndexByte(topicARN, ':')+1:]
		t := topicView{ARN: topicARN, Name: name, FIFO: strings.HasSuffix(name, ".fifo"), Attributes: attrs.Attributes,
			Subscriptions: []subscriptionView{}}
		subs, err := topology.Subscriptions(ctx, c.call(a.account), topicARN)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, e := range subs {
			sv, err := c.subscription(ctx, a.account, e)
			if err != nil {
				c.fail(w, r, err)
				return
			}
			t.Subscriptions = append(t.Subscriptions, sv)
		}
		out.Topics = append(out.Topics, t)
	}
	writeJSON(w, http.StatusOK, out)
}

// subscription is e with its attributes and delivery counts; a pending
// one has neither (its ARN is "PendingConfirmation").
func (c *Console) subscription(ctx context.Context, account string, e topology.SubscriptionEntry) (subscriptionView, error) {
	sv := subscriptionView{ARN: e.SubscriptionArn, Protocol: e.Protocol, Endpoint: e.Endpoint, RecentFailures: []failureView{}}
	if !strings.HasPrefix(e.SubscriptionArn, "arn:") {
		sv.Pending = true
		return sv, nil
	}
	var attrs struct{ Attributes map[string]string }
	if err := c.b.Invoke(ctx, account, "sns", "GetSubscriptionAttributes", map[string]any{"SubscriptionArn": e.SubscriptionArn}, &attrs); err != nil {
		return sv, err
	}
	sv.Pending = attrs.Attributes["PendingConfirmation"] == "true"
	sv.RawDelivery = attrs.Attributes["RawMessageDelivery"] == "true"
	if p, ok := attrs.Attributes["FilterPolicy"]; ok {
		sv.FilterPolicy = &p
	}
	if rp := attrs.Attributes["RedrivePolicy"]; rp != "" {
		var p struct {
			Target string `json:"deadLetterTargetArn"`
		}
		if json.Unmarshal([]byte(rp), &p) == nil && p.Target != "" {
			sv.DeadLetterTargetARN = &p.Target
		}
	}
	if n, ok := c.b.SubscriptionCounters(e.SubscriptionArn); ok {
		sv.Delivered, sv.Failed, sv.Retried, sv.DeadLettered = n.Delivered, n.Failed, n.Retried, n.DeadLettered
		for _, f := range n.RecentFailures {
			sv.RecentFailures = append(sv.RecentFailures, failureView{At: timeString(f.At), Status: f.Status, Error: f.Error, Endpoint: f.Endpoint})
		}
	}
	return sv, nil
}

// epoch is a timestamp of an action's JSON output: epoch seconds.
type epoch struct{ time.Time }

func (e *epoch) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if s, err := strconv.Unquote(string(b)); err == nil {
		t, perr := time.Parse(time.RFC3339Nano, s)
		e.Time = t
		return perr
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("timestamp %s: %w", b, err)
	}
	sec, frac := math.Modf(f)
	e.Time = time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond)).UTC()
	return nil
}

// metricAlarm is an alarm as DescribeAlarms lists it.
type metricAlarm struct {
	AlarmName, AlarmArn                              string
	StateValue, StateReason                          string
	StateUpdatedTimestamp                            epoch
	Namespace, MetricName, Statistic                 string
	Dimensions                                       []struct{ Name, Value string }
	Period, EvaluationPeriods                        int
	Threshold                                        *float64
	ComparisonOperator                               string
	OKActions, AlarmActions, InsufficientDataActions []string
}

// describeAlarms lists account's metric alarms (every page).
func (c *Console) describeAlarms(ctx context.Context, account string) ([]metricAlarm, error) {
	var all []metricAlarm
	token := ""
	for {
		in := map[string]any{}
		if token != "" {
			in["NextToken"] = token
		}
		var page struct {
			MetricAlarms []metricAlarm
			NextToken    string
		}
		if err := c.b.Invoke(ctx, account, "monitoring", "DescribeAlarms", in, &page); err != nil {
			return nil, fmt.Errorf("DescribeAlarms: %w", err)
		}
		all = append(all, page.MetricAlarms...)
		if token = page.NextToken; token == "" {
			return all, nil
		}
	}
}

// alarmHistoryLen is how many history items an alarm shows.
const alarmHistoryLen = 20

type alarmHistoryView struct {
	At      string `json:"at"`
	Type    string `json:"type"`
	Summary string `json:"summary"`
}

type alarmView struct {
	Name               string             `json:"name"`
	ARN                string             `json:"arn"`
	State              string             `json:"state"`
	StateReason        string             `json:"stateReason"`
	StateUpdated       *string            `json:"stateUpdated"`
	Namespace          string             `json:"namespace"`
	MetricName         string             `json:"metricName"`
	Dimensions         map[string]string  `json:"dimensions"`
	Statistic          string             `json:"statistic"`
	Period             int                `json:"period"`
	EvaluationPeriods  int                `json:"evaluationPeriods"`
	Threshold          *float64           `json:"threshold"`
	ComparisonOperator string             `json:"comparisonOperator"`
	Actions            []string           `json:"actions"`
	History            []alarmHistoryView `json:"history"`
}

func (c *Console) alarms(w http.ResponseWriter, r *http.Request, a *access) {
	ctx := r.Context()
	alarms, err := c.describeAlarms(ctx, a.account)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	out := struct {
		Alarms []alarmView `json:"alarms"`
	}{Alarms: make([]alarmView, 0, len(alarms))}
	for _, al := range alarms {
		v := alarmView{Name: al.AlarmName, ARN: al.AlarmArn, State: al.StateValue, StateReason: al.StateReason,
			StateUpdated: optTime(al.StateUpdatedTimestamp.Time), Namespace: al.Namespace, MetricName: al.MetricName,
			Dimensions: map[string]string{}, Statistic: al.Statistic, Period: al.Period, EvaluationPeriods: al.EvaluationPeriods,
			Threshold: al.Threshold, ComparisonOperator: al.ComparisonOperator, History: []alarmHistoryView{}}
		for _, d := range al.Dimensions {
			v.Dimensions[d.Name] = d.Value
		}
		v.Actions = append(append(append([]string{}, al.AlarmActions...), al.OKActions...), al.InsufficientDataActions...)
		var hist struct {
			AlarmHistoryItems []struct {
				Timestamp       epoch
				HistoryItemType string
				HistorySummary  string
			}
		}
		if err := c.b.Invoke(ctx, a.account, "monitoring", "DescribeAlarmHistory",
			map[string]any{"AlarmName": al.AlarmName, "MaxRecords": alarmHistoryLen}, &hist); err != nil {
			c.fail(w, r, err)
			return
		}
		for _, h := range hist.AlarmHistoryItems {
			v.History = append(v.History, alarmHistoryView{At: timeString(h.Timestamp.Time), Type: h.HistoryItemType, Summary: h.HistorySummary})
		}
		out.Alarms = append(out.Alarms, v)
	}
	writeJSON(w, http.StatusOK, out)
}
