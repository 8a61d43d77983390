package sns

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// wantErr checks a *protocol.Error's code and message ("" for no error).
func wantErr(t *testing.T, what string, err error, code, message string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Errorf("%s: unexpected %v", what, err)
		}
		return
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v, want %s", what, err, code)
		return
	}
	if pe.Code != code || pe.Message != message {
		t.Errorf("%s: %s %q, want %s %q", what, pe.Code, pe.Message, code, message)
	}
}

func sp(s string) *string { return &s }

func TestCheckAttributes(t *testing.T) {
	t.Parallel()
	str := func(v string) messageAttributeValue {
		return messageAttributeValue{DataType: "String", StringValue: sp(v)}
	}
	tests := []struct {
		name  string
		attrs map[string]messageAttributeValue
		pos   int
		code  string
		msg   string
	}{
		{"valid", map[string]messageAttributeValue{"a.b-c_D9": str("x"), "n": {DataType: "Number.int", StringValue: sp("-1.5e3")},
			"arr": {DataType: "String.Array", StringValue: sp(`["a",1,true,null]`)}, "bin": {DataType: "Binary", BinaryValue: []byte{1}}}, 0, "", ""},
		{"long name", map[string]messageAttributeValue{strings.Repeat("a", 257): str("x")}, 0, "ParameterValueInvalid", "Length of message attribute name must be less than 256 bytes."},
		{"bad char", map[string]messageAttributeValue{"a b": str("x")}, 0, "ParameterValueInvalid",
			"Invalid non-alphanumeric character '#x20' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots."},
		{"reserved", map[string]messageAttributeValue{"aws.x": str("x")}, 0, "ParameterValueInvalid",
			"The message attribute name 'aws.x' is reserved: names starting with 'AWS.' or 'Amazon.' are for internal use."},
		{"no type", map[string]messageAttributeValue{"a": {StringValue: sp("x")}}, 0, "ValidationError",
			"1 validation error detected: Value null at 'messageAttributes.a.member.dataType' failed to satisfy constraint: Member must not be null"},
		{"no type in batch", map[string]messageAttributeValue{"a": {StringValue: sp("x")}}, 3, "ValidationError",
			"1 validation error detected: Value null at 'publishBatchRequestEntries.3.member.messageAttributes.a.member.dataType' failed to satisfy constraint: Member must not be null"},
		{"empty custom type", map[string]messageAttributeValue{"a": {DataType: "String.", StringValue: sp("x")}}, 0, "ParameterValueInvalid",
			"The message attribute 'a' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."},
		{"not a number", map[string]messageAttributeValue{"a": {DataType: "Number", StringValue: sp("12abc")}}, 0, "ParameterValueInvalid",
			"Could not cast message attribute 'a' value to number."},
		{"not an array", map[string]messageAttributeValue{"a": {DataType: "String.Array", StringValue: sp(`[{"x":1}]`)}}, 0, "ParameterValueInvalid",
			"The message attribute 'a' with type 'String.Array' must be a JSON array of strings, numbers, true, false or null."},
		{"emoji", map[string]messageAttributeValue{"a": str("hi \U0001F600")}, 0, "ParameterValueInvalid",
			"Invalid attribute value was passed in for message attribute a."},
		{"control", map[string]messageAttributeValue{"a": str("\x01")}, 0, "ParameterValueInvalid",
			"Invalid attribute value was passed in for message attribute a."},
	}
	for _, tt := range tests {
		_, _, _, err := checkAttributes(tt.attrs, tt.pos)
		wantErr(t, tt.name, err, tt.code, tt.msg)
	}
	_, list, size, _ := checkAttributes(map[string]messageAttributeValue{"b": str("xy"), "a": {DataType: "Binary", BinaryValue: []byte{1, 2, 3}}}, 0)
	if len(list) != 2 || list[0].Name != "a" || size != len("b")+len("String")+2+len("a")+len("Binary")+3 {
		t.Errorf("list %v, size %d", list, size)
	}
}

