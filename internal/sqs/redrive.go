package sqs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
)

// Dead-letter policies. A source queue names its dead-letter queue in
// RedrivePolicy; a dead-letter queue says which sources may name it in
// RedriveAllowPolicy. Both are JSON documents inside a string attribute,
// validated with AWS's wording and stored normalised, so that they read back
// as AWS writes them and CreateQueue's idempotency check compares values,
// not spellings.

const (
	maxMaxReceiveCount     = 1000
	maxRedriveSourceARNs   = 10
	arnPartition           = "aws"
	keyDeadLetterTargetArn = "deadLetterTargetArn"
	keyMaxReceiveCount     = "maxReceiveCount"
	keyRedrivePermission   = "redrivePermission"
	keySourceQueueArns     = "sourceQueueArns"

	permissionAllowAll = "allowAll"
	permissionDenyAll  = "denyAll"
	permissionByQueue  = "byQueue"
)

// RedrivePolicy reasons. AWS's own wording where it has been recorded; the
// self-target and allow-policy refusals are ours (AWS's are unrecorded).
const (
	reasonNotJSONMap       = "Redrive policy is not a valid JSON map."
	reasonMandatory        = "Redrive policy does not contain mandatory attribute: %s."
	reasonOnlyAttributes   = "Only following attributes are supported: [maxReceiveCount, deadLetterTargetArn]."
	reasonMaxReceiveCount  = "Invalid value for maxReceiveCount: %s, valid values are from 1 to 1000 both inclusive."
	reasonTargetARN        = "Invalid value for deadLetterTargetArn."
	reasonOnlySQS          = "Only SQS queues are valid resources for deadLetterTargetArn."
	reasonSameRegion       = "Dead-letter target must be in same region as the source."
	reasonSameOwner        = "Dead-letter target owner should be same as the source."
	reasonTargetMissing    = "Dead letter target does not exist."
	reasonSameType         = "Dead-letter queue must be same type of queue as the source.." // sic, two dots
	reasonTargetIsSource   = "Dead-letter target must be another queue than the source."
	reasonTargetDisallowed = "Dead-letter target does not allow this source queue."
)

// RedriveAllowPolicy reasons (AWS's wording, typographic apostrophe included).
const (
	allowPolicyUnsupportedFormat = "Invalid value for the parameter RedriveAllowPolicy. Reason: Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format."
	reasonByQueueNeedsARNs       = "Amazon SQS can't create the redrive allow policy. When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values."
	reasonTooManySourceARNs      = "Amazon SQS can't create the redrive allow policy. The maximum number of source queue ARNs you can specify is 10."
	reasonARNsNeedByQueue        = "Amazon SQS can't create the redrive allow policy. To specify one or more source queue ARNs, you must set redrivePermission to byQueue."
)

// redrivePolicy is a validated RedrivePolicy.
type redrivePolicy struct {
	target          arn.ARN
	targetARN       string
	maxReceiveCount int
}

// String is the policy as AWS writes it back.
func (p redrivePolicy) String() string {
	return marshalCompact(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{p.targetARN, p.maxReceiveCount})
}

// parseRedrivePolicy checks what a RedrivePolicy says on its own: its JSON
// shape, its members, the count's range and the target ARN's form. Where the
// target is (region, owner, existence, type) needs the service and is
// checked by checkRedriveTarget.
func parseRedrivePolicy(raw string) (redrivePolicy, *protocol.Error) {
	var p redrivePolicy
	fields, ok := jsonObject(raw)
	if !ok {
		return p, invalidParameter("Invalid value for the parameter %s. Reason: %s", attrRedrivePolicy, reasonNotJSONMap)
	}
	bad := func(format string, args ...any) *protocol.Error {
		return invalidValue(raw, attrRedrivePolicy, fmt.Sprintf(format, args...))
	}
	countRaw, ok := fields[keyMaxReceiveCount]
	if !ok {
		return p, bad(reasonMandatory, keyMaxReceiveCount)
	}
	targetRaw, ok := fields[keyDeadLetterTargetArn]
	if !ok {
		return p, bad(reasonMandatory, keyDeadLetterTargetArn)
	}
	if len(fields) > 2 {
		return p, bad(reasonOnlyAttributes)
	}
	count, text := jsonInt(countRaw)
	if count < 1 || count > maxMaxReceiveCount {
		return p, bad(reasonMaxReceiveCount, text)
	}
	var target string
	if json.Unmarshal(targetRaw, &target) != nil {
		return p, bad(reasonTargetARN)
	}
	a, ok := arn.Parse(target)
	if !ok {
		return p, bad(reasonTargetARN)
	}
	if a.Service != "sqs" {
		return p, bad(reasonOnlySQS)
	}
	return redrivePolicy{target: a, targetARN: target, maxReceiveCount: count}, nil
}

// jsonObject decodes a JSON object into its raw members; ok is false for
// anything else, null included.
func jsonObject(raw string) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &fields) != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// jsonInt reads an integer given as a JSON number or a numeric string. It
// returns 0 when the value is neither, and the value's text for messages.
func jsonInt(raw json.RawMessage) (int, string) {
	text := string(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		text = s
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, text
	}
	return n, text
}

// redriveAllowPolicy is a validated RedriveAllowPolicy.
type redriveAllowPolicy struct {
	permission string
	sources    []string
}

