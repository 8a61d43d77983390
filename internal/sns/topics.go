package sns

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/policy"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/snsjson"
)

// Topic attribute names.
const (
	attrTopicArn                  = "TopicArn"
	attrOwner                     = "Owner"
	attrPolicy                    = "Policy"
	attrDisplayName               = delivery.AttrDisplayName
	attrDeliveryPolicy            = delivery.AttrDeliveryPolicy
	attrEffectiveDeliveryPolicy   = "EffectiveDeliveryPolicy"
	attrKmsMasterKeyID            = "KmsMasterKeyId"
	attrSignatureVersion          = delivery.AttrSignatureVersion
	attrTracingConfig             = "TracingConfig"
	attrFifoTopic                 = "FifoTopic"
	attrContentBasedDeduplication = "ContentBasedDeduplication"
	attrFifoThroughputScope       = "FifoThroughputScope"
	attrArchivePolicy             = "ArchivePolicy"
	attrSubscriptionsConfirmed    = "SubscriptionsConfirmed"
	attrSubscriptionsPending      = "SubscriptionsPending"
	attrSubscriptionsDeleted      = "SubscriptionsDeleted"
)

// Topic limits.
const (
	maxTopicName      = 256
	maxDisplayName    = 100
	maxStandardTopics = 100_000
	maxFIFOTopics     = 1_000
	maxTags           = 50
	maxTagKey         = 128
	maxTagValue       = 256
	listPageSize      = 100
	maxDataProtection = 30_720
)

