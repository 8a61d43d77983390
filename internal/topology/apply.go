package topology

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/protocol"
)

// Caller runs one action of a service in account and region, as a
// request would (protocol.Handler.Invoke): in is written as the action's
// JSON input and its JSON output read into out. service is the SigV4
// name: "sqs", "sns" or "monitoring".
type Caller interface {
	Call(ctx context.Context, account, region, service, action string, in, out any) error
}

// Place is the account and region a topology lands in when its file names
// none: the Ferry's own.
type Place struct {
	Account, Region string
}

// Result tells what Apply changed, one line each ("create queue orders");
// none when the Ferry already held what the file describes.
type Result struct {
	Changes []string
}

// Apply makes the Ferry hold what t describes, through the services'
// actions: it creates what is missing, sets the attributes and tags that
// differ, and leaves the rest alone, so that applying again changes
// nothing, and several nodes of one store may apply the same file at once
// (each action is idempotent, and a race for a creation ends in the
// update path). Queues come first, each dead-letter queue before the
// queues that redrive to it; then topics, each with its subscriptions;
// then alarms, whose actions may name the topics. The first refusal
// stops it with an *Error at the place in the file it concerns.
func Apply(ctx context.Context, c Caller, t *Topology, def Place) (*Result, error) {
	a := &applier{c: c, account: def.Account, region: def.Region, res: &Result{}}
	if t.Account != "" {
		a.account = t.Account
	}
	if t.Region != "" {
		a.region = t.Region
	}
	order, err := queueOrder(t.Queues)
	if err != nil {
		return nil, err
	}
	for _, q := range order {
		if err := a.queue(ctx, q); err != nil {
			return a.res, err
		}
	}
	for i := range t.Topics {
		if err := a.topic(ctx, &t.Topics[i]); err != nil {
			return a.res, err
		}
	}
	for i := range t.Alarms {
		if err := a.alarm(ctx, &t.Alarms[i]); err != nil {
			return a.res, err
		}
	}
	return a.res, nil
}

type applier struct {
	c               Caller
	account, region string
	res             *Result
}

func (a *applier) call(ctx context.Context, service, action string, in, out any) error {
	return a.c.Call(ctx, a.account, a.region, service, action, in, out)
}

func (a *applier) changed(format string, args ...any) {
	a.res.Changes = append(a.res.Changes, fmt.Sprintf(format, args...))
}

// arnOf is the ARN of a queue or topic of the topology's account and
// region.
func (a *applier) arnOf(service, name string) string {
	return arn.ARN{Partition: arn.Partition(a.region), Service: service, Region: a.region, Account: a.account, Resource: name}.String()
}

// queueRef is a queue given by name or ARN, as an ARN.
func (a *applier) queueRef(ref string) string {
	if ref == "" || isARN(ref) {
		return ref
	}
	return a.arnOf("sqs", ref)
}

// fail places the service's refusal of an action: at the attribute its
// message names, if any, else at the entry.
func fail(pos Pos, attrs Attributes, what string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		best := ""
		for name := range attrs {
			if strings.Contains(pe.Message, name) && len(name) > len(best) {
				best = name
			}
		}
		if best != "" {
			pos = attrs[best].Pos
		}
	}
	return &Error{Pos: pos, Msg: what, Err: err}
}

// isCode tells whether err is the service's error with this query code.
func isCode(err error, code string) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == code
}

// resolve writes the attributes' text as the service takes it: queue
// names in redrive policies become their ARNs.
func (a *applier) resolve(attrs Attributes) map[string]string {
	out := make(map[string]string, len(attrs))
	for name, v := range attrs {
		out[name] = v.Text
	}
	if p, ok := out["RedrivePolicy"]; ok {
		out["RedrivePolicy"] = editJSON(p, func(doc map[string]any) {
			if s, ok := doc["deadLetterTargetArn"].(string); ok {
				doc["deadLetterTargetArn"] = a.queueRef(s)
			}
		})
	}
	if p, ok := out["RedriveAllowPolicy"]; ok {
		out["RedriveAllowPolicy"] = editJSON(p, func(doc map[string]any) {
			if l, ok := doc["sourceQueueArns"].([]any); ok {
				for i, s := range l {
					if s, ok := s.(string); ok {
						l[i] = a.queueRef(s)
					}
				}
			}
		})
	}
	return out
}

