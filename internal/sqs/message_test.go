package sqs

import (
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/digest"
	"github.com/ferrymq/ferry/internal/xmlchar"
)

func TestValidText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s  string
		ok bool
	}{
		{"hello", true},
		{"tab\tnl\ncr\r", true},
		{"\u00e9\u4e16\U0001F600", true},
		{"\uE000\uFFFD", true},
		{"\U0010FFFF", true},
		{"nul\x00", false},
		{"bs\x08", false},
		{"\x1f", false},
		{"\uFFFE", false},
		{"\uFFFF", false},
		{"bad utf-8 \xff", false},
		{"surrogate \xed\xa0\x80", false},
		{"", true},
	}
	for _, tt := range tests {
		if got := xmlchar.Valid(tt.s); got != tt.ok {
			t.Errorf("xmlchar.Valid(%q) = %v, want %v", tt.s, got, tt.ok)
		}
	}
}

func TestValidNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s  string
		ok bool
	}{
		{"42", true},
		{"-42", true},
		{"+42", true},
		{"3.14159", true},
		{"007", true},
		{"42.", true},
		{".5", true},
		{"0", true},
		{"0.000", true},
		{"1e5", true},
		{"1.5E-10", true},
		{strings.Repeat("9", 38), true},
		{strings.Repeat("9", 39), false},
		{"1" + strings.Repeat("0", 126), true},
		{"1" + strings.Repeat("0", 125) + ".5", false},
		{"2" + strings.Repeat("0", 126), false},
		{"1e126", true},
		{"1.1e126", false},
		{"1e-128", true},
		{"1e-129", false},
		{"0.001e-125", true},
		{"0e999999", true},
		{"", false},
		{"-", false},
		{".", false},
		{"abc", false},
		{"1.2.3", false},
		{"42abc", false},
		{"4 2", false},
		{"1,000", false},
		{"0x1f", false},
		{"1_000", false},
		{"1e", false},
		{"1e+", false},
		{"Inf", false},
		{"NaN", false},
		{"+-1", false},
		{" 1", false},
		{"1e99999999999999999999", false},
	}
	for _, tt := range tests {
		if got := validNumber(tt.s); got != tt.ok {
			t.Errorf("validNumber(%q) = %v, want %v", tt.s, got, tt.ok)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestBuildMessageErrors(t *testing.T) {
	t.Parallel()
	many := map[string]MessageAttributeValue{}
	for i := range 11 {
		many["a"+strings.Repeat("x", i)] = MessageAttributeValue{DataType: "String", StringValue: "v"}
	}
	s := func(v string) MessageAttributeValue { return MessageAttributeValue{DataType: "String", StringValue: v} }
	tests := []struct {
		name     string
		m        messageRequest
		max      int
		inBatch  bool
		fifo     bool
		content  bool // ContentBasedDeduplication on the FIFO queue
		code     string
		message  string
		contains bool
	}{
		{name: "empty body", m: messageRequest{}, code: "MissingParameter",
			message: "The request must contain the parameter MessageBody."},
		{name: "negative delay", m: messageRequest{body: "b", delay: ptr(-1)}, code: "InvalidParameterValue",
			message: "Value -1 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900."},
		{name: "delay too long", m: messageRequest{body: "b", delay: ptr(901)}, code: "InvalidParameterValue",
			message: "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900."},
		{name: "bad group id", m: messageRequest{body: "b", groupID: ptr("group 123")}, code: "InvalidParameterValue",
			message: "Value group 123 for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{name: "empty group id", m: messageRequest{body: "b", groupID: ptr("")}, code: "InvalidParameterValue",
			message: "Value  for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{name: "dedup id on standard", m: messageRequest{body: "b", dedupID: ptr("d1")}, code: "InvalidParameterValue",
			message: "Value d1 for parameter MessageDeduplicationId is invalid. Reason: The request includes a parameter that is not valid for this queue type."},
		{name: "bad body", m: messageRequest{body: "a\x00"}, code: "InvalidMessageContents",
			message: invalidCharactersMessage},
		{name: "too long", m: messageRequest{body: strings.Repeat("x", 1025)}, max: 1024, code: "InvalidParameterValue",
			message: "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."},
		{name: "too long in batch", m: messageRequest{body: strings.Repeat("x", 1025)}, max: 1024, inBatch: true, code: "InvalidParameterValue",
			message: "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes."},
		{name: "attributes count toward size", max: 1024, code: "InvalidParameterValue", contains: true,
			m:       messageRequest{body: strings.Repeat("x", 1000), attrs: map[string]MessageAttributeValue{"name": s(strings.Repeat("v", 15))}},
			message: "shorter than 1024 bytes"},
		{name: "eleven attributes", m: messageRequest{body: "b", attrs: many}, code: "InvalidParameterValue",
			message: "Number of message attributes [11] exceeds the allowed maximum [10]."},
		{name: "empty string value", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"ErrorDetails": s("")}},
			code: "InvalidParameterValue", message: "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'."},
		{name: "bad type", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"invalidAttribute": {DataType: "InvalidType", StringValue: "v"}}},
			code:    "InvalidParameterValue",
			message: "The type of message (user) attribute 'invalidAttribute' is invalid. You must use only the following supported type prefixes: Binary, Number, String."},
		{name: "lowercase type", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a": {DataType: "string", StringValue: "v"}}},
			code: "InvalidParameterValue", message: "supported type prefixes", contains: true},
		{name: "missing type", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a": {StringValue: "v"}}},
			code: "InvalidParameterValue", message: "non-empty message attribute type", contains: true},
		{name: "long type", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a": {DataType: "String." + strings.Repeat("t", 249), StringValue: "v"}}},
			code: "InvalidParameterValue", message: "Message (user) attribute types must be shorter than 256 Bytes"},
		{name: "not a number", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"Age": {DataType: "Number", StringValue: "Hello"}}},
			code: "InvalidParameterValue", message: "Can't cast the value of message (user) attribute 'Age' to a number."},
		{name: "empty binary", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"bin": {DataType: "Binary"}}},
			code: "InvalidParameterValue", message: "Message (user) attribute 'bin' must contain a non-empty value of type 'Binary'."},
		{name: "bad string value", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a": s("\x01")}},
			code: "InvalidParameterValue", message: invalidCharactersMessage},
		{name: "AWS. prefix", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"AWS.trace": s("v")}},
			code: "InvalidParameterValue", message: "reserved for internal use", contains: true},
		{name: "amazon. prefix any case", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"AmAzOn.x": s("v")}},
			code: "InvalidParameterValue", message: "reserved for internal use", contains: true},
		{name: "leading dot", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{".a": s("v")}},
			code: "InvalidParameterValue", message: "cannot start or end with '.'", contains: true},
		{name: "trailing dot", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a.": s("v")}},
			code: "InvalidParameterValue", message: "cannot start or end with '.'", contains: true},
		{name: "double dot", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a..b": s("v")}},
			code: "InvalidParameterValue", message: "successive '.'", contains: true},
		{name: "space in name", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a b": s("v")}},
			code:    "InvalidParameterValue",
			message: "Message (user) attributes name can only contain upper and lower score characters, digits, periods, hyphens and underscores. "},
		// AWS documents A-Z, a-z, 0-9, '_', '-' and '.': letters outside
		// ASCII are refused, whichever UTF-8 length they take.
		{name: "umlaut in name", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"\u00f6ther_encodings": s("v")}},
			code:    "InvalidParameterValue",
			message: "Message (user) attributes name can only contain upper and lower score characters, digits, periods, hyphens and underscores. "},
		{name: "capital with diacritic", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"\u00c0": s("v")}},
			code: "InvalidParameterValue", message: "upper and lower score characters", contains: true},
		{name: "letter beyond Latin-1", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"a\u017fb": s("v")}},
			code: "InvalidParameterValue", message: "upper and lower score characters", contains: true},
		{name: "empty name", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"": s("v")}},
			code: "InvalidParameterValue", message: "reserved for internal use", contains: true},
		{name: "256-byte name", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{strings.Repeat("n", 256): s("v")}},
			code: "InvalidParameterValue", message: "Message (user) attribute names must be shorter than 256 Bytes"},
		{name: "unknown system attribute", m: messageRequest{body: "b", sysAttrs: map[string]MessageAttributeValue{"Foo": s("v")}},
			code: "InvalidParameterValue", message: "Message system attribute name 'Foo' is invalid."},
		{name: "binary trace header", m: messageRequest{body: "b", sysAttrs: map[string]MessageAttributeValue{"AWSTraceHeader": {DataType: "Binary", BinaryValue: []byte("x")}}},
			code: "InvalidParameterValue", message: "must be of type 'String'", contains: true},
		{name: "fifo: no group id", fifo: true, content: true, m: messageRequest{body: "b"}, code: "MissingParameter",
			message: "The request must contain the parameter MessageGroupId."},
		{name: "fifo: no group id comes first", fifo: true, m: messageRequest{body: "b", delay: ptr(5)}, code: "MissingParameter",
			message: "The request must contain the parameter MessageGroupId."},
		{name: "fifo: bad group id", fifo: true, m: messageRequest{body: "b", groupID: ptr("g\u00e9")}, code: "InvalidParameterValue",
			message: "Value g\u00e9 for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{name: "fifo: group id too long", fifo: true, m: messageRequest{body: "b", groupID: ptr(strings.Repeat("g", 129)), dedupID: ptr("d")}, code: "InvalidParameterValue",
			message: "1 to 128 in length", contains: true},
		{name: "fifo: no dedup id", fifo: true, m: messageRequest{body: "b", groupID: ptr("g")}, code: "InvalidParameterValue",
			message: "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"},
		{name: "fifo: bad dedup id", fifo: true, m: messageRequest{body: "b", groupID: ptr("g"), dedupID: ptr("a b")}, code: "InvalidParameterValue",
			message: "Value a b for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{name: "fifo: empty dedup id", fifo: true, content: true, m: messageRequest{body: "b", groupID: ptr("g"), dedupID: ptr("")}, code: "InvalidParameterValue",
			message: "Value  for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."},
		{name: "fifo: dedup id too long", fifo: true, m: messageRequest{body: "b", groupID: ptr("g"), dedupID: ptr(strings.Repeat("d", 129))}, code: "InvalidParameterValue",
			message: "1 to 128 in length", contains: true},
		{name: "fifo: message delay", fifo: true, content: true, m: messageRequest{body: "b", groupID: ptr("g"), delay: ptr(5)}, code: "InvalidParameterValue",
			message: "Value 5 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."},
		{name: "fifo: delay out of range first", fifo: true, content: true, m: messageRequest{body: "b", groupID: ptr("g"), delay: ptr(901)}, code: "InvalidParameterValue",
			message: "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900."},
		{name: "fifo: too long", fifo: true, content: true, max: 1024, m: messageRequest{body: strings.Repeat("x", 1025), groupID: ptr("g")}, code: "InvalidParameterValue",
			message: "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."},
		// Errors come in name order, whatever the map's order.
		{name: "first name wins", m: messageRequest{body: "b", attrs: map[string]MessageAttributeValue{"zz bad": s("v"), "AWS.first": s("v")}},
			code: "InvalidParameterValue", message: "reserved for internal use", contains: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.max
			if limit == 0 {
				limit = 1 << 20
			}
			for range 5 {
				_, err := buildMessage(tt.m, queueRules{maxSize: limit, fifo: tt.fifo, contentDedup: tt.content}, "sender", tt.inBatch)
				if err == nil {
					t.Fatal("buildMessage accepted the message")
				}
				if err.Code != tt.code {
					t.Errorf("code = %q, want %q", err.Code, tt.code)
				}
				if tt.contains && !strings.Contains(err.Message, tt.message) || !tt.contains && err.Message != tt.message {
					t.Errorf("message = %q, want %q", err.Message, tt.message)
				}
			}
		})
	}
}

