package topology

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path"
	"slices"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/sns"
	"github.com/ferrymq/ferry/internal/sqs"
)

// Export reads the topology of one account in one region through the
// services' actions: its queues, topics with their subscriptions and
// alarms, not their messages. Attributes at their defaults are left out,
// and ARNs of the account's own queues in redrive policies and sqs
// endpoints are written as the queues' names, so that the file is short
// and applying it to an empty Ferry and exporting again gives it back.
// Queues only the services see (SNS's delivery queues) live in an
// account of their own, which no export reads.
func Export(ctx context.Context, c Caller, at Place) (*Topology, error) {
	a := &applier{c: c, account: at.Account, region: at.Region}
	t := &Topology{Account: at.Account, Region: at.Region}
	queues, err := a.exportQueues(ctx)
	if err != nil {
		return nil, err
	}
	t.Queues = queues
	names := map[string]bool{}
	for _, q := range queues {
		names[q.Name] = true
	}
	// local writes an ARN of one of the exported queues as its name.
	local := func(ref string) string {
		if p, ok := arn.Split(ref); ok && p.Service == "sqs" && p.Account == a.account && p.Region == a.region && names[p.Resource] {
			return p.Resource
		}
		return ref
	}
	for i := range t.Queues {
		localRefs(t.Queues[i].Attributes, local)
	}
	if t.Topics, err = a.exportTopics(ctx, local); err != nil {
		return nil, err
	}
	if t.Alarms, err = a.exportAlarms(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// localRefs rewrites the queue ARNs of redrive policies with local.
func localRefs(attrs Attributes, local func(string) string) {
	if v, ok := attrs["RedrivePolicy"]; ok {
		v.Text = editJSON(v.Text, func(doc map[string]any) {
			if s, ok := doc["deadLetterTargetArn"].(string); ok {
				doc["deadLetterTargetArn"] = local(s)
			}
		})
		attrs["RedrivePolicy"] = v
	}
	if v, ok := attrs["RedriveAllowPolicy"]; ok {
		v.Text = editJSON(v.Text, func(doc map[string]any) {
			if l, ok := doc["sourceQueueArns"].([]any); ok {
				for i, s := range l {
					if s, ok := s.(string); ok {
						l[i] = local(s)
					}
				}
			}
		})
		attrs["RedriveAllowPolicy"] = v
	}
}

// settable keeps the attributes a resource may set whose value is not
// the default one.
func settable(current map[string]string, kinds map[string]kind, defaults map[string]string) Attributes {
	attrs := Attributes{}
	for name, v := range current {
		k, ok := kinds[name]
		if !ok {
			continue
		}
		if d, ok := defaults[name]; ok && same(v, d, k) {
			continue
		}
		attrs[name] = Value{Text: v}
	}
	if len(attrs) == 0 {
		return nil
	}
	return attrs
}

func (a *applier) exportQueues(ctx context.Context) ([]Queue, error) {
	var urls []string
	token := ""
	for {
		var page struct {
			QueueUrls []string
			NextToken string
		}
		in := map[string]any{"MaxResults": 1000}
		if token != "" {
			in["NextToken"] = token
		}
		if err := a.call(ctx, "sqs", "ListQueues", in, &page); err != nil {
			return nil, fmt.Errorf("ListQueues: %w", err)
		}
		urls = append(urls, page.QueueUrls...)
		if token = page.NextToken; token == "" {
			break
		}
	}
	queues := make([]Queue, 0, len(urls))
	for _, u := range urls {
		parsed, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("queue URL %q: %w", u, err)
		}
		name := path.Base(parsed.Path)
		var cur struct{ Attributes map[string]string }
		if err := a.call(ctx, "sqs", "GetQueueAttributes", map[string]any{"QueueUrl": u, "AttributeNames": []string{"All"}}, &cur); err != nil {
			return nil, fmt.Errorf("queue %s: GetQueueAttributes: %w", name, err)
		}
		var tags struct{ Tags map[string]string }
		if err := a.call(ctx, "sqs", "ListQueueTags", map[string]any{"QueueUrl": u}, &tags); err != nil {
			return nil, fmt.Errorf("queue %s: ListQueueTags: %w", name, err)
		}
		fifo := same(cur.Attributes["FifoQueue"], "true", kindBool)
		q := Queue{Name: name, Attributes: settable(cur.Attributes, queueAttributes, sqs.DefaultAttributes(fifo))}
		if fifo {
			// A FIFO queue says so, though it is the only thing its name
			// could be: CreateQueue requires it.
			if q.Attributes == nil {
				q.Attributes = Attributes{}
			}
			q.Attributes["FifoQueue"] = Value{Text: "true"}
		}
		if len(tags.Tags) > 0 {
			q.Tags = tags.Tags
		}
		queues = append(queues, q)
	}
	slices.SortFunc(queues, func(x, y Queue) int { return cmp.Compare(x.Name, y.Name) })
	return queues, nil
}

func (a *applier) exportTopics(ctx context.Context, local func(string) string) ([]Topic, error) {
	arns, err := TopicARNs(ctx, a.call)
	if err != nil {
		return nil, err
	}
	topics := make([]Topic, 0, len(arns))
	for _, topicARN := range arns {
		p, _ := arn.Split(topicARN)
		name := p.Resource
		var cur struct{ Attributes map[string]string }
		if err := a.call(ctx, "sns", "GetTopicAttributes", map[string]any{"TopicArn": topicARN}, &cur); err != nil {
			return nil, fmt.Errorf("topic %s: GetTopicAttributes: %w", name, err)
		}
		defaults := map[string]string{
			"Policy": sns.DefaultPolicy(topicARN), "DisplayName": "", "FifoTopic": "false",
			"ContentBasedDeduplication": "false",
		}
		t := Topic{Name: name, Attributes: settable(cur.Attributes, topicAttributes, defaults)}
		var tags struct{ Tags []Tag }
		if err := a.call(ctx, "sns", "ListTagsForResource", map[string]any{"ResourceArn": topicARN}, &tags); err != nil {
			return nil, fmt.Errorf("topic %s: ListTagsForResource: %w", name, err)
		}
		if len(tags.Tags) > 0 {
			t.Tags = tagMap(tags.Tags)
		}
		subs, err := Subscriptions(ctx, a.call, topicARN)
		if err != nil {
			return nil, fmt.Errorf("topic %s: ListSubscriptionsByTopic: %w", name, err)
		}
		for _, e := range subs {
			s := Subscription{Protocol: e.Protocol, Endpoint: e.Endpoint}
			if s.Protocol == "sqs" {
				s.Endpoint = local(s.Endpoint)
			}
			if isARN(e.SubscriptionArn) {
				var cur struct{ Attributes map[string]string }
				if err := a.call(ctx, "sns", "GetSubscriptionAttributes", map[string]any{"SubscriptionArn": e.SubscriptionArn}, &cur); err != nil {
					return nil, fmt.Errorf("topic %s: GetSubscriptionAttributes: %w", name, err)
				}
				defaults := map[string]string{"RawMessageDelivery": "false"}
				if _, ok := cur.Attributes["FilterPolicy"]; ok {
					defaults["FilterPolicyScope"] = "MessageAttributes"
				}
				s.Attributes = settable(cur.Attributes, subscriptionAttributes, defaults)
				localRefs(s.Attributes, local)
			}
			t.Subscriptions = append(t.Subscriptions, s)
		}
		slices.SortFunc(t.Subscriptions, func(x, y Subscription) int {
			return cmp.Or(cmp.Compare(x.Protocol, y.Protocol), cmp.Compare(x.Endpoint, y.Endpoint))
		})
		topics = append(topics, t)
	}
	slices.SortFunc(topics, func(x, y Topic) int { return cmp.Compare(x.Name, y.Name) })
	return topics, nil
}

func (a *applier) exportAlarms(ctx context.Context) ([]Alarm, error) {
	var alarms []Alarm
	token := ""
	for {
		var page struct {
			MetricAlarms []describedAlarm
			NextToken    string
		}
		in := map[string]any{"MaxRecords": 100}
		if token != "" {
			in["NextToken"] = token
		}
		if err := a.call(ctx, "monitoring", "DescribeAlarms", in, &page); err != nil {
			return nil, fmt.Errorf("DescribeAlarms: %w", err)
		}
		for _, d := range page.MetricAlarms {
			al := d.Alarm
			// What PutMetricAlarm takes as its default is left out.
			if al.ActionsEnabled != nil && *al.ActionsEnabled {
				al.ActionsEnabled = nil
			}
			for _, l := range []*[]string{&al.OKActions, &al.AlarmActions, &al.InsufficientDataActions} {
				if len(*l) == 0 {
					*l = nil
				}
			}
			if len(al.Dimensions) == 0 {
				al.Dimensions = nil
			}
			if al.TreatMissingData == "missing" {
				al.TreatMissingData = ""
			}
			var tags struct{ Tags []Tag }
			if err := a.call(ctx, "monitoring", "ListTagsForResource", map[string]any{"ResourceARN": d.AlarmArn}, &tags); err != nil {
				return nil, fmt.Errorf("alarm %s: ListTagsForResource: %w", al.AlarmName, err)
			}
			if len(tags.Tags) > 0 {
				al.Tags = tags.Tags
				slices.SortFunc(al.Tags, func(x, y Tag) int { return cmp.Compare(x.Key, y.Key) })
			}
			alarms = append(alarms, al)
		}
		if token = page.NextToken; token == "" {
			break
		}
	}
	slices.SortFunc(alarms, func(x, y Alarm) int { return cmp.Compare(x.AlarmName, y.AlarmName) })
	return alarms, nil
}