// String is the policy normalised: redrivePermission, then sourceQueueArns
// when byQueue.
func (p redriveAllowPolicy) String() string {
	return marshalCompact(struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns,omitempty"`
	}{p.permission, p.sources})
}

// allows reports whether a source queue of this ARN may name the policy's
// queue as its dead-letter queue.
func (p redriveAllowPolicy) allows(sourceARN string) bool {
	switch p.permission {
	case permissionDenyAll:
		return false
	case permissionByQueue:
		return slices.Contains(p.sources, sourceARN)
	}
	return true
}

// parseRedriveAllowPolicy validates a RedriveAllowPolicy. A null
// sourceQueueArns counts as absent.
func parseRedriveAllowPolicy(raw string) (redriveAllowPolicy, *protocol.Error) {
	var p redriveAllowPolicy
	unsupported := invalidParameter(allowPolicyUnsupportedFormat)
	fields, ok := jsonObject(raw)
	if !ok {
		return p, unsupported
	}
	if json.Unmarshal(fields[keyRedrivePermission], &p.permission) != nil {
		return p, unsupported
	}
	switch p.permission {
	case permissionAllowAll, permissionDenyAll, permissionByQueue:
	default:
		return p, unsupported
	}
	for k := range fields {
		if k != keyRedrivePermission && k != keySourceQueueArns {
			return p, unsupported
		}
	}
	bad := func(reason string) *protocol.Error { return invalidValue(raw, attrRedriveAllowPolicy, reason) }
	arnsRaw, has := fields[keySourceQueueArns]
	if has && string(arnsRaw) != "null" {
		var items []json.RawMessage
		if json.Unmarshal(arnsRaw, &items) != nil {
			return p, unsupported
		}
		p.sources = make([]string, len(items))
		for i, item := range items {
			if json.Unmarshal(item, &p.sources[i]) != nil || item[0] != '"' {
				return p, unsupported
			}
		}
		switch {
		case p.permission != permissionByQueue:
			return p, bad(reasonARNsNeedByQueue)
		case len(p.sources) == 0:
			return p, bad(reasonByQueueNeedsARNs)
		case len(p.sources) > maxRedriveSourceARNs:
			return p, bad(reasonTooManySourceARNs)
		}
		return p, nil
	}
	if p.permission == permissionByQueue {
		return p, bad(reasonByQueueNeedsARNs)
	}
	return p, nil
}

// checkRedriveTarget checks, for a request setting a RedrivePolicy on the
// source queue src, where the policy's target is: the source's region and
// account, a queue of the source's type other than the source, existing, and
// allowing this source. Requests without a policy pass.
func (s *service) checkRedriveTarget(ctx context.Context, src queueRef, sourceFifo bool, req map[string]string) error {
	raw := req[attrRedrivePolicy]
	if raw == "" {
		return nil
	}
	p, perr := parseRedrivePolicy(raw)
	if perr != nil {
		return perr
	}
	bad := func(reason string) error { return invalidValue(raw, attrRedrivePolicy, reason) }
	t := p.target
	name := t.Resource
	switch {
	case t.Region != src.region:
		return bad(reasonSameRegion)
	case t.Account != src.account:
		return bad(reasonSameOwner)
	case strings.HasSuffix(name, fifoSuffix) != sourceFifo:
		return bad(reasonSameType)
	case name == src.name:
		return bad(reasonTargetIsSource)
	case t.Partition != arnPartition || !validAnyQueueName(name):
		return bad(reasonTargetMissing)
	}
	target, err := s.backend.GetQueue(ctx, src.owner, name)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return bad(reasonTargetMissing)
	}
	if err != nil {
		return s.engineError(err, "get dead-letter target "+name)
	}
	if isFifo(target.Attributes) != sourceFifo {
		return bad(reasonSameType)
	}
	if allow := target.Attributes[attrRedriveAllowPolicy]; allow != "" {
		ap, perr := parseRedriveAllowPolicy(allow)
		if perr == nil && !ap.allows(src.arn()) {
			return bad(reasonTargetDisallowed)
		}
	}
	return nil
}

// redriveOf derives the engine's redrive settings from a stored (valid,
// normalised) RedrivePolicy; nil when there is none.
func redriveOf(attrs map[string]string, home string) *engine.Redrive {
	raw := attrs[attrRedrivePolicy]
	if raw == "" {
		return nil
	}
	p, perr := parseRedrivePolicy(raw)
	if perr != nil {
		return nil
	}
	return &engine.Redrive{TargetAccount: region.Owner(p.target.Account, p.target.Region, home), TargetName: p.target.Resource,
		MaxReceiveCount: p.maxReceiveCount}
}

// redriveTargetARN is the dead-letter target ARN of a queue's attributes, or
// "" when it has no RedrivePolicy.
func redriveTargetARN(attrs map[string]string) string {
	raw := attrs[attrRedrivePolicy]
	if raw == "" {
		return ""
	}
	p, perr := parseRedrivePolicy(raw)
	if perr != nil {
		return ""
	}
	return p.targetARN
}

// isFifo reports whether a queue's attributes make it a FIFO queue.
func isFifo(attrs map[string]string) bool { return attrs[attrFifoQueue] == "true" }

// marshalCompact renders v as compact JSON without HTML escaping, so that
// stored policies keep their characters as sent.
func marshalCompact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // plain structs of strings and ints always encode
	return strings.TrimSuffix(b.String(), "\n")
}