// editJSON applies fn to policy as a JSON object and writes it again;
// policy is returned as it is when it is not an object (for the service
// to refuse) or when fn changed nothing.
func editJSON(policy string, fn func(map[string]any)) string {
	doc, ok := parseObject(policy)
	if !ok {
		return policy
	}
	before, _ := parseObject(policy)
	fn(doc)
	if reflect.DeepEqual(before, doc) {
		return policy
	}
	return compactJSON(doc)
}

func parseObject(s string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var doc map[string]any
	if dec.Decode(&doc) != nil || doc == nil || dec.More() {
		return nil, false
	}
	return doc, true
}

// compactJSON writes a document as encoding/json does, keys sorted, but
// without escaping <, > and &, which policies may hold.
func compactJSON(doc any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc) // a decoded document always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// same tells whether an attribute's current value is the one wanted, as
// the service means them: booleans in any case, numbers as numbers, JSON
// documents whatever their spacing and key order, with "5" and 5 alike.
func same(current, want string, k kind) bool {
	if current == want {
		return true
	}
	switch k {
	case kindBool:
		return strings.EqualFold(current, want)
	case kindInt:
		x, err1 := strconv.ParseInt(current, 10, 64)
		y, err2 := strconv.ParseInt(want, 10, 64)
		return err1 == nil && err2 == nil && x == y
	case kindJSON:
		var x, y any
		dx, dy := json.NewDecoder(strings.NewReader(current)), json.NewDecoder(strings.NewReader(want))
		dx.UseNumber()
		dy.UseNumber()
		if dx.Decode(&x) != nil || dy.Decode(&y) != nil {
			return false
		}
		return reflect.DeepEqual(scalarsAsText(x), scalarsAsText(y))
	}
	return false
}

// scalarsAsText turns a document's numbers and booleans into text, so
// that 5 and "5" compare equal.
func scalarsAsText(doc any) any {
	switch v := doc.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = scalarsAsText(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = scalarsAsText(e)
		}
		return l
	case nil:
		return nil
	}
	return fmt.Sprint(doc)
}

// differing are the wanted attributes whose current value is another.
func differing(current, want map[string]string, kinds map[string]kind) map[string]string {
	diff := map[string]string{}
	for name, v := range want {
		if !same(current[name], v, kinds[name]) {
			diff[name] = v
		}
	}
	return diff
}

