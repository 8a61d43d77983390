package sqs

import (
	"maps"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

func TestApplyAttributes(t *testing.T) {
	t.Parallel()
	def := defaultAttributes()
	with := func(kv ...string) map[string]string {
		m := maps.Clone(def)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<absent>" {
				delete(m, kv[i])
				continue
			}
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		current map[string]string
		req     map[string]string
		want    map[string]string
		code    string
		message string
	}{
		{name: "no change", req: nil, want: def},
		{name: "ints at their bounds", req: map[string]string{
			"DelaySeconds": "900", "MaximumMessageSize": "1024", "MessageRetentionPeriod": "1209600",
			"ReceiveMessageWaitTimeSeconds": "20", "VisibilityTimeout": "43200", "KmsDataKeyReusePeriodSeconds": "60"},
			want: with("DelaySeconds", "900", "MaximumMessageSize", "1024", "MessageRetentionPeriod", "1209600",
				"ReceiveMessageWaitTimeSeconds", "20", "VisibilityTimeout", "43200", "KmsDataKeyReusePeriodSeconds", "60")},
		{name: "ints are normalised", req: map[string]string{"VisibilityTimeout": "+045"}, want: with("VisibilityTimeout", "45")},
		{name: "delay too long", req: map[string]string{"DelaySeconds": "901"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter DelaySeconds."},
		{name: "size too small", req: map[string]string{"MaximumMessageSize": "1023"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter MaximumMessageSize."},
		{name: "size too large", req: map[string]string{"MaximumMessageSize": "1048577"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter MaximumMessageSize."},
		{name: "retention too short", req: map[string]string{"MessageRetentionPeriod": "59"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter MessageRetentionPeriod."},
		{name: "wait too long", req: map[string]string{"ReceiveMessageWaitTimeSeconds": "21"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter ReceiveMessageWaitTimeSeconds."},
		{name: "visibility not a number", req: map[string]string{"VisibilityTimeout": "thirty"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter VisibilityTimeout."},
		{name: "kms reuse too short", req: map[string]string{"KmsDataKeyReusePeriodSeconds": "59"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter KmsDataKeyReusePeriodSeconds."},
		{name: "bool case-insensitive in, lowercase out", req: map[string]string{"SqsManagedSseEnabled": "False"}, want: with("SqsManagedSseEnabled", "false")},
		{name: "bad bool", req: map[string]string{"SqsManagedSseEnabled": "yes"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter SqsManagedSseEnabled."},
		{name: "unknown", req: map[string]string{"Colour": "blue"}, code: "InvalidAttributeName", message: "Unknown Attribute Colour."},
		{name: "names are case-sensitive", req: map[string]string{"visibilityTimeout": "1"}, code: "InvalidAttributeName", message: "Unknown Attribute visibilityTimeout."},
		{name: "read-only", req: map[string]string{"QueueArn": "arn"}, code: "InvalidAttributeName", message: "Unknown Attribute QueueArn."},
		{name: "All is no attribute", req: map[string]string{"All": "1"}, code: "InvalidAttributeName", message: "Unknown Attribute All."},
		{name: "FifoQueue on standard", req: map[string]string{"FifoQueue": "false"}, code: "InvalidAttributeName", message: "Unknown Attribute FifoQueue."},
		{name: "ContentBasedDeduplication on standard", req: map[string]string{"ContentBasedDeduplication": "true"}, code: "InvalidAttributeName", message: "Unknown Attribute ContentBasedDeduplication."},
		{name: "DeduplicationScope on standard", req: map[string]string{"DeduplicationScope": "queue"}, code: "InvalidAttributeName", message: "You can specify the DeduplicationScope only when FifoQueue is set to true."},
		{name: "FifoThroughputLimit on standard", req: map[string]string{"FifoThroughputLimit": "perQueue"}, code: "InvalidAttributeName", message: "You can specify the FifoThroughputLimit only when FifoQueue is set to true."},
		{name: "RedrivePolicy normalised", req: map[string]string{"RedrivePolicy": `{ "maxReceiveCount": "3", "deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:dlq" }`},
			want: with("RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3}`)},
		{name: "RedriveAllowPolicy normalised", req: map[string]string{"RedriveAllowPolicy": `{"sourceQueueArns":["a<b"], "redrivePermission":"byQueue"}`},
			want: with("RedriveAllowPolicy", `{"redrivePermission":"byQueue","sourceQueueArns":["a<b"]}`)},
		{name: "bad RedrivePolicy", req: map[string]string{"RedrivePolicy": "[]"}, code: "InvalidParameterValue",
			message: "Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map."},
		{name: "empty RedrivePolicy removes it", current: with("RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3}`),
			req: map[string]string{"RedrivePolicy": ""}, want: def},
		{name: "empty RedriveAllowPolicy removes it", current: with("RedriveAllowPolicy", `{"redrivePermission":"denyAll"}`),
			req: map[string]string{"RedriveAllowPolicy": ""}, want: def},
		{name: "empty RedrivePolicy on a queue without one", req: map[string]string{"RedrivePolicy": ""}, want: def},
		{name: "policy", req: map[string]string{"Policy": validPolicy}, want: with("Policy", validPolicy)},
		{name: "bad policy", req: map[string]string{"Policy": "not json"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter Policy."},
		{name: "policy without statements", req: map[string]string{"Policy": `{"Version":"2012-10-17"}`}, code: "InvalidAttributeValue", message: "Invalid value for the parameter Policy."},
		{name: "policy without principal", req: map[string]string{"Policy": `{"Statement":{"Effect":"Allow","Action":"sqs:*"}}`}, code: "InvalidAttributeValue", message: "Invalid value for the parameter Policy."},
		{name: "policy with a bad effect", req: map[string]string{"Policy": `{"Statement":{"Effect":"Permit","Principal":"*","Action":"sqs:*"}}`}, code: "InvalidAttributeValue", message: "Invalid value for the parameter Policy."},
		{name: "policy with a bad operator", req: map[string]string{"Policy": `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Condition":{"StringIs":{"aws:SourceArn":"x"}}}}`}, code: "InvalidAttributeValue", message: "Invalid value for the parameter Policy."},
		{name: "empty policy removes it", current: with("Policy", "{}"), req: map[string]string{"Policy": ""}, want: def},
		{name: "kms key turns SQS SSE off", req: map[string]string{"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000"},
			want: with("KmsMasterKeyId", "testKeyId", "KmsDataKeyReusePeriodSeconds", "6000", "SqsManagedSseEnabled", "false")},
		{name: "kms and sqs sse together", req: map[string]string{"KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "true"},
			code: "InvalidAttributeName", message: "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE."},
		{name: "sqs sse on a kms queue", current: with("KmsMasterKeyId", "k", "SqsManagedSseEnabled", "false"), req: map[string]string{"SqsManagedSseEnabled": "TRUE"},
			code: "InvalidAttributeName", message: sseConflictMessage},
		{name: "removing the kms key", current: with("KmsMasterKeyId", "k", "SqsManagedSseEnabled", "false"), req: map[string]string{"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"},
			want: with("SqsManagedSseEnabled", "false")},
		{name: "kms with sqs sse off", req: map[string]string{"KmsMasterKeyId": "k", "SqsManagedSseEnabled": "false"},
			want: with("KmsMasterKeyId", "k", "SqsManagedSseEnabled", "false")},
		// Names are checked in sorted order: Colour before DelaySeconds.
		{name: "first error by name", req: map[string]string{"DelaySeconds": "-1", "Colour": "x"}, code: "InvalidAttributeName", message: "Unknown Attribute Colour."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := tt.current
			if current == nil {
				current = def
			}
			before := maps.Clone(current)
			got, err := applyAttributes(current, tt.req)
			if !maps.Equal(current, before) {
				t.Error("applyAttributes modified the current map")
			}
			if tt.code != "" {
				if err == nil {
					t.Fatalf("accepted, got %v", got)
				}
				if err.Code != tt.code || tt.message != "" && err.Message != tt.message {
					t.Errorf("error = %s %q, want %s %q", err.Code, err.Message, tt.code, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("attributes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSettingsOf(t *testing.T) {
	t.Parallel()
	attrs, err := applyAttributes(defaultAttributes(), map[string]string{"DelaySeconds": "5", "ReceiveMessageWaitTimeSeconds": "7", "MaximumMessageSize": "2048"})
	if err != nil {
		t.Fatal(err)
	}
	want := engine.QueueSettings{VisibilityTimeout: 30 * time.Second, Delay: 5 * time.Second, Retention: 96 * time.Hour, ReceiveWait: 7 * time.Second, MaximumSize: 2048}
	if got := settingsOf(attrs, testRegion); got != want {
		t.Errorf("settingsOf = %+v, want %+v", got, want)
	}
}

func TestFirstDifference(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b map[string]string
		want string
	}{
		{map[string]string{"A": "1"}, map[string]string{"A": "1"}, ""},
		{map[string]string{"A": "1", "B": "2"}, map[string]string{"A": "1", "B": "3"}, "B"},
		{map[string]string{"A": "1"}, map[string]string{"A": "1", "Policy": "{}"}, "Policy"},
		{map[string]string{"Z": "1", "B": "1"}, map[string]string{}, "B"},
	}
	for _, tt := range tests {
		if got := firstDifference(tt.a, tt.b); got != tt.want {
			t.Errorf("firstDifference(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSelectAttributes(t *testing.T) {
	t.Parallel()
	if want, err := selectAttributes(nil); want != nil || err != nil {
		t.Errorf("no names: %v, %v", want, err)
	}
	if _, err := selectAttributes([]string{"QueueArn", "Nope"}); err == nil || err.Message != "Unknown Attribute Nope." {
		t.Errorf("unknown name: %v", err)
	}
	want, err := selectAttributes([]string{"FifoQueue", "All"})
	if err != nil || !want["QueueArn"] || !want["VisibilityTimeout"] || !needsStats(want) {
		t.Errorf("All: %v, %v", want, err)
	}
	want, _ = selectAttributes([]string{"DelaySeconds"})
	if needsStats(want) {
		t.Error("DelaySeconds needs no stats")
	}
}

func TestApplyFifoAttributes(t *testing.T) {
	t.Parallel()
	def := fifoDefaultAttributes()
	with := func(kv ...string) map[string]string {
		m := maps.Clone(def)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const needScope = "Invalid value for the parameter FifoThroughputLimit. Reason: To set FifoThroughputLimit to perMessageGroupId, the DeduplicationScope must be messageGroup."
	highThroughput := with("DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId")
	tests := []struct {
		name    string
		current map[string]string
		req     map[string]string
		want    map[string]string
		code    string
		message string
	}{
		{name: "defaults", want: def},
		{name: "FifoQueue true is a no-op", req: map[string]string{"FifoQueue": "TRUE"}, want: def},
		{name: "FifoQueue false", req: map[string]string{"FifoQueue": "false"}, code: "InvalidAttributeValue",
			message: "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported."},
		{name: "FifoQueue garbage", req: map[string]string{"FifoQueue": "yes"}, code: "InvalidAttributeValue", message: "Invalid value for the parameter FifoQueue."},
		{name: "content dedup", req: map[string]string{"ContentBasedDeduplication": "True"}, want: with("ContentBasedDeduplication", "true")},
		{name: "content dedup off", current: with("ContentBasedDeduplication", "true"), req: map[string]string{"ContentBasedDeduplication": "false"}, want: def},
		{name: "content dedup garbage", req: map[string]string{"ContentBasedDeduplication": "1"}, code: "InvalidAttributeValue",
			message: "Invalid value for the parameter ContentBasedDeduplication."},
		{name: "scope messageGroup", req: map[string]string{"DeduplicationScope": "messageGroup"}, want: with("DeduplicationScope", "messageGroup")},
		{name: "scope is case-sensitive", req: map[string]string{"DeduplicationScope": "MessageGroup"}, code: "InvalidAttributeValue",
			message: "Invalid value for the parameter DeduplicationScope."},
		{name: "scope garbage", req: map[string]string{"DeduplicationScope": ""}, code: "InvalidAttributeValue", message: "Invalid value for the parameter DeduplicationScope."},
		{name: "limit garbage", req: map[string]string{"FifoThroughputLimit": "perGroup"}, code: "InvalidAttributeValue",
			message: "Invalid value for the parameter FifoThroughputLimit."},
		{name: "high throughput", req: map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}, want: highThroughput},
		{name: "per-group limit needs group scope", req: map[string]string{"FifoThroughputLimit": "perMessageGroupId"}, code: "InvalidAttributeValue", message: needScope},
		{name: "per-group limit with queue scope", req: map[string]string{"FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "queue"},
			code: "InvalidAttributeValue", message: needScope},
		{name: "per-group limit on a group-scoped queue", current: with("DeduplicationScope", "messageGroup"),
			req: map[string]string{"FifoThroughputLimit": "perMessageGroupId"}, want: highThroughput},
		{name: "scope back to queue under per-group limit", current: highThroughput, req: map[string]string{"DeduplicationScope": "queue"},
			code: "InvalidAttributeValue", message: needScope},
		{name: "group scope with per-queue limit", current: highThroughput, req: map[string]string{"FifoThroughputLimit": "perQueue"},
			want: with("DeduplicationScope", "messageGroup")},
		{name: "standard attributes still apply", req: map[string]string{"DelaySeconds": "10", "ContentBasedDeduplication": "true"},
			want: with("DelaySeconds", "10", "ContentBasedDeduplication", "true")},
		{name: "unknown", req: map[string]string{"FifoQueues": "true"}, code: "InvalidAttributeName", message: "Unknown Attribute FifoQueues."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := tt.current
			if current == nil {
				current = def
			}
			before := maps.Clone(current)
			got, err := applyAttributes(current, tt.req)
			if !maps.Equal(current, before) {
				t.Error("applyAttributes modified the current map")
			}
			if tt.code != "" {
				if err == nil {
					t.Fatalf("accepted, got %v", got)
				}
				if err.Code != tt.code || err.Message != tt.message {
					t.Errorf("error = %s %q, want %s %q", err.Code, err.Message, tt.code, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %s", err.Code, err.Message)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("attributes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFifoSettingsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		attrs map[string]string
		fifo  bool
		scope string
	}{
		{"standard", defaultAttributes(), false, ""},
		{"fifo", fifoDefaultAttributes(), true, "queue"},
		{"fifo per group", func() map[string]string {
			a := fifoDefaultAttributes()
			a["DeduplicationScope"] = "messageGroup"
			return a
		}(), true, "messageGroup"},
	}
	for _, tt := range tests {
		st := settingsOf(tt.attrs, testRegion)
		if st.FIFO != tt.fifo || st.DeduplicationScope != tt.scope || st.VisibilityTimeout != 30*time.Second {
			t.Errorf("%s: settings = %+v", tt.name, st)
		}
	}
}

// validPolicy is a document SQS accepts: a grant to another account with
// a condition.
const validPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"sqs:SendMessage","Resource":"arn:aws:sqs:eu-west-1:123456789012:q","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`