// validTopicName: 1–256 of [A-Za-z0-9_-], plus ".fifo" for FIFO topics.
func validTopicName(name string, fifo bool) bool {
	base := name
	if fifo {
		var ok bool
		if base, ok = strings.CutSuffix(name, ".fifo"); !ok {
			return false
		}
	}
	if base == "" || len(base) > maxTopicName {
		return false
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func parseBoolAttr(v string) (string, bool) {
	switch strings.ToLower(v) {
	case "true":
		return "true", true
	case "false":
		return "false", true
	}
	return "", false
}

// checkTopicAttribute validates one settable attribute and returns the
// value to store ("" removes it). inCreate selects CreateTopic's wording.
func (s *Service) checkTopicAttribute(name, value string, fifo, inCreate bool) (string, error) {
	if known, valid := delivery.CheckFeedbackAttribute(name, value); known {
		// The wording of this error is not recorded from AWS.
		if !valid {
			return "", attrError(inCreate, name)
		}
		return value, nil
	}
	switch name {
	case attrDisplayName:
		if utf8.RuneCountInString(value) > maxDisplayName {
			return "", attrError(inCreate, attrDisplayName)
		}
		return value, nil
	case attrPolicy:
		if value == "" {
			return "", nil // back to the default policy
		}
		if reason := checkTopicPolicy(value); reason != "" {
			return "", attrError(inCreate, reason)
		}
		return value, nil
	case attrDeliveryPolicy:
		if value == "" {
			return "", nil
		}
		if err := delivery.CheckTopicPolicy(value); err != nil {
			return "", attrError(inCreate, err.Error())
		}
		return value, nil
	case attrKmsMasterKeyID:
		return value, nil
	case attrSignatureVersion:
		if value != delivery.SignatureVersion1 && value != delivery.SignatureVersion2 {
			return "", attrError(inCreate, "SignatureVersion: Invalid value ["+value+"]. Valid values are 1 and 2.")
		}
		return value, nil
	case attrTracingConfig:
		if fifo {
			return "", attrError(inCreate, "TracingConfig: Tracing is not available for FIFO topics.")
		}
		if value != "PassThrough" && value != "Active" {
			return "", attrError(inCreate, "TracingConfig: Invalid value ["+value+"]. Please use either PassThrough or Active.")
		}
		return value, nil
	case attrContentBasedDeduplication:
		if !fifo {
			return "", attrError(inCreate, "ContentBasedDeduplication: ContentBasedDeduplication can only be set for FIFO topics.")
		}
		v, ok := parseBoolAttr(value)
		if !ok {
			return "", attrError(inCreate, "ContentBasedDeduplication: Invalid value ["+value+"]. Must be true or false.")
		}
		return v, nil
	case attrFifoThroughputScope:
		if !fifo {
			return "", attrError(inCreate, "FifoThroughputScope: FifoThroughputScope can only be set for FIFO topics.")
		}
		if value != "Topic" && value != "MessageGroup" {
			return "", attrError(inCreate, "FifoThroughputScope: Invalid value ["+value+"]. Please use either Topic or MessageGroup.")
		}
		return value, nil
	case attrArchivePolicy:
		if !fifo {
			return "", attrError(inCreate, "ArchivePolicy: ArchivePolicy can only be set for FIFO topics.")
		}
		if value == "" || value == "{}" {
			return "", nil
		}
		if !validArchivePolicy(value) {
			return "", attrError(inCreate, "ArchivePolicy: MessageRetentionPeriod must be a number of days between 1 and 365.")
		}
		return value, nil
	}
	if inCreate {
		return "", invalidParameter("Attributes Reason: Unknown attribute %s", name)
	}
	return "", invalidParameter("AttributeName")
}

// validArchivePolicy: {"MessageRetentionPeriod":"<days>"}, 1–365 days.
func validArchivePolicy(raw string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return false
	}
	v, ok := m["MessageRetentionPeriod"]
	if !ok {
		return false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 365
}

// DefaultPolicy is the Policy of a new topic, byte for byte as AWS writes
// it.
func DefaultPolicy(topicARN string) string {
	return `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},` +
		`"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission","SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],` +
		`"Resource":"` + topicARN + `","Condition":{"StringEquals":{"AWS:SourceOwner":"` + arnAccount(topicARN) + `"}}}]}`
}

// checkTags validates tags to add: AWS's framework constraints first,
// then duplicates.
func checkTags(tags []tag, member string) error {
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		switch {
		case t.Key == "":
			return notNull(fmt.Sprintf("%s.%d.member.key", member, i+1))
		case utf8.RuneCountInString(t.Key) > maxTagKey:
			return errValidation.WithMessage("1 validation error detected: Value '%s' at '%s.%d.member.key' failed to satisfy constraint: Member must have length less than or equal to %d", t.Key, member, i+1, maxTagKey)
		case utf8.RuneCountInString(t.Value) > maxTagValue:
			return errValidation.WithMessage("1 validation error detected: Value '%s' at '%s.%d.member.value' failed to satisfy constraint: Member must have length less than or equal to %d", t.Value, member, i+1, maxTagValue)
		}
		if seen[t.Key] {
			return invalidParameter("Duplicated keys are not allowed.")
		}
		seen[t.Key] = true
	}
	return nil
}

func (s *Service) createTopic(ctx context.Context, in *createTopicInput) (*createTopicOutput, error) {
	fifo := false
	if v, ok := in.Attributes[attrFifoTopic]; ok {
		b, valid := parseBoolAttr(v)
		if !valid {
			return nil, invalidParameter("Attributes Reason: FifoTopic: Invalid value [%s]. Must be true or false.", v)
		}
		fifo = b == "true"
	}
	if !validTopicName(in.Name, fifo) {
		return nil, invalidParameter("Topic Name")
	}
	attrs := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(in.Attributes)) {
		if name == attrFifoTopic {
			continue
		}
		v, err := s.checkTopicAttribute(name, in.Attributes[name], fifo, true)
		if err != nil {
			return nil, err
		}
		if v != "" {
			attrs[name] = v
		}
	}
	if err := checkTags(in.Tags, "tags"); err != nil {
		return nil, err
	}
	if len(in.Tags) > maxTags {
		return nil, errTagLimit
	}
	dpp := ""
	if in.DataProtectionPolicy != nil {
		if dpp = *in.DataProtectionPolicy; len(dpp) > maxDataProtection || dpp != "" && !json.Valid([]byte(dpp)) {
			return nil, invalidParameter("DataProtectionPolicy")
		}
	}
	arn := s.topicARN(ctx, in.Name)
	// A topic made through another node a moment ago, or at the same
	// moment (the insert then loses), is this one.
	err := s.retryRaces(ctx, "create topic", kindTopic, arn, func() error {
		return s.createTopicOnce(ctx, in, arn, fifo, attrs, dpp)
	})
	if err != nil {
		return nil, err
	}
	return &createTopicOutput{TopicArn: arn}, nil
}

