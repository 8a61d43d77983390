package sqs

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

// Queue attribute names.
const (
	attrAll                          = "All"
	attrPolicy                       = "Policy"
	attrVisibilityTimeout            = "VisibilityTimeout"
	attrMaximumMessageSize           = "MaximumMessageSize"
	attrMessageRetentionPeriod       = "MessageRetentionPeriod"
	attrDelaySeconds                 = "DelaySeconds"
	attrReceiveMessageWaitTime       = "ReceiveMessageWaitTimeSeconds"
	attrKmsMasterKeyID               = "KmsMasterKeyId"
	attrKmsDataKeyReusePeriodSeconds = "KmsDataKeyReusePeriodSeconds"
	attrSqsManagedSseEnabled         = "SqsManagedSseEnabled"
	attrRedrivePolicy                = "RedrivePolicy"
	attrRedriveAllowPolicy           = "RedriveAllowPolicy"
	attrFifoQueue                    = "FifoQueue"
	attrContentBasedDeduplication    = "ContentBasedDeduplication"
	attrDeduplicationScope           = "DeduplicationScope"
	attrFifoThroughputLimit          = "FifoThroughputLimit"

	attrApproximateNumberOfMessages           = "ApproximateNumberOfMessages"
	attrApproximateNumberOfMessagesNotVisible = "ApproximateNumberOfMessagesNotVisible"
	attrApproximateNumberOfMessagesDelayed    = "ApproximateNumberOfMessagesDelayed"
	attrCreatedTimestamp                      = "CreatedTimestamp"
	attrLastModifiedTimestamp                 = "LastModifiedTimestamp"
	attrQueueArn                              = "QueueArn"
)

// intRange is a settable integer attribute's inclusive range.
type intRange struct{ min, max int }

// intAttributes are the settable integer attributes of a standard queue.
var intAttributes = map[string]intRange{
	attrDelaySeconds:                 {0, maxDelaySeconds},
	attrMaximumMessageSize:           {1024, 1 << 20},
	attrMessageRetentionPeriod:       {60, 1209600},
	attrReceiveMessageWaitTime:       {0, maxWaitSeconds},
	attrVisibilityTimeout:            {0, maxVisibilitySeconds},
	attrKmsDataKeyReusePeriodSeconds: {60, 86400},
}

// defaultAttributes are a new standard queue's settable attributes. They are
// stored with the queue, so CreateQueue's idempotency check and
// GetQueueAttributes both see omitted attributes at their defaults.
func defaultAttributes() map[string]string {
	return map[string]string{
		attrDelaySeconds:                 "0",
		attrMaximumMessageSize:           "1048576",
		attrMessageRetentionPeriod:       "345600",
		attrReceiveMessageWaitTime:       "0",
		attrVisibilityTimeout:            "30",
		attrSqsManagedSseEnabled:         "true",
		attrKmsDataKeyReusePeriodSeconds: "300",
	}
}

// DefaultAttributes are the settable attributes of a new queue, FIFO or
// standard, at their defaults: what GetQueueAttributes shows of a queue
// created without them (Ferry's export leaves them out).
func DefaultAttributes(fifo bool) map[string]string {
	if fifo {
		return fifoDefaultAttributes()
	}
	return defaultAttributes()
}

// FIFO attribute values.
const (
	scopeQueue              = engine.DeduplicationScopeQueue
	scopeMessageGroup       = engine.DeduplicationScopeMessageGroup
	throughputPerQueue      = "perQueue"
	throughputPerGroup      = "perMessageGroupId"
	modifyingTypeMessage    = "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."
	throughputNeedsScopeMsg = "Invalid value for the parameter FifoThroughputLimit. Reason: To set FifoThroughputLimit to perMessageGroupId, the DeduplicationScope must be messageGroup."
)

// fifoDefaultAttributes are a new FIFO queue's settable attributes: the
// standard ones and the FIFO ones at their defaults. FifoQueue itself is
// stored, which is what makes the queue FIFO (see isFifo).
func fifoDefaultAttributes() map[string]string {
	attrs := defaultAttributes()
	attrs[attrFifoQueue] = "true"
	attrs[attrContentBasedDeduplication] = "false"
	attrs[attrDeduplicationScope] = scopeQueue
	attrs[attrFifoThroughputLimit] = throughputPerQueue
	return attrs
}

