// Package topology describes a Ferry's messaging topology as a file that a
// project checks into its repository: queues with their attributes and
// redrive policies, topics with their subscriptions, and alarms. Load reads
// the file (YAML, or JSON as the same document) and points every mistake
// at its line and column; Apply creates what the file describes through
// the services' own actions, idempotently; Export writes what a Ferry
// holds in the same format.
//
// Apply adds and updates, never removes: queues, topics, subscriptions,
// alarms, attributes and tags that a Ferry holds but the file does not
// name are left as they are (as Terraform leaves what it does not manage).
package topology

import (
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// Topology is one file: the queues, topics and alarms of one account in
// one region.
type Topology struct {
	// Account and Region, when set, are where the file's resources live;
	// otherwise the Ferry's own (its --account and --region).
	Account string  `json:"account,omitempty"`
	Region  string  `json:"region,omitempty"`
	Queues  []Queue `json:"queues,omitempty"`
	Topics  []Topic `json:"topics,omitempty"`
	Alarms  []Alarm `json:"alarms,omitempty"`
	Pos     Pos     `json:"-"`
}

// Queue is an SQS queue.
type Queue struct {
	Name string `json:"name"`
	// Attributes as CreateQueue names them. RedrivePolicy's
	// deadLetterTargetArn and RedriveAllowPolicy's sourceQueueArns may
	// name a queue of the same account and region instead of its ARN.
	Attributes Attributes        `json:"attributes,omitempty" topology:"queue"`
	Tags       map[string]string `json:"tags,omitempty"`
	Pos        Pos               `json:"-"`
}

// Topic is an SNS topic and its subscriptions.
type Topic struct {
	Name          string            `json:"name"`
	Attributes    Attributes        `json:"attributes,omitempty" topology:"topic"`
	Tags          map[string]string `json:"tags,omitempty"`
	Subscriptions []Subscription    `json:"subscriptions,omitempty"`
	Pos           Pos               `json:"-"`
}

// Subscription is a subscription of its topic. An sqs endpoint may name
// a queue of the same account and region instead of its ARN, and so may a
// RedrivePolicy's deadLetterTargetArn.
type Subscription struct {
	Protocol   string     `json:"protocol"`
	Endpoint   string     `json:"endpoint"`
	Attributes Attributes `json:"attributes,omitempty" topology:"subscription"`
	Pos        Pos        `json:"-"`
}

// Alarm is a CloudWatch metric alarm: PutMetricAlarm's request.
type Alarm struct {
	AlarmName                        string      `json:"AlarmName"`
	AlarmDescription                 *string     `json:"AlarmDescription,omitempty"`
	ActionsEnabled                   *bool       `json:"ActionsEnabled,omitempty"`
	OKActions                        []string    `json:"OKActions,omitempty"`
	AlarmActions                     []string    `json:"AlarmActions,omitempty"`
	InsufficientDataActions          []string    `json:"InsufficientDataActions,omitempty"`
	MetricName                       string      `json:"MetricName,omitempty"`
	Namespace                        string      `json:"Namespace,omitempty"`
	Statistic                        string      `json:"Statistic,omitempty"`
	ExtendedStatistic                string      `json:"ExtendedStatistic,omitempty"`
	Dimensions                       []Dimension `json:"Dimensions,omitempty"`
	Period                           *int32      `json:"Period,omitempty"`
	Unit                             string      `json:"Unit,omitempty"`
	EvaluationPeriods                *int32      `json:"EvaluationPeriods,omitempty"`
	DatapointsToAlarm                *int32      `json:"DatapointsToAlarm,omitempty"`
	Threshold                        *float64    `json:"Threshold,omitempty"`
	ComparisonOperator               string      `json:"ComparisonOperator,omitempty"`
	TreatMissingData                 string      `json:"TreatMissingData,omitempty"`
	EvaluateLowSampleCountPercentile string      `json:"EvaluateLowSampleCountPercentile,omitempty"`
	// Metrics (metric math) is passed on as written, for the service to
	// judge.
	Metrics           []any  `json:"Metrics,omitempty"`
	ThresholdMetricId string `json:"ThresholdMetricId,omitempty"`
	Tags              []Tag  `json:"Tags,omitempty"`
	Pos               Pos    `json:"-"`
}

// Dimension is a metric's dimension.
type Dimension struct {
	Name  string `json:"Name"`
	Value string `json:"Value"`
}

// Tag is an alarm's tag.
type Tag struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
}

// Attributes are a resource's attributes by AWS's names.
type Attributes map[string]Value

// Value is an attribute's value: Text is what the service receives. A
// JSON-valued attribute (a policy) written as a map is its compact JSON.
type Value struct {
	Text string
	Pos  Pos
}

// Pos is a place in a file.
type Pos struct {
	File         string
	Line, Column int
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Error is a mistake in a file, or the answer of the service to what it
// asked for, at its place.
type Error struct {
	Pos Pos
	Msg string
	Err error // the service's answer, when it is one
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Pos.String() + ": " + e.Msg + ": " + e.Err.Error()
	}
	return e.Pos.String() + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// kind is what an attribute's value is, for the loader to check its type
// and for Export to write it as that type.
type kind int

const (
	kindString kind = iota
	kindInt
	kindBool
	kindJSON // a JSON document: given as a string or as a map
)

// The attributes each resource may set, as CreateQueue, CreateTopic and
// Subscribe name them; read-only ones (QueueArn, Owner, ...) are not
// among them. Which values they take is the service's to judge.
var (
	queueAttributes = map[string]kind{
		"DelaySeconds": kindInt, "MaximumMessageSize": kindInt, "MessageRetentionPeriod": kindInt,
		"Policy": kindJSON, "ReceiveMessageWaitTimeSeconds": kindInt, "VisibilityTimeout": kindInt,
		"RedrivePolicy": kindJSON, "RedriveAllowPolicy": kindJSON,
		"KmsMasterKeyId": kindString, "KmsDataKeyReusePeriodSeconds": kindInt, "SqsManagedSseEnabled": kindBool,
		"FifoQueue": kindBool, "ContentBasedDeduplication": kindBool,
		"DeduplicationScope": kindString, "FifoThroughputLimit": kindString,
	}
	topicAttributes = func() map[string]kind {
		m := map[string]kind{
			"DisplayName": kindString, "Policy": kindJSON, "DeliveryPolicy": kindJSON,
			"KmsMasterKeyId": kindString, "SignatureVersion": kindString, "TracingConfig": kindString,
			"FifoTopic": kindBool, "ContentBasedDeduplication": kindBool, "ArchivePolicy": kindJSON,
			"FifoThroughputScope": kindString,
		}
		for _, p := range delivery.FeedbackProtocols {
			m[p+"SuccessFeedbackRoleArn"] = kindString
			m[p+"FailureFeedbackRoleArn"] = kindString
			m[p+"SuccessFeedbackSampleRate"] = kindInt
		}
		return m
	}()
	subscriptionAttributes = map[string]kind{
		"DeliveryPolicy": kindJSON, "FilterPolicy": kindJSON, "FilterPolicyScope": kindString,
		"RawMessageDelivery": kindBool, "RedrivePolicy": kindJSON, "SubscriptionRoleArn": kindString,
		"ReplayPolicy": kindJSON,
	}
)

// attributeKinds maps the topology struct tag of an Attributes field to
// its table.
var attributeKinds = map[string]map[string]kind{
	"queue":        queueAttributes,
	"topic":        topicAttributes,
	"subscription": subscriptionAttributes,
}