// createTopicOnce makes the topic unless it exists. The caller holds
// writeMu.
func (s *Service) createTopicOnce(ctx context.Context, in *createTopicInput, arn string, fifo bool, attrs map[string]string, dpp string) error {
	s.mu.RLock()
	existing := s.topics[arn]
	nFIFO, nStd := 0, 0
	for _, t := range s.topics {
		if t.FIFO {
			nFIFO++
		} else {
			nStd++
		}
	}
	s.mu.RUnlock()
	if existing != nil {
		for name, v := range attrs {
			if topicAttribute(existing, name) != v {
				return invalidParameter("Attributes Reason: Topic already exists with different attributes")
			}
		}
		for _, tg := range in.Tags {
			if old, ok := existing.Tags[tg.Key]; !ok || old != tg.Value {
				return invalidParameter("Tags Reason: Topic already exists with different tags")
			}
		}
		return nil
	}
	if fifo && nFIFO >= maxFIFOTopics || !fifo && nStd >= maxStandardTopics {
		return errTopicLimit
	}
	attrs = maps.Clone(attrs)
	if attrs[attrPolicy] == "" {
		attrs[attrPolicy] = DefaultPolicy(arn)
	}
	if fifo && attrs[attrContentBasedDeduplication] == "" {
		attrs[attrContentBasedDeduplication] = "false"
	}
	t := &topic{ARN: arn, Name: in.Name, FIFO: fifo, Attrs: attrs, DataProtectionPolicy: dpp, Created: s.clock.Now().UTC(), state: newTopicState()}
	if len(in.Tags) > 0 {
		t.Tags = make(map[string]string, len(in.Tags))
		for _, tg := range in.Tags {
			t.Tags[tg.Key] = tg.Value
		}
	}
	if err := t.prepare(); err != nil {
		return s.internal(ctx, "prepare topic", err)
	}
	if err := s.saveTopic(ctx, t); err != nil {
		if err == errLostRace {
			return err
		}
		return s.internal(ctx, "create topic", err)
	}
	return nil
}

// topicAttribute is a settable attribute's current value, defaults
// included, for comparing a repeated CreateTopic.
func topicAttribute(t *topic, name string) string {
	if v, ok := t.Attrs[name]; ok {
		return v
	}
	switch name {
	case attrContentBasedDeduplication:
		if t.FIFO {
			return "false"
		}
	case attrFifoThroughputScope:
		if t.FIFO {
			return "Topic"
		}
	case attrTracingConfig:
		return "PassThrough"
	case attrSignatureVersion:
		return delivery.SignatureVersion1
	}
	return ""
}

