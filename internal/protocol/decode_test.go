package protocol

import (
	"errors"
	"net/url"
	"reflect"
	"testing"
)

// decodeQueryInto decodes params into a new value of in's type.
func decodeQueryInto(t testing.TB, pc *planCache, in any, params string) (any, error) {
	t.Helper()
	typ := reflect.TypeOf(in).Elem()
	c, err := pc.plan(typ)
	if err != nil {
		t.Fatalf("plan %s: %v", typ, err)
	}
	vals, err := url.ParseQuery(params)
	if err != nil {
		t.Fatalf("bad test params %q: %v", params, err)
	}
	v := reflect.New(typ)
	err = decodeQuery(c, vals, v.Elem())
	return v.Interface(), err
}

func errCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "not an *Error: " + err.Error()
	}
	return ""
}

type aliasClash struct {
	Tag  map[string]string `query:"Tag,flat,key=Key,value=Value"`
	Tags string            `query:"Tags"`
}

func TestQueryDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params string
		want   any    // pointer to the expected input
		code   string // expected error code instead
		msg    string // expected error message, when set
	}{
		{name: "send message batch",
			params: "QueueUrl=http%3A%2F%2Fh%2F1%2Fq" +
				"&SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=second&SendMessageBatchRequestEntry.2.DelaySeconds=5" +
				"&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=first+one" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=s&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=v%C3%A9" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.2.Name=b&SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.DataType=Binary" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.BinaryValue=AAEC" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.3.Name=l&SendMessageBatchRequestEntry.1.MessageAttribute.3.Value.DataType=String.list" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.3.Value.StringListValue.2=y&SendMessageBatchRequestEntry.1.MessageAttribute.3.Value.StringListValue.1=x" +
				"&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Name=AWSTraceHeader&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Value.DataType=String" +
				"&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Value.StringValue=Root%3D1" +
				"&SendMessageBatchRequestEntry.1.MessageGroupId=g&SendMessageBatchRequestEntry.1.MessageDeduplicationId=d",
			want: &sendBatchInput{QueueUrl: "http://h/1/q", Entries: []sendEntry{
				{Id: "a", MessageBody: "first one", MessageGroupId: ptr("g"), MessageDeduplicationId: ptr("d"),
					MessageAttributes: map[string]msgAttrValue{
						"s": {DataType: "String", StringValue: ptr("vé")},
						"b": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}},
						"l": {DataType: "String.list", StringListValues: []string{"x", "y"}},
					},
					MessageSystemAttributes: map[string]msgAttrValue{"AWSTraceHeader": {DataType: "String", StringValue: ptr("Root=1")}},
				},
				{Id: "b", MessageBody: "second", DelaySeconds: ptr[int32](5)},
			}}},
		{name: "receive message merges attribute names",
			params: "QueueUrl=q&AttributeName.1=All&AttributeName.2=SentTimestamp&MessageAttributeName.1=a.*&MaxNumberOfMessages=10&WaitTimeSeconds=0&VisibilityTimeout=-1",
			want: &receiveInput{QueueUrl: "q", AttributeNames: []string{"All", "SentTimestamp"}, MessageSystemAttributeNames: []string{"All", "SentTimestamp"},
				MessageAttributeNames: []string{"a.*"}, MaxNumberOfMessages: ptr[int32](10), WaitTimeSeconds: ptr[int32](0), VisibilityTimeout: ptr[int32](-1)}},
		{name: "list order by index with gaps",
			params: "MessageAttributeName.10=c&MessageAttributeName.2=b&MessageAttributeName.1=a",
			want:   &receiveInput{MessageAttributeNames: []string{"a", "b", "c"}}},
		{name: "empty list", params: "AttributeName=", want: &receiveInput{}},
		{name: "bare value for a list of strings", params: "AttributeName=All",
			want: &receiveInput{AttributeNames: []string{"All"}, MessageSystemAttributeNames: []string{"All"}}},
		{name: "wrapped spelling of a flat list", params: "MessageAttributeName.member.1=a",
			want: &receiveInput{MessageAttributeNames: []string{"a"}}},
		{name: "create queue attributes and tags",
			params: "QueueName=q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=5&Attribute.2.Name=Policy&Attribute.2.Value=%7B%7D&Tag.1.Key=team&Tag.1.Value=x&Tag.2.Key=empty",
			want: &createQueueInput{QueueName: "q", Attributes: map[string]string{"DelaySeconds": "5", "Policy": "{}"},
				Tags: map[string]string{"team": "x", "empty": ""}}},
		{name: "plural spellings",
			params: "QueueName=q&Attributes.1.Name=A&Attributes.1.Value=1&Tags.1.Key=k&Tags.1.Value=v",
			want:   &createQueueInput{QueueName: "q", Attributes: map[string]string{"A": "1"}, Tags: map[string]string{"k": "v"}}},
		{name: "plural message attributes",
			params: "SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageAttributes.1.Name=n&SendMessageBatchRequestEntry.1.MessageAttributes.1.Value.DataType=Number",
			want:   &sendBatchInput{Entries: []sendEntry{{Id: "a", MessageAttributes: map[string]msgAttrValue{"n": {DataType: "Number"}}}}}},
		{name: "singular wins over plural", params: "Attribute.1.Name=A&Attribute.1.Value=1&Attributes.1.Name=B&Attributes.1.Value=2",
			want: &createQueueInput{Attributes: map[string]string{"A": "1"}}},
		{name: "unknown parameters ignored", params: "Action=CreateQueue&Version=2012-11-05&Foo.1.Bar=x&QueueName=q",
			want: &createQueueInput{QueueName: "q"}},
		{name: "scalars",
			params: "S=a+b&PS=&I32=-7&I64=9007199254740993&PI=0&B=TRUE&PB=false&Raw=aGk%3D&Sub.X=x&Skip=no",
			want: &scalars{S: "a b", PS: ptr(""), I32: -7, I64: 9007199254740993, PI: ptr[int64](0), B: true, PB: ptr(false), Raw: []byte("hi"),
				Sub: &struct {
					X string `json:"X" query:"X"`
				}{X: "x"}}},
		{name: "unpadded base64", params: "Raw=aGk", want: &scalars{Raw: []byte("hi")}},
		{name: "sns create topic",
			params: "Name=t&Attributes.entry.1.key=DisplayName&Attributes.entry.1.value=D&Attributes.entry.2.key=Policy&Attributes.entry.2.value=p" +
				"&Tags.member.2.Key=k2&Tags.member.2.Value=v2&Tags.member.1.Key=k1&Tags.member.1.Value=v1",
			want: &createTopicInput{Name: "t", Attributes: map[string]string{"DisplayName": "D", "Policy": "p"},
				Tags: []snsTag{{"k1", "v1"}, {"k2", "v2"}}}},
		{name: "sns publish batch",
			params: "TopicArn=arn&PublishBatchRequestEntries.member.1.Id=1&PublishBatchRequestEntries.member.1.Message=m" +
				"&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name=a" +
				"&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.DataType=String" +
				"&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue=s" +
				"&PublishBatchRequestEntries.member.2.Id=2&PublishBatchRequestEntries.member.2.Message=n&PublishBatchRequestEntries.member.2.Subject=x",
			want: &publishBatchInput{TopicArn: "arn", Entries: []publishBatchEntry{
				{Id: "1", Message: "m", MessageAttributes: map[string]snsAttr{"a": {DataType: "String", StringValue: ptr("s")}}},
				{Id: "2", Message: "n", Subject: ptr("x")},
			}}},
		{name: "alias does not shadow a member", params: "Tags.1.Key=k&Tags.1.Value=v&Tags=x",
			want: &aliasClash{Tags: "x"}},
		{name: "flat spelling of a wrapped list", params: "Tags.1.Key=k&Tags.1.Value=v",
			want: &createTopicInput{Tags: []snsTag{{"k", "v"}}}},

		{name: "non-numeric integer", params: "MaxNumberOfMessages=ten", want: &receiveInput{},
			code: "InvalidParameterValue", msg: "Value ten for parameter MaxNumberOfMessages is invalid."},
		{name: "empty integer", params: "MaxNumberOfMessages=", want: &receiveInput{}, code: "InvalidParameterValue"},
		{name: "nested bad integer", params: "SendMessageBatchRequestEntry.3.DelaySeconds=1.5", want: &sendBatchInput{},
			code: "InvalidParameterValue", msg: "Value 1.5 for parameter SendMessageBatchRequestEntry.3.DelaySeconds is invalid."},
		{name: "int32 overflow", params: "I32=2147483648", want: &scalars{}, code: "InvalidParameterValue"},
		{name: "bad bool", params: "B=1", want: &scalars{}, code: "InvalidParameterValue"},
		{name: "bad base64", params: "Raw=%2A%2A%2A", want: &scalars{}, code: "InvalidParameterValue"},
		{name: "non-numeric index", params: "Attribute.one.Name=a", want: &createQueueInput{}, code: "MalformedQueryString",
			msg: "The parameter Attribute.one has an invalid index; indexes are positive integers."},
		{name: "zero index", params: "MessageAttributeName.0=a", want: &receiveInput{}, code: "MalformedQueryString"},
		{name: "signed index", params: "MessageAttributeName.+1=a", want: &receiveInput{}, code: "MalformedQueryString"},
		{name: "huge index", params: "MessageAttributeName.99999999999999999999=a", want: &receiveInput{}, code: "MalformedQueryString"},
		{name: "bad index under member", params: "Tags.member.x.Key=a", want: &createTopicInput{}, code: "MalformedQueryString"},
		{name: "map entry without key", params: "Tag.1.Value=v", want: &createQueueInput{}, code: "MissingParameter",
			msg: "The request must contain the parameter Tag.1.Key."},
		{name: "wrapped map entry without key", params: "Attributes.entry.1.value=v", want: &createTopicInput{}, code: "MissingParameter",
			msg: "The request must contain the parameter Attributes.entry.1.key."},
	}
	pc := &planCache{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeQueryInto(t, pc, tt.want, tt.params)
			if tt.code != "" {
				if errCode(err) != tt.code {
					t.Fatalf("error %v, want code %s", err, tt.code)
				}
				var e *Error
				errors.As(err, &e)
				if tt.msg != "" && e.Message != tt.msg {
					t.Errorf("message %q, want %q", e.Message, tt.msg)
				}
				if e.Status != 400 {
					t.Errorf("status %d", e.Status)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded\n %#v\nwant\n %#v", got, tt.want)
			}
		})
	}
}

func TestJSONDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want any
		code string
		msg  string
	}{
		{name: "send message batch",
			body: `{"QueueUrl":"q","Entries":[{"Id":"a","MessageBody":"x","DelaySeconds":3,"MessageAttributes":{"b":{"DataType":"Binary","BinaryValue":"AAEC"},` +
				`"l":{"DataType":"String.list","StringListValues":["x"]}},"Unknown":{"deep":[1,2]}}]}`,
			want: &sendBatchInput{QueueUrl: "q", Entries: []sendEntry{{Id: "a", MessageBody: "x", DelaySeconds: ptr[int32](3),
				MessageAttributes: map[string]msgAttrValue{"b": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}, "l": {DataType: "String.list", StringListValues: []string{"x"}}}}}}},
		{name: "receive message", body: `{"QueueUrl":"q","AttributeNames":["All"],"MessageSystemAttributeNames":["SenderId"],"MaxNumberOfMessages":10}`,
			want: &receiveInput{QueueUrl: "q", AttributeNames: []string{"All"}, MessageSystemAttributeNames: []string{"SenderId"}, MaxNumberOfMessages: ptr[int32](10)}},
		{name: "create queue lowercase tags", body: `{"QueueName":"q","Attributes":{"DelaySeconds":"5"},"tags":{"k":"v"}}`,
			want: &createQueueInput{QueueName: "q", Attributes: map[string]string{"DelaySeconds": "5"}, Tags: map[string]string{"k": "v"}}},
		{name: "empty body", body: "", want: &createQueueInput{}},
		{name: "whitespace body", body: " \n", want: &createQueueInput{}},
		{name: "null", body: "null", want: &createQueueInput{}},
		{name: "null member", body: `{"QueueName":null}`, want: &createQueueInput{}},

		{name: "string for integer", body: `{"MaxNumberOfMessages":"10"}`, want: &receiveInput{}, code: "SerializationException",
			msg: "STRING_VALUE can not be converted to an Integer"},
		{name: "number for string", body: `{"QueueUrl":1}`, want: &receiveInput{}, code: "SerializationException",
			msg: "NUMBER_VALUE can not be converted to a String"},
		{name: "bool for string", body: `{"QueueUrl":true}`, want: &receiveInput{}, code: "SerializationException",
			msg: "BOOLEAN_VALUE can not be converted to a String"},
		{name: "object for string", body: `{"QueueUrl":{}}`, want: &receiveInput{}, code: "SerializationException",
			msg: "Start of structure or map found where not expected."},
		{name: "list for map", body: `{"Attributes":[]}`, want: &createQueueInput{}, code: "SerializationException",
			msg: "Start of list found where not expected."},
		{name: "string for long", body: `{"I64":"1"}`, want: &scalars{}, code: "SerializationException",
			msg: "STRING_VALUE can not be converted to a Long"},
		{name: "malformed", body: `{"QueueUrl":"q"`, want: &receiveInput{}, code: "SerializationException"},
		{name: "not json", body: `QueueUrl=q`, want: &receiveInput{}, code: "SerializationException"},
		{name: "bad base64", body: `{"Raw":"***"}`, want: &scalars{}, code: "SerializationException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reflect.New(reflect.TypeOf(tt.want).Elem()).Interface()
			err := decodeJSON([]byte(tt.body), got)
			if tt.code != "" {
				if errCode(err) != tt.code {
					t.Fatalf("error %v, want code %s", err, tt.code)
				}
				var e *Error
				errors.As(err, &e)
				if tt.msg != "" && e.Message != tt.msg {
					t.Errorf("message %q, want %q", e.Message, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded\n %#v\nwant\n %#v", got, tt.want)
			}
		})
	}
}