func TestCheckSubjectAndIDs(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{"Hello": true, "": false, "a\nb": false, "\tx": false, " lead": false,
		strings.Repeat("é", 99): true, strings.Repeat("x", 100): true, strings.Repeat("é", 100): true,
		strings.Repeat("x", 101): false, strings.Repeat("é", 101): false, "bad\xff": false} {
		if err := checkSubject(&s); (err == nil) != ok {
			t.Errorf("checkSubject(%q) = %v", s, err)
		}
	}
	for s, ok := range map[string]bool{"g1": true, "!#$%": true, "": false, "a b": false, strings.Repeat("x", 128): true, strings.Repeat("x", 129): false, "é": false} {
		if isPunctID(s) != ok {
			t.Errorf("isPunctID(%q) != %v", s, ok)
		}
	}
	for id, ok := range map[string]bool{"a-b_C9": true, strings.Repeat("i", 80): true, strings.Repeat("i", 81): false, "a.b": false, "": false} {
		if err := checkBatchID(id); (err == nil) != ok {
			t.Errorf("checkBatchID(%q) = %v", id, err)
		}
	}
}

func TestParseStructure(t *testing.T) {
	t.Parallel()
	m, err := parseStructure(`{"default":"d","sqs":"q","http":{"x":1},"email":3}`)
	if err != nil || len(m) != 2 || m["sqs"] != "q" {
		t.Errorf("parse: %v %v", m, err)
	}
	_, err = parseStructure(`{"sqs":"q"}`)
	wantErr(t, "no default", err, "InvalidParameter", "Invalid parameter: Message Structure - No default entry in JSON message body")
	_, err = parseStructure(`["default"]`)
	wantErr(t, "array", err, "InvalidParameter", "Invalid parameter: Message Structure - No default entry in JSON message body")
	_, err = parseStructure(`{"default":`)
	wantErr(t, "broken", err, "InvalidParameter", "Invalid parameter: Message Structure - JSON message body failed to parse")
	msg := &message{Message: delivery.Message{Body: "raw", PerProtocol: m}}
	if msg.TextFor("sqs") != "q" || msg.TextFor("lambda") != "d" {
		t.Error("TextFor picks the protocol's string, else default")
	}
}

func testService() *Service {
	return &Service{account: "000000000000", region: "us-east-1"}
}