func TestBuildMessageAccepts(t *testing.T) {
	t.Parallel()
	m, err := buildMessage(messageRequest{
		body:  "msg",
		delay: ptr(0),
		attrs: map[string]MessageAttributeValue{
			"Foo":     {DataType: "String", StringValue: "Bar", BinaryValue: []byte("ignored")},
			"n":       {DataType: "Number.float", StringValue: "1.5"},
			"blob":    {DataType: "Binary.png", BinaryValue: []byte{0, 1, 2}},
			"Z-9_0.a": {DataType: "String", StringValue: "ok"},
			"a.b-c_d": {DataType: "String.json", StringValue: "{}"},
		},
		sysAttrs: map[string]MessageAttributeValue{"AWSTraceHeader": {DataType: "String", StringValue: "Root=1"}},
		groupID:  ptr("tenant-1"),
	}, queueRules{maxSize: 1 << 20}, "AKIDEXAMPLE", false)
	if err != nil {
		t.Fatal(err)
	}
	if m.MD5OfBody != "6e2baaf3b97dbeef01c0043275f9a0e7" {
		t.Errorf("MD5OfBody = %q", m.MD5OfBody)
	}
	if len(m.Attributes) != 5 || m.Attributes[0].Name != "Foo" || m.Attributes[0].BinaryValue != nil {
		t.Errorf("attributes = %+v", m.Attributes)
	}
	if m.MD5OfAttrs != digest.MD5OfAttributes(m.Attributes) || m.MD5OfSysAttrs != digest.MD5OfAttributes(traceHeaderAttrs("Root=1")) {
		t.Error("digests do not match the attributes")
	}
	if m.Delay == nil || *m.Delay != 0 || m.MessageGroupID != "tenant-1" || m.TraceHeader != "Root=1" || m.SenderID != "AKIDEXAMPLE" {
		t.Errorf("message = %+v", m)
	}
	exact, err := buildMessage(messageRequest{body: strings.Repeat("x", 1000), attrs: map[string]MessageAttributeValue{"name": {DataType: "String", StringValue: strings.Repeat("v", 14)}}}, queueRules{maxSize: 1024}, "", false)
	if err != nil || exact.Delay != nil {
		t.Errorf("a message of exactly the maximum size: %v, delay %v", err, exact.Delay)
	}
}