func (s *Service) deleteTopic(ctx context.Context, in *topicArnInput) (*emptyOutput, error) {
	if _, err := s.checkTopicARN(ctx, in.TopicArn, "TopicArn"); err != nil {
		return nil, err
	}
	if err := s.fresh(ctx, kindTopic, in.TopicArn); err != nil {
		return nil, s.internal(ctx, "read topic", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	t := s.topics[in.TopicArn]
	s.mu.RUnlock()
	if t == nil {
		return &emptyOutput{}, nil
	}
	if err := s.authorizeTopic(ctx, t, "DeleteTopic", nil); err != nil {
		return nil, err
	}
	// The topic record goes first: subscriptions left behind by a crash
	// are dropped at the next start.
	if err := s.records.DeleteRecord(ctx, kindTopic, t.ARN); err != nil {
		return nil, s.internal(ctx, "delete topic", err)
	}
	s.mu.Lock()
	delete(s.topics, t.ARN)
	s.mu.Unlock()
	for _, sub := range s.subscriptionsOf(t.ARN) {
		if err := s.dropSubscription(ctx, sub); err != nil {
			return nil, s.internal(ctx, "delete topic subscription", err)
		}
	}
	s.mu.Lock()
	delete(s.topicSubs, t.ARN)
	s.mu.Unlock()
	if t.FIFO {
		// Its deduplication keys expire anyway; a topic made again under
		// its name starts anew.
		if err := s.sequences.DropSequence(ctx, t.ARN); err != nil {
			s.log.WarnContext(ctx, "sns: delete topic: forget its sequence", "topic", t.ARN, "err", err)
		}
	}
	return &emptyOutput{}, nil
}

// pageAfter returns the page of sorted keys that follows the NextToken
// (the last key of the previous page), and the token of the next page.
func pageAfter(keys []string, token string) (page []string, next string, err error) {
	start := 0
	if token != "" {
		b, derr := base64.RawURLEncoding.DecodeString(token)
		if derr != nil {
			return nil, "", invalidParameter("NextToken")
		}
		after := string(b)
		start, _ = slices.BinarySearch(keys, after)
		if start < len(keys) && keys[start] == after {
			start++
		}
	}
	end := min(start+listPageSize, len(keys))
	page = keys[start:end]
	if end < len(keys) {
		next = base64.RawURLEncoding.EncodeToString([]byte(keys[end-1]))
	}
	return page, next, nil
}

func (s *Service) listTopics(ctx context.Context, in *listInput) (*listTopicsOutput, error) {
	prefix := s.topicARN(ctx, "")
	s.mu.RLock()
	arns := make([]string, 0, len(s.topics))
	for arn := range s.topics {
		if strings.HasPrefix(arn, prefix) {
			arns = append(arns, arn)
		}
	}
	s.mu.RUnlock()
	slices.Sort(arns)
	page, next, err := pageAfter(arns, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := &listTopicsOutput{Topics: make([]topicEntry, len(page)), NextToken: next}
	for i, arn := range page {
		out.Topics[i] = topicEntry{TopicArn: arn}
	}
	return out, nil
}

func (s *Service) getTopicAttributes(ctx context.Context, in *topicArnInput) (*attributesOutput, error) {
	t, err := s.lookupTopic(ctx, in.TopicArn, "TopicArn", "GetTopicAttributes")
	if err != nil {
		return nil, err
	}
	attrs := maps.Clone(t.Attrs)
	attrs[attrTopicArn] = t.ARN
	attrs[attrOwner] = arnAccount(t.ARN)
	if _, ok := attrs[attrDisplayName]; !ok {
		attrs[attrDisplayName] = ""
	}
	attrs[attrEffectiveDeliveryPolicy] = t.delivery.EffectivePolicy()
	if t.FIFO {
		attrs[attrFifoTopic] = "true"
	}
	confirmed, pending, deleted := 0, 0, 0
	now := s.clock.Now()
	for _, sub := range s.subscriptionsOf(t.ARN) {
		switch {
		case sub.Deleted:
			if now.Before(sub.DeletedAt.Add(tokenLifetime)) {
				deleted++
			}
		case sub.Pending:
			pending++
		default:
			confirmed++
		}
	}
	attrs[attrSubscriptionsConfirmed] = strconv.Itoa(confirmed)
	attrs[attrSubscriptionsPending] = strconv.Itoa(pending)
	attrs[attrSubscriptionsDeleted] = strconv.Itoa(deleted)
	return &attributesOutput{Attributes: attrs}, nil
}

// updateTopic applies fn to a copy of the topic named by arn and stores
// the copy in place of the topic as the store has it, building it again
// on the stored topic when another node changed it first. fn may refuse
// with an error, which is returned as it is, or report that nothing
// changed.
func (s *Service) updateTopic(ctx context.Context, arn, param, op, action string, fn func(c *topic) (changed bool, err error)) error {
	if _, err := s.checkTopicARN(ctx, arn, param); err != nil {
		return err
	}
	return s.retryRaces(ctx, op, kindTopic, arn, func() error {
		t, err := s.cachedTopic(ctx, arn, param)
		if err != nil {
			return err
		}
		if err := s.authorizeTopic(ctx, t, action, nil); err != nil {
			return err
		}
		c := t.clone()
		changed, err := fn(c)
		if err != nil || !changed {
			return err
		}
		if err := c.prepare(); err != nil {
			return s.internal(ctx, op, err)
		}
		if err := s.saveTopic(ctx, c); err != nil {
			if err == errLostRace {
				return err
			}
			return s.internal(ctx, op, err)
		}
		return nil
	})
}

func (s *Service) setTopicAttributes(ctx context.Context, in *setTopicAttributesInput) (*emptyOutput, error) {
	if _, err := s.checkTopicARN(ctx, in.TopicArn, "TopicArn"); err != nil {
		return nil, err
	}
	if in.AttributeName == "" || in.AttributeName == attrFifoTopic {
		return nil, invalidParameter("AttributeName")
	}
	value := ""
	if in.AttributeValue != nil {
		value = *in.AttributeValue
	}
	err := s.updateTopic(ctx, in.TopicArn, "TopicArn", "set topic attributes", "SetTopicAttributes", func(c *topic) (bool, error) {
		v, err := s.checkTopicAttribute(in.AttributeName, value, c.FIFO, false)
		if err != nil {
			return false, err
		}
		switch {
		case in.AttributeName == attrPolicy && v == "":
			c.Attrs[attrPolicy] = DefaultPolicy(c.ARN)
		case in.AttributeName == attrDisplayName || v != "":
			c.Attrs[in.AttributeName] = v
		default:
			delete(c.Attrs, in.AttributeName)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

// tagTarget resolves a ResourceArn to its topic: tags live on topics only.
func (s *Service) tagTarget(ctx context.Context, arn, action string) (*topic, error) {
	t, err := s.lookupTopic(ctx, arn, "ResourceArn", action)
	if err == errTopicNotFound {
		return nil, errResourceNotFound
	}
	return t, err
}

// updateTags changes a topic's tags; a missing topic is a missing resource.
func (s *Service) updateTags(ctx context.Context, arn, op, action string, fn func(tags map[string]string) error) error {
	err := s.updateTopic(ctx, arn, "ResourceArn", op, action, func(c *topic) (bool, error) {
		if c.Tags == nil {
			c.Tags = map[string]string{}
		}
		return true, fn(c.Tags)
	})
	if err == errTopicNotFound {
		return errResourceNotFound
	}
	return err
}

func (s *Service) tagResource(ctx context.Context, in *tagResourceInput) (*emptyOutput, error) {
	if len(in.Tags) == 0 {
		return nil, notNull("tags")
	}
	if err := checkTags(in.Tags, "tags"); err != nil {
		return nil, err
	}
	err := s.updateTags(ctx, in.ResourceArn, "tag topic", "TagResource", func(tags map[string]string) error {
		for _, tg := range in.Tags {
			tags[tg.Key] = tg.Value
		}
		if len(tags) > maxTags {
			return errTagLimit
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

func (s *Service) untagResource(ctx context.Context, in *untagResourceInput) (*emptyOutput, error) {
	if len(in.TagKeys) == 0 {
		return nil, notNull("tagKeys")
	}
	err := s.updateTags(ctx, in.ResourceArn, "untag topic", "UntagResource", func(tags map[string]string) error {
		for _, k := range in.TagKeys {
			delete(tags, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

func (s *Service) listTagsForResource(ctx context.Context, in *resourceArnInput) (*listTagsOutput, error) {
	t, err := s.tagTarget(ctx, in.ResourceArn, "ListTagsForResource")
	if err != nil {
		return nil, err
	}
	out := &listTagsOutput{Tags: []tagOut{}}
	for _, k := range slices.Sorted(maps.Keys(t.Tags)) {
		v := t.Tags[k]
		out.Tags = append(out.Tags, tagOut{Key: k, Value: &v})
	}
	return out, nil
}

// policyActions are the actions a topic policy statement may grant.
var policyActions = []string{"GetTopicAttributes", "SetTopicAttributes", "AddPermission", "RemovePermission",
	"DeleteTopic", "Subscribe", "ListSubscriptionsByTopic", "Publish", "Receive"}

// policyDoc is a topic policy read loosely: its statements, and the other
// members kept as they were.
type policyDoc struct {
	members    map[string]json.RawMessage
	statements []json.RawMessage
}

func parsePolicy(raw string) (*policyDoc, error) {
	d := &policyDoc{}
	if err := json.Unmarshal([]byte(raw), &d.members); err != nil || d.members == nil {
		return nil, fmt.Errorf("policy is not a JSON object")
	}
	st := d.members["Statement"]
	switch {
	case snsjson.IsNull(st):
	case strings.HasPrefix(strings.TrimSpace(string(st)), "["):
		if err := json.Unmarshal(st, &d.statements); err != nil {
			return nil, fmt.Errorf("policy statements: %w", err)
		}
	default:
		d.statements = []json.RawMessage{st}
	}
	return d, nil
}

func statementSid(st json.RawMessage) string {
	var v struct{ Sid string }
	_ = json.Unmarshal(st, &v)
	return v.Sid
}

// String writes the policy back with Version, Id and Statement first.
func (d *policyDoc) String() string {
	st, _ := json.Marshal(d.statements)
	d.members["Statement"] = st
	var b strings.Builder
	b.WriteByte('{')
	first := true
	write := func(k string) {
		v, ok := d.members[k]
		if !ok {
			return
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	lead := []string{"Version", "Id", "Statement"}
	for _, k := range lead {
		write(k)
	}
	for _, k := range slices.Sorted(maps.Keys(d.members)) {
		if !slices.Contains(lead, k) {
			write(k)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func (s *Service) addPermission(ctx context.Context, in *addPermissionInput) (*emptyOutput, error) {
	switch {
	case in.Label == "":
		return nil, notNull("label")
	case len(in.AWSAccountId) == 0:
		return nil, notNull("aWSAccountId")
	case len(in.ActionName) == 0:
		return nil, notNull("actionName")
	}
	actions := make([]string, len(in.ActionName))
	for i, a := range in.ActionName {
		if !slices.Contains(policyActions, a) && a != "*" {
			return nil, invalidParameter("Policy statement action out of service scope!")
		}
		actions[i] = "SNS:" + a
	}
	principals := make([]string, len(in.AWSAccountId))
	for i, acct := range in.AWSAccountId {
		principals[i] = "arn:" + arn.Partition(s.regionOf(ctx)) + ":iam::" + acct + ":root"
	}
	err := s.updateTopic(ctx, in.TopicArn, "TopicArn", "add permission", "AddPermission", func(c *topic) (bool, error) {
		doc, err := parsePolicy(c.Attrs[attrPolicy])
		if err != nil {
			doc, _ = parsePolicy(DefaultPolicy(c.ARN))
		}
		for _, st := range doc.statements {
			if statementSid(st) == in.Label {
				return false, invalidParameter("Statement already exists")
			}
		}
		type principal struct {
			AWS any `json:"AWS"`
		}
		type statement struct {
			Sid       string    `json:"Sid"`
			Effect    string    `json:"Effect"`
			Principal principal `json:"Principal"`
			Action    any       `json:"Action"`
			Resource  string    `json:"Resource"`
		}
		b, err := json.Marshal(statement{Sid: in.Label, Effect: "Allow", Principal: principal{AWS: oneOrMany(principals)}, Action: oneOrMany(actions), Resource: c.ARN})
		if err != nil {
			return false, s.internal(ctx, "encode statement", err)
		}
		doc.statements = append(doc.statements, b)
		c.Attrs[attrPolicy] = doc.String()
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

// oneOrMany is a single value as itself, several as a list, as IAM writes
// them.
func oneOrMany(v []string) any {
	if len(v) == 1 {
		return v[0]
	}
	return v
}

func (s *Service) removePermission(ctx context.Context, in *removePermissionInput) (*emptyOutput, error) {
	if in.Label == "" {
		return nil, notNull("label")
	}
	err := s.updateTopic(ctx, in.TopicArn, "TopicArn", "remove permission", "RemovePermission", func(c *topic) (bool, error) {
		doc, err := parsePolicy(c.Attrs[attrPolicy])
		if err != nil {
			return false, nil
		}
		n := len(doc.statements)
		doc.statements = slices.DeleteFunc(doc.statements, func(st json.RawMessage) bool { return statementSid(st) == in.Label })
		if len(doc.statements) == n {
			return false, nil
		}
		c.Attrs[attrPolicy] = doc.String()
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

func (s *Service) getDataProtectionPolicy(ctx context.Context, in *resourceArnInput) (*dataProtectionPolicyOutput, error) {
	t, err := s.lookupTopic(ctx, in.ResourceArn, "ResourceArn", "GetDataProtectionPolicy")
	if err != nil {
		return nil, err
	}
	return &dataProtectionPolicyOutput{DataProtectionPolicy: t.DataProtectionPolicy}, nil
}

func (s *Service) putDataProtectionPolicy(ctx context.Context, in *putDataProtectionPolicyInput) (*emptyOutput, error) {
	if len(in.DataProtectionPolicy) > maxDataProtection || in.DataProtectionPolicy != "" && !json.Valid([]byte(in.DataProtectionPolicy)) {
		return nil, invalidParameter("DataProtectionPolicy")
	}
	err := s.updateTopic(ctx, in.ResourceArn, "ResourceArn", "put data protection policy", "PutDataProtectionPolicy", func(c *topic) (bool, error) {
		c.DataProtectionPolicy = in.DataProtectionPolicy
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

// checkTopicPolicy validates a topic Policy as SNS does when it is set,
// and returns SNS's reason for refusing it ("" when valid). SNS recognises
// only its own actions, without wildcards (two independent reports of
// "sns:*" refused); a statement names at most one resource.
func checkTopicPolicy(doc string) string {
	p, err := policy.Parse(doc)
	if err != nil {
		return "Policy Error: null"
	}
	for _, st := range p.Statements {
		for _, a := range st.Actions {
			svc, name, _ := strings.Cut(a, ":")
			if a != "*" && (svc != "sns" || strings.ContainsAny(name, "*?")) {
				return "Policy statement action out of service scope!"
			}
		}
		if len(st.Resources) > 1 {
			return "Policy statement must apply to a single resource!"
		}
	}
	return ""
}