// TestARNs: the ARN parameters' form, and their region, which must be
// the request's (signed in us-east-1 here).
func TestARNs(t *testing.T) {
	t.Parallel()
	s := testService()
	ctx := protocol.WithInfo(context.Background(), &protocol.RequestInfo{AccessKey: "AKID", Account: "000000000000", Region: "us-east-1"})
	for _, tt := range []struct {
		arn, code, msg string
	}{
		{"arn:aws:sns:us-east-1:000000000000:t", "", ""},
		{"", "InvalidParameter", "Invalid parameter: TopicArn Reason: no value for required parameter"},
		{"t", "InvalidParameter", "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 1"},
		{"arn:aws:sqs:us-east-1:000000000000:t", "InvalidParameter", "Invalid parameter: TopicArn"},
		{"arn:aws:sns:us-west-2:000000000000:t", "InvalidParameter", "Invalid parameter: TopicArn"},
		{"arn:aws:sns:us-east-1:000000000000:t:x", "InvalidParameter", "Invalid parameter: TopicArn"},
		// Another account's ARN is well formed: whether the topic exists,
		// and whether the caller may use it, is decided once it is looked
		// up (ownedBy).
		{"arn:aws:sns:us-east-1:111111111111:t", "", ""},
		{"arn:aws:sns:us-east-1::t", "InvalidParameter", "Invalid parameter: TopicArn"},
	} {
		_, err := s.checkTopicARN(ctx, tt.arn, "TopicArn")
		wantErr(t, tt.arn, err, tt.code, tt.msg)
	}
	for _, tt := range []struct {
		arn, code, msg string
	}{
		{"arn:aws:sns:us-east-1:000000000000:t:5b1e1c4e-0000-4000-8000-000000000000", "", ""},
		{"arn:aws:sns:us-east-1:000000000000:t", "InvalidParameter", "Invalid parameter: SubscriptionId"},
		{"arn:aws", "InvalidParameter", "Invalid parameter: SubscriptionArn Reason: An ARN must have at least 6 elements, not 2"},
		{"arn:aws:sns:eu-west-1:000000000000:t:id", "InvalidParameter", "Invalid parameter: SubscriptionArn"},
	} {
		_, err := s.checkSubscriptionARN(ctx, tt.arn)
		wantErr(t, tt.arn, err, tt.code, tt.msg)
	}
	// An unsigned request (SNS's SubscribeURL and UnsubscribeURL links)
	// has no region of its own: the ARN's serves.
	unsigned := context.Background()
	if _, err := s.checkTopicARN(unsigned, "arn:aws:sns:us-west-2:000000000000:t", "TopicArn"); err != nil {
		t.Errorf("unsigned, another region's topic: %v", err)
	}
	if _, err := s.checkSubscriptionARN(unsigned, "arn:aws:sns:eu-west-1:000000000000:t:id"); err != nil {
		t.Errorf("unsigned, another region's subscription: %v", err)
	}
	if _, err := s.checkTopicARN(unsigned, "arn:aws:sns:moon:000000000000:t", "TopicArn"); err == nil {
		t.Error("unsigned, a region that is none: accepted")
	}
	if q, ok := queueARN("arn:aws:sqs:us-east-1:000000000000:q.fifo"); !ok || q.Resource != "q.fifo" || q.Account != "000000000000" {
		t.Errorf("queueARN: %+v %v", q, ok)
	}
	for _, bad := range []string{"", "https://sqs/q", "arn:aws:sns:us-east-1:000000000000:q", "arn:aws:sqs:us-east-1:000000000000:",
		"arn:aws:sqs:us-east-1:000000000000:q:x", "arn:aws:sqs:us-east-1:q", "arn::sqs:us-east-1:000000000000:q", "arn:aws:sqs::000000000000:q",
		"arn:aws:sqs:us-east-1::q"} {
		if _, ok := queueARN(bad); ok {
			t.Errorf("queueARN(%q) accepted", bad)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	s := testService()
	const topic = "arn:aws:sns:us-east-1:000000000000:t"
	sub := topic + ":0b5d3c2f-2f6e-4a1b-9c8d-7e6f5a4b3c2d"
	tok := s.newToken(sub)
	if len(tok) != 288 {
		t.Errorf("token length %d", len(tok))
	}
	if r, ok := tokenRegion(tok); !ok || r != "us-east-1" {
		t.Errorf("tokenRegion = %q %v", r, ok)
	}
	if got, ok := tokenSubscription(topic, tok); !ok || got != sub {
		t.Errorf("tokenSubscription = %q %v, want %q", got, ok, sub)
	}
	for _, bad := range []string{"", "garbage", "zz2f00", "2f00", strings.Repeat("0", 288)} {
		if _, ok := tokenRegion(bad); ok {
			t.Errorf("tokenRegion(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "garbage", "75732f" + strings.Repeat("0", 31), "75732f" + strings.Repeat("g", 40)} {
		if got, ok := tokenSubscription(topic, bad); ok {
			t.Errorf("tokenSubscription(%q) = %q", bad, got)
		}
	}
	if s.newToken(sub) == tok {
		t.Error("tokens repeat")
	}
}

func TestPageAfter(t *testing.T) {
	t.Parallel()
	keys := make([]string, 250)
	for i := range keys {
		keys[i] = string(rune('a'+i/26)) + string(rune('a'+i%26))
	}
	var all []string
	token := ""
	for pages := 0; ; pages++ {
		page, next, err := pageAfter(keys, token)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v", pages, err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		token = next
	}
	if strings.Join(all, ",") != strings.Join(keys, ",") {
		t.Error("pages lost or repeated keys")
	}
	if _, _, err := pageAfter(keys, "%%%"); err == nil {
		t.Error("a bad token is refused")
	}
}

func TestTopicNamesAndAttributes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		fifo bool
		ok   bool
	}{
		{"a-b_C", false, true}, {"x.fifo", true, true}, {"x.fifo", false, false}, {"x", true, false}, {".fifo", true, false},
		{strings.Repeat("a", 256), false, true}, {strings.Repeat("a", 257), false, false}, {strings.Repeat("a", 256) + ".fifo", true, true}, {"a b", false, false},
	} {
		if validTopicName(tt.name, tt.fifo) != tt.ok {
			t.Errorf("validTopicName(%q, %v) != %v", tt.name, tt.fifo, tt.ok)
		}
	}
	s := testService()
	for _, tt := range []struct {
		name, value string
		fifo        bool
		code, msg   string
	}{
		{"SignatureVersion", "3", false, "InvalidParameter", "Invalid parameter: SignatureVersion: Invalid value [3]. Valid values are 1 and 2."},
		{"TracingConfig", "Active", true, "InvalidParameter", "Invalid parameter: TracingConfig: Tracing is not available for FIFO topics."},
		{"FifoThroughputScope", "Queue", true, "InvalidParameter", "Invalid parameter: FifoThroughputScope: Invalid value [Queue]. Please use either Topic or MessageGroup."},
		{"ArchivePolicy", `{"MessageRetentionPeriod":"400"}`, true, "InvalidParameter", "Invalid parameter: ArchivePolicy: MessageRetentionPeriod must be a number of days between 1 and 365."},
		{"ArchivePolicy", `{"MessageRetentionPeriod":"30"}`, true, "", ""},
		{"HTTPSuccessFeedbackSampleRate", "101", false, "InvalidParameter", "Invalid parameter: HTTPSuccessFeedbackSampleRate"},
		{"SQSFailureFeedbackRoleArn", "arn:aws:iam::000000000000:role/x", false, "", ""},
		{"DisplayName", strings.Repeat("d", 101), false, "InvalidParameter", "Invalid parameter: DisplayName"},
		{"Nope", "x", false, "InvalidParameter", "Invalid parameter: AttributeName"},
	} {
		_, err := s.checkTopicAttribute(tt.name, tt.value, tt.fifo, false)
		wantErr(t, tt.name+"="+tt.value, err, tt.code, tt.msg)
	}
}

func TestPolicyDocument(t *testing.T) {
	t.Parallel()
	d, err := parsePolicy(DefaultPolicy("arn:aws:sns:us-east-1:000000000000:t"))
	if err != nil || len(d.statements) != 1 || statementSid(d.statements[0]) != "__default_statement_ID" {
		t.Fatalf("default policy: %v %v", d, err)
	}
	if got := d.String(); got != DefaultPolicy("arn:aws:sns:us-east-1:000000000000:t") {
		t.Errorf("round trip:\n%s", got)
	}
	// A single statement object and extra members survive.
	d, err = parsePolicy(`{"Extra":1,"Statement":{"Sid":"only"},"Version":"2012-10-17"}`)
	if err != nil || len(d.statements) != 1 {
		t.Fatal(err)
	}
	if got := d.String(); got != `{"Version":"2012-10-17","Statement":[{"Sid":"only"}],"Extra":1}` {
		t.Errorf("rewritten: %s", got)
	}
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ arn, account string }{
		{"arn:aws:sns:us-east-1:111111111111:t", "111111111111"},
		{"arn:aws:sns:us-east-1:111111111111:t:5b1e1c4e-0000-4000-8000-000000000000", "111111111111"},
		{"arn:aws:sns:us-east-1:222222222222:app/GCM/a", "222222222222"},
		{"arn:aws:sqs:us-east-1:333333333333:q", "333333333333"},
		{"arn:aws:sns:us-east-1", ""},
		{"", ""},
	} {
		if got := arnAccount(tt.arn); got != tt.account {
			t.Errorf("arnAccount(%q) = %q, want %q", tt.arn, got, tt.account)
		}
	}
	s := testService()
	for _, tt := range []struct{ caller, code, msg string }{
		{"", "AuthorizationError", "User: arn:aws:iam::000000000000:root is not authorized to perform: SNS:Publish on resource: arn:aws:sns:us-east-1:111111111111:t"},
		{"111111111111", "", ""},
		{"222222222222", "AuthorizationError", "User: arn:aws:iam::222222222222:root is not authorized to perform: SNS:Publish on resource: arn:aws:sns:us-east-1:111111111111:t"},
	} {
		ctx := protocol.WithInfo(context.Background(), &protocol.RequestInfo{Account: tt.caller})
		err := s.ownedBy(ctx, "arn:aws:sns:us-east-1:111111111111:t", "Publish")
		wantErr(t, tt.caller, err, tt.code, tt.msg)
	}
}

// TestCheckSMSEndpoint: AWS words a bad SMS endpoint without the
// "Invalid parameter: " that most of its errors carry.
func TestCheckSMSEndpoint(t *testing.T) {
	t.Parallel()
	s := testService()
	for endpoint, want := range map[string]string{
		"+15551234567":   "",
		"15551234567":    "",
		"+15--551234567": "Invalid SMS endpoint: +15--551234567",
		"NAA+1555":       "Invalid SMS endpoint: NAA+1555",
	} {
		code := ""
		if want != "" {
			code = "InvalidParameter"
		}
		wantErr(t, endpoint, s.checkEndpoint(&topic{}, "sms", endpoint), code, want)
	}
}