func (a *applier) queue(ctx context.Context, q *Queue) error {
	what := "queue " + q.Name
	attrs := a.resolve(q.Attributes)
	var url struct{ QueueUrl string }
	err := a.call(ctx, "sqs", "GetQueueUrl", map[string]any{"QueueName": q.Name}, &url)
	if isCode(err, "AWS.SimpleQueueService.NonExistentQueue") {
		in := map[string]any{"QueueName": q.Name, "Attributes": attrs}
		if len(q.Tags) > 0 {
			in["tags"] = q.Tags
		}
		err = a.call(ctx, "sqs", "CreateQueue", in, &url)
		if err == nil {
			a.changed("create queue %s", q.Name)
			return nil
		}
		if !isCode(err, "QueueAlreadyExists") {
			return fail(q.Pos, q.Attributes, what+": CreateQueue", err)
		}
		// Another node made it a moment ago, and its attributes are
		// still another's: set them below.
		err = a.call(ctx, "sqs", "GetQueueUrl", map[string]any{"QueueName": q.Name}, &url)
	}
	if err != nil {
		return fail(q.Pos, nil, what+": GetQueueUrl", err)
	}
	var cur struct{ Attributes map[string]string }
	if err := a.call(ctx, "sqs", "GetQueueAttributes", map[string]any{"QueueUrl": url.QueueUrl, "AttributeNames": []string{"All"}}, &cur); err != nil {
		return fail(q.Pos, nil, what+": GetQueueAttributes", err)
	}
	if diff := differing(cur.Attributes, attrs, queueAttributes); len(diff) > 0 {
		if err := a.call(ctx, "sqs", "SetQueueAttributes", map[string]any{"QueueUrl": url.QueueUrl, "Attributes": diff}, nil); err != nil {
			return fail(q.Pos, q.Attributes, what+": SetQueueAttributes", err)
		}
		a.changed("set queue %s: %s", q.Name, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
	}
	if len(q.Tags) == 0 {
		return nil
	}
	var tags struct{ Tags map[string]string }
	if err := a.call(ctx, "sqs", "ListQueueTags", map[string]any{"QueueUrl": url.QueueUrl}, &tags); err != nil {
		return fail(q.Pos, nil, what+": ListQueueTags", err)
	}
	if diff := differentTags(tags.Tags, q.Tags); len(diff) > 0 {
		if err := a.call(ctx, "sqs", "TagQueue", map[string]any{"QueueUrl": url.QueueUrl, "Tags": diff}, nil); err != nil {
			return fail(q.Pos, nil, what+": TagQueue", err)
		}
		a.changed("tag queue %s: %s", q.Name, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
	}
	return nil
}

// differentTags are the wanted tags that are missing or hold another
// value; tags not wanted are left alone.
func differentTags(current, want map[string]string) map[string]string {
	diff := map[string]string{}
	for k, v := range want {
		if old, ok := current[k]; !ok || old != v {
			diff[k] = v
		}
	}
	return diff
}

// tagList is a tag map as SNS and CloudWatch take it, sorted by key.
func tagList(tags map[string]string) []Tag {
	l := make([]Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		l = append(l, Tag{Key: k, Value: tags[k]})
	}
	return l
}

func tagMap(tags []Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[t.Key] = t.Value
	}
	return m
}

func (a *applier) topic(ctx context.Context, t *Topic) error {
	what := "topic " + t.Name
	topicARN := a.arnOf("sns", t.Name)
	attrs := a.resolve(t.Attributes)
	var cur struct{ Attributes map[string]string }
	err := a.call(ctx, "sns", "GetTopicAttributes", map[string]any{"TopicArn": topicARN}, &cur)
	created := false
	if isCode(err, "NotFound") {
		in := map[string]any{"Name": t.Name, "Attributes": attrs}
		if len(t.Tags) > 0 {
			in["Tags"] = tagList(t.Tags)
		}
		err = a.call(ctx, "sns", "CreateTopic", in, nil)
		switch {
		case err == nil:
			a.changed("create topic %s", t.Name)
			created = true
		case isCode(err, "InvalidParameter") && strings.Contains(err.Error(), "already exists"):
			// Another node made it a moment ago: update it below.
			err = a.call(ctx, "sns", "GetTopicAttributes", map[string]any{"TopicArn": topicARN}, &cur)
		default:
			return fail(t.Pos, t.Attributes, what+": CreateTopic", err)
		}
	}
	if err != nil {
		return fail(t.Pos, nil, what+": GetTopicAttributes", err)
	}
	if !created {
		if cur.Attributes == nil {
			cur.Attributes = map[string]string{}
		}
		if cur.Attributes["FifoTopic"] == "" {
			cur.Attributes["FifoTopic"] = "false"
		}
		diff := differing(cur.Attributes, attrs, topicAttributes)
		for _, name := range slices.Sorted(maps.Keys(diff)) {
			in := map[string]any{"TopicArn": topicARN, "AttributeName": name, "AttributeValue": diff[name]}
			if err := a.call(ctx, "sns", "SetTopicAttributes", in, nil); err != nil {
				return fail(t.Attributes[name].Pos, nil, what+": SetTopicAttributes", err)
			}
		}
		if len(diff) > 0 {
			a.changed("set topic %s: %s", t.Name, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
		}
		if len(t.Tags) > 0 {
			var tags struct{ Tags []Tag }
			if err := a.call(ctx, "sns", "ListTagsForResource", map[string]any{"ResourceArn": topicARN}, &tags); err != nil {
				return fail(t.Pos, nil, what+": ListTagsForResource", err)
			}
			if diff := differentTags(tagMap(tags.Tags), t.Tags); len(diff) > 0 {
				if err := a.call(ctx, "sns", "TagResource", map[string]any{"ResourceArn": topicARN, "Tags": tagList(diff)}, nil); err != nil {
					return fail(t.Pos, nil, what+": TagResource", err)
				}
				a.changed("tag topic %s: %s", t.Name, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
			}
		}
	}
	if len(t.Subscriptions) == 0 {
		return nil
	}
	existing, err := Subscriptions(ctx, a.call, topicARN)
	if err != nil {
		return fail(t.Pos, nil, what+": ListSubscriptionsByTopic", err)
	}
	for i := range t.Subscriptions {
		if err := a.subscription(ctx, t, &t.Subscriptions[i], existing); err != nil {
			return err
		}
	}
	return nil
}

// SubscriptionEntry is a subscription as ListSubscriptionsByTopic lists
// it.
type SubscriptionEntry struct {
	SubscriptionArn, Protocol, Endpoint string
}

// CallFunc runs one action in a place fixed beforehand (Caller.Call).
type CallFunc func(ctx context.Context, service, action string, in, out any) error

// TopicARNs lists the topics (ListTopics, every page).
func TopicARNs(ctx context.Context, call CallFunc) ([]string, error) {
	var arns []string
	token := ""
	for {
		var page struct {
			Topics    []struct{ TopicArn string }
			NextToken string
		}
		if err := call(ctx, "sns", "ListTopics", map[string]any{"NextToken": token}, &page); err != nil {
			return nil, fmt.Errorf("ListTopics: %w", err)
		}
		for _, t := range page.Topics {
			arns = append(arns, t.TopicArn)
		}
		if token = page.NextToken; token == "" {
			return arns, nil
		}
	}
}

// Subscriptions lists a topic's subscriptions (ListSubscriptionsByTopic),
// or every one when topicARN is "" (ListSubscriptions), every page.
func Subscriptions(ctx context.Context, call CallFunc, topicARN string) ([]SubscriptionEntry, error) {
	action, in := "ListSubscriptions", map[string]any{}
	if topicARN != "" {
		action, in = "ListSubscriptionsByTopic", map[string]any{"TopicArn": topicARN}
	}
	var all []SubscriptionEntry
	token := ""
	for {
		in["NextToken"] = token
		var page struct {
			Subscriptions []SubscriptionEntry
			NextToken     string
		}
		if err := call(ctx, "sns", action, in, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Subscriptions...)
		if token = page.NextToken; token == "" {
			return all, nil
		}
	}
}

func (a *applier) subscription(ctx context.Context, t *Topic, s *Subscription, existing []SubscriptionEntry) error {
	what := fmt.Sprintf("topic %s: subscription %s %s", t.Name, s.Protocol, s.Endpoint)
	endpoint := s.Endpoint
	if s.Protocol == "sqs" {
		endpoint = a.queueRef(endpoint)
	}
	attrs := a.resolve(s.Attributes)
	subARN := ""
	for _, e := range existing {
		if e.Protocol == s.Protocol && e.Endpoint == endpoint {
			subARN = e.SubscriptionArn
			break
		}
	}
	if subARN == "" {
		// Subscribe answers an existing subscription of the same endpoint
		// and attributes, which another node may have made meanwhile.
		in := map[string]any{"TopicArn": a.arnOf("sns", t.Name), "Protocol": s.Protocol, "Endpoint": endpoint, "Attributes": attrs, "ReturnSubscriptionArn": true}
		if err := a.call(ctx, "sns", "Subscribe", in, nil); err != nil {
			return fail(s.Pos, s.Attributes, what+": Subscribe", err)
		}
		a.changed("subscribe %s to topic %s", endpoint, t.Name)
		return nil
	}
	if !isARN(subARN) {
		return nil // awaiting its endpoint's confirmation: nothing to set yet
	}
	var cur struct{ Attributes map[string]string }
	if err := a.call(ctx, "sns", "GetSubscriptionAttributes", map[string]any{"SubscriptionArn": subARN}, &cur); err != nil {
		return fail(s.Pos, nil, what+": GetSubscriptionAttributes", err)
	}
	diff := differing(cur.Attributes, attrs, subscriptionAttributes)
	for _, name := range slices.Sorted(maps.Keys(diff)) {
		in := map[string]any{"SubscriptionArn": subARN, "AttributeName": name, "AttributeValue": diff[name]}
		if err := a.call(ctx, "sns", "SetSubscriptionAttributes", in, nil); err != nil {
			return fail(s.Attributes[name].Pos, nil, what+": SetSubscriptionAttributes", err)
		}
	}
	if len(diff) > 0 {
		a.changed("set subscription %s of topic %s: %s", endpoint, t.Name, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
	}
	return nil
}

// alarmConfig is an alarm as PutMetricAlarm sets it, without what a
// repeated PutMetricAlarm does not change (its tags) or what describes no
// setting (the place in the file), and with AWS's defaults written out, so
// that two configurations compare equal when they are.
func alarmConfig(al Alarm) Alarm {
	c := al
	c.Tags, c.Pos = nil, Pos{}
	if c.ActionsEnabled == nil {
		t := true
		c.ActionsEnabled = &t
	}
	for _, l := range []*[]string{&c.OKActions, &c.AlarmActions, &c.InsufficientDataActions} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(c.Dimensions) == 0 {
		c.Dimensions = nil
	}
	if len(c.Metrics) == 0 {
		c.Metrics = nil
	}
	if c.DatapointsToAlarm == nil {
		c.DatapointsToAlarm = c.EvaluationPeriods
	}
	if c.TreatMissingData == "" {
		c.TreatMissingData = "missing"
	}
	return c
}

// describedAlarm is an alarm as DescribeAlarms shows it: its settings,
// which carry PutMetricAlarm's names, and its ARN.
type describedAlarm struct {
	Alarm
	AlarmArn string
}

// describeAlarm finds an alarm by name; nil when there is none.
func (a *applier) describeAlarm(ctx context.Context, name string) (*describedAlarm, error) {
	var out struct{ MetricAlarms []describedAlarm }
	if err := a.call(ctx, "monitoring", "DescribeAlarms", map[string]any{"AlarmNames": []string{name}}, &out); err != nil {
		return nil, err
	}
	for i := range out.MetricAlarms {
		if out.MetricAlarms[i].AlarmName == name {
			return &out.MetricAlarms[i], nil
		}
	}
	return nil, nil
}

func (a *applier) alarm(ctx context.Context, al *Alarm) error {
	what := "alarm " + al.AlarmName
	cur, err := a.describeAlarm(ctx, al.AlarmName)
	if err != nil {
		return fail(al.Pos, nil, what+": DescribeAlarms", err)
	}
	if cur == nil {
		if err := a.call(ctx, "monitoring", "PutMetricAlarm", al, nil); err != nil {
			return fail(al.Pos, nil, what+": PutMetricAlarm", err)
		}
		a.changed("create alarm %s", al.AlarmName)
		return nil
	}
	if !reflect.DeepEqual(alarmConfig(cur.Alarm), alarmConfig(*al)) {
		// PutMetricAlarm replaces the whole configuration and keeps the
		// state; it ignores tags on an existing alarm.
		put := *al
		put.Tags = nil
		if err := a.call(ctx, "monitoring", "PutMetricAlarm", put, nil); err != nil {
			return fail(al.Pos, nil, what+": PutMetricAlarm", err)
		}
		a.changed("set alarm %s", al.AlarmName)
	}
	if len(al.Tags) == 0 {
		return nil
	}
	var tags struct{ Tags []Tag }
	if err := a.call(ctx, "monitoring", "ListTagsForResource", map[string]any{"ResourceARN": cur.AlarmArn}, &tags); err != nil {
		return fail(al.Pos, nil, what+": ListTagsForResource", err)
	}
	if diff := differentTags(tagMap(tags.Tags), tagMap(al.Tags)); len(diff) > 0 {
		if err := a.call(ctx, "monitoring", "TagResource", map[string]any{"ResourceARN": cur.AlarmArn, "Tags": tagList(diff)}, nil); err != nil {
			return fail(al.Pos, nil, what+": TagResource", err)
		}
		a.changed("tag alarm %s: %s", al.AlarmName, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
	}
	return nil
}