// readOnlyAttributes are computed; they can be read but never set.
var readOnlyAttributes = []string{
	attrApproximateNumberOfMessages,
	attrApproximateNumberOfMessagesNotVisible,
	attrApproximateNumberOfMessagesDelayed,
	attrCreatedTimestamp,
	attrLastModifiedTimestamp,
	attrQueueArn,
}

// readableAttributes are the names GetQueueAttributes knows (the model's
// QueueAttributeName enum); any other name is refused.
var readableAttributes = map[string]bool{
	attrAll: true, attrPolicy: true, attrVisibilityTimeout: true, attrMaximumMessageSize: true,
	attrMessageRetentionPeriod: true, attrDelaySeconds: true, attrReceiveMessageWaitTime: true,
	attrKmsMasterKeyID: true, attrKmsDataKeyReusePeriodSeconds: true, attrSqsManagedSseEnabled: true,
	attrRedrivePolicy: true, attrRedriveAllowPolicy: true, attrFifoQueue: true,
	attrContentBasedDeduplication: true, attrDeduplicationScope: true, attrFifoThroughputLimit: true,
	attrApproximateNumberOfMessages: true, attrApproximateNumberOfMessagesNotVisible: true,
	attrApproximateNumberOfMessagesDelayed: true, attrCreatedTimestamp: true,
	attrLastModifiedTimestamp: true, attrQueueArn: true,
}

const sseConflictMessage = "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE."

// applyAttributes validates the requested attribute changes against a queue
// whose attributes are current and returns the queue's new attribute map
// (current is not modified). The queue's type comes from current: FIFO
// attributes are refused on a standard queue. A RedrivePolicy is checked
// here on its own; where its target is, is for checkRedriveTarget. Names are
// checked in sorted order so that the error a request gets does not depend
// on map iteration.
func applyAttributes(current, req map[string]string) (map[string]string, *protocol.Error) {
	fifo := isFifo(current)
	next := maps.Clone(current)
	for _, name := range slices.Sorted(maps.Keys(req)) {
		value := req[name]
		if r, ok := intAttributes[name]; ok {
			n, err := strconv.Atoi(value)
			if err != nil || n < r.min || n > r.max {
				return nil, invalidAttributeValue(name)
			}
			next[name] = strconv.Itoa(n)
			continue
		}
		switch name {
		case attrSqsManagedSseEnabled:
			b, ok := parseBool(value)
			if !ok {
				return nil, invalidAttributeValue(name)
			}
			next[name] = strconv.FormatBool(b)
		case attrPolicy:
			if value == "" {
				delete(next, name)
				continue
			}
			if perr := checkPolicy(value); perr != nil {
				return nil, perr
			}
			next[name] = value
		case attrKmsMasterKeyID:
			if value == "" {
				delete(next, name)
				continue
			}
			next[name] = value
		case attrRedrivePolicy:
			if value == "" {
				delete(next, name)
				continue
			}
			p, perr := parseRedrivePolicy(value)
			if perr != nil {
				return nil, perr
			}
			next[name] = p.String()
		case attrRedriveAllowPolicy:
			if value == "" {
				delete(next, name)
				continue
			}
			p, perr := parseRedriveAllowPolicy(value)
			if perr != nil {
				return nil, perr
			}
			next[name] = p.String()
		case attrFifoQueue, attrContentBasedDeduplication, attrDeduplicationScope, attrFifoThroughputLimit:
			if perr := applyFifoAttribute(next, fifo, name, value); perr != nil {
				return nil, perr
			}
		default:
			return nil, unknownAttribute(name)
		}
	}
	// High throughput needs per-group deduplication, whichever of the two
	// the request changed. AWS's wording is recorded for a create asking
	// for both; a change of DeduplicationScope alone is assumed to get the
	// same answer.
	if fifo && next[attrFifoThroughputLimit] == throughputPerGroup && next[attrDeduplicationScope] != scopeMessageGroup {
		return nil, errInvalidAttributeValue.WithMessage(throughputNeedsScopeMsg)
	}
	// KMS and SQS-managed encryption exclude each other: asking for both is
	// an error, while a KMS key alone turns SQS-managed encryption off.
	if next[attrKmsMasterKeyID] != "" {
		if b, _ := parseBool(req[attrSqsManagedSseEnabled]); b {
			return nil, errInvalidAttributeName.WithMessage(sseConflictMessage)
		}
		if _, set := req[attrKmsMasterKeyID]; set {
			next[attrSqsManagedSseEnabled] = "false"
		}
	}
	return next, nil
}