func TestBuildFifoMessage(t *testing.T) {
	t.Parallel()
	const sha256OfHello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	tests := []struct {
		name      string
		m         messageRequest
		content   bool
		wantDedup string
	}{
		{name: "explicit id", m: messageRequest{body: "hello", groupID: ptr("g"), dedupID: ptr("id-1")}, wantDedup: "id-1"},
		{name: "explicit id wins over content", content: true, m: messageRequest{body: "hello", groupID: ptr("g"), dedupID: ptr("id-1")}, wantDedup: "id-1"},
		{name: "content-based", content: true, m: messageRequest{body: "hello", groupID: ptr("g")}, wantDedup: sha256OfHello},
		{name: "attributes do not count", content: true, wantDedup: sha256OfHello,
			m: messageRequest{body: "hello", groupID: ptr("g"), attrs: map[string]MessageAttributeValue{"a": {DataType: "String", StringValue: "v"}}}},
		{name: "zero delay accepted", content: true, m: messageRequest{body: "hello", groupID: ptr("g"), delay: ptr(0)}, wantDedup: sha256OfHello},
		{name: "punctuation ids", m: messageRequest{body: "hello", groupID: ptr(`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~` + "`"), dedupID: ptr(strings.Repeat("z", 128))},
			wantDedup: strings.Repeat("z", 128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := buildMessage(tt.m, queueRules{maxSize: 1 << 20, fifo: true, contentDedup: tt.content}, "s", false)
			if err != nil {
				t.Fatalf("%s: %s", err.Code, err.Message)
			}
			if m.DeduplicationID != tt.wantDedup {
				t.Errorf("DeduplicationID = %q, want %q", m.DeduplicationID, tt.wantDedup)
			}
			// A FIFO message never carries its own delay: the queue's applies.
			if m.Delay != nil {
				t.Errorf("Delay = %v", *m.Delay)
			}
			if m.MessageGroupID != *tt.m.groupID {
				t.Errorf("MessageGroupID = %q", m.MessageGroupID)
			}
		})
	}
	// A standard queue takes no deduplication id and keeps a zero delay.
	m, err := buildMessage(messageRequest{body: "hello", groupID: ptr("g"), delay: ptr(0)}, queueRules{maxSize: 1 << 20}, "s", false)
	if err != nil || m.DeduplicationID != "" || m.Delay == nil || *m.Delay != 0 {
		t.Errorf("standard: %+v, %v", m, err)
	}
}