// applyFifoAttribute validates one FIFO-only attribute into next. A
// standard queue knows none of them (with AWS's two wordings); FifoQueue
// can only be confirmed, never changed.
func applyFifoAttribute(next map[string]string, fifo bool, name, value string) *protocol.Error {
	if !fifo {
		if name == attrDeduplicationScope || name == attrFifoThroughputLimit {
			return errInvalidAttributeName.WithMessage("You can specify the %s only when FifoQueue is set to true.", name)
		}
		return unknownAttribute(name)
	}
	switch name {
	case attrFifoQueue:
		b, ok := parseBool(value)
		if !ok {
			return invalidAttributeValue(name)
		}
		if !b {
			return errInvalidAttributeValue.WithMessage(modifyingTypeMessage)
		}
	case attrContentBasedDeduplication:
		b, ok := parseBool(value)
		if !ok {
			return invalidAttributeValue(name)
		}
		next[name] = strconv.FormatBool(b)
	case attrDeduplicationScope:
		if value != scopeQueue && value != scopeMessageGroup {
			return invalidAttributeValue(name)
		}
		next[name] = value
	case attrFifoThroughputLimit:
		if value != throughputPerQueue && value != throughputPerGroup {
			return invalidAttributeValue(name)
		}
		next[name] = value
	}
	return nil
}

// parseBool reads a boolean attribute, case-insensitively as AWS does.
func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// settingsOf derives the engine's settings from validated attributes;
// home is the home region, of which the dead-letter queue's owner key
// depends (region.Owner).
func settingsOf(attrs map[string]string, home string) engine.QueueSettings {
	seconds := func(name string) time.Duration {
		n, _ := strconv.Atoi(attrs[name])
		return time.Duration(n) * time.Second
	}
	size, _ := strconv.Atoi(attrs[attrMaximumMessageSize])
	st := engine.QueueSettings{
		VisibilityTimeout: seconds(attrVisibilityTimeout),
		Delay:             seconds(attrDelaySeconds),
		Retention:         seconds(attrMessageRetentionPeriod),
		ReceiveWait:       seconds(attrReceiveMessageWaitTime),
		MaximumSize:       size,
		Redrive:           redriveOf(attrs, home),
	}
	if isFifo(attrs) {
		st.FIFO = true
		st.DeduplicationScope = attrs[attrDeduplicationScope]
	}
	return st
}

// firstDifference names the first attribute (in sorted order) whose value
// differs between two attribute maps, or "" when they agree.
func firstDifference(a, b map[string]string) string {
	names := slices.Collect(maps.Keys(a))
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		va, oka := a[n]
		vb, okb := b[n]
		if oka != okb || va != vb {
			return n
		}
	}
	return ""
}

// selectAttributes resolves GetQueueAttributes' names: nil for none, every
// readable name for All. An unknown name is an error.
func selectAttributes(names []string) (map[string]bool, *protocol.Error) {
	if len(names) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if !readableAttributes[n] {
			return nil, unknownAttribute(n)
		}
		if n == attrAll {
			return readableAttributes, nil
		}
		want[n] = true
	}
	return want, nil
}

// needsStats reports whether any of the wanted attributes is a message count.
func needsStats(want map[string]bool) bool {
	return want[attrApproximateNumberOfMessages] || want[attrApproximateNumberOfMessagesNotVisible] ||
		want[attrApproximateNumberOfMessagesDelayed]
}

// queueAttributes renders the wanted attributes of q. KMS's data key reuse
// period only shows while a KMS key is set.
func queueAttributes(q engine.Queue, arn string, stats engine.Stats, want map[string]bool) map[string]string {
	out := make(map[string]string, len(want))
	for name, v := range q.Attributes {
		if want[name] {
			out[name] = v
		}
	}
	if q.Attributes[attrKmsMasterKeyID] == "" {
		delete(out, attrKmsDataKeyReusePeriodSeconds)
	}
	computed := map[string]string{
		attrApproximateNumberOfMessages:           strconv.FormatInt(stats.Visible, 10),
		attrApproximateNumberOfMessagesNotVisible: strconv.FormatInt(stats.NotVisible, 10),
		attrApproximateNumberOfMessagesDelayed:    strconv.FormatInt(stats.Delayed, 10),
		attrCreatedTimestamp:                      strconv.FormatInt(q.Created.Unix(), 10),
		attrLastModifiedTimestamp:                 strconv.FormatInt(q.Modified.Unix(), 10),
		attrQueueArn:                              arn,
	}
	for _, name := range readOnlyAttributes {
		if want[name] {
			out[name] = computed[name]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
