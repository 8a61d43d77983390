package protocol

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

func TestXMLEncode(t *testing.T) {
	t.Parallel()
	sqs := &Service{XMLNamespace: sqsNS}
	sns := &Service{XMLNamespace: snsNS, EmptyResult: true}
	const meta = `<ResponseMetadata><RequestId>rid</RequestId></ResponseMetadata>`
	tests := []struct {
		name   string
		svc    *Service
		action string
		out    any
		want   string // between <ActionResponse xmlns=…> and </ActionResponse>
	}{
		{name: "receive message", svc: sqs, action: "ReceiveMessage", out: &receiveOutput{Messages: []message{{
			MessageId: "m", ReceiptHandle: "r+/=", MD5OfBody: "d", Body: `<a href="x">'&'</a>` + "\r\n\té",
			Attributes:             map[string]string{"SentTimestamp": "17", "ApproximateReceiveCount": "1"},
			MD5OfMessageAttributes: ptr("e"),
			MessageAttributes: map[string]msgAttrValue{
				"s": {DataType: "String", StringValue: ptr("x")},
				"b": {DataType: "Binary", BinaryValue: []byte{0xff, 0}},
				"l": {DataType: "String.list", StringListValues: []string{"p", "q"}, BinaryListValues: [][]byte{{1}}},
			},
		}, {MessageId: "m2"}}},
			want: `<ReceiveMessageResult><Message><MessageId>m</MessageId><ReceiptHandle>r+/=</ReceiptHandle><MD5OfBody>d</MD5OfBody>` +
				`<Body>&lt;a href=&quot;x&quot;&gt;'&amp;'&lt;/a&gt;&#xD;` + "\n\té</Body>" +
				`<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute><Attribute><Name>SentTimestamp</Name><Value>17</Value></Attribute>` +
				`<MD5OfMessageAttributes>e</MD5OfMessageAttributes>` +
				`<MessageAttribute><Name>b</Name><Value><DataType>Binary</DataType><BinaryValue>/wA=</BinaryValue></Value></MessageAttribute>` +
				`<MessageAttribute><Name>l</Name><Value><DataType>String.list</DataType><StringListValue>p</StringListValue><StringListValue>q</StringListValue>` +
				`<BinaryListValue>AQ==</BinaryListValue></Value></MessageAttribute>` +
				`<MessageAttribute><Name>s</Name><Value><DataType>String</DataType><StringValue>x</StringValue></Value></MessageAttribute>` +
				`</Message><Message><MessageId>m2</MessageId></Message></ReceiveMessageResult>`},
		{name: "receive nothing", svc: sqs, action: "ReceiveMessage", out: &receiveOutput{},
			want: `<ReceiveMessageResult></ReceiveMessageResult>`},
		{name: "batch result", svc: sqs, action: "SendMessageBatch", out: &sendBatchOutput{
			Successful: []sendBatchResultEntry{{Id: "1", MessageId: "m", MD5OfMessageBody: "d"}},
			Failed:     []batchErrorEntry{{Id: "2", SenderFault: true, Code: "InvalidParameterValue", Message: ptr("bad")}, {Id: "3", Code: "InternalError"}},
		},
			want: `<SendMessageBatchResult><SendMessageBatchResultEntry><Id>1</Id><MessageId>m</MessageId><MD5OfMessageBody>d</MD5OfMessageBody></SendMessageBatchResultEntry>` +
				`<BatchResultErrorEntry><Id>2</Id><SenderFault>true</SenderFault><Code>InvalidParameterValue</Code><Message>bad</Message></BatchResultErrorEntry>` +
				`<BatchResultErrorEntry><Id>3</Id><SenderFault>false</SenderFault><Code>InternalError</Code></BatchResultErrorEntry></SendMessageBatchResult>`},
		{name: "flat list and pointer", svc: sqs, action: "ListQueues", out: &listQueuesOutput{QueueUrls: []string{"a", "b&c"}, NextToken: ptr("")},
			want: `<ListQueuesResult><QueueUrl>a</QueueUrl><QueueUrl>b&amp;c</QueueUrl><NextToken></NextToken></ListQueuesResult>`},
		{name: "flat map sorted", svc: sqs, action: "GetQueueAttributes", out: &getQueueAttributesOutput{Attributes: map[string]string{"b": "2", "a": "1", "c": ""}},
			want: `<GetQueueAttributesResult><Attribute><Name>a</Name><Value>1</Value></Attribute><Attribute><Name>b</Name><Value>2</Value></Attribute>` +
				`<Attribute><Name>c</Name><Value></Value></Attribute></GetQueueAttributesResult>`},
		{name: "scalars always and omitted", svc: sqs, action: "Scalars", out: &scalars{I32: 0, I64: -5, B: false, PI: ptr[int64](7), Skip: "never"},
			want: `<ScalarsResult><I32>0</I32><I64>-5</I64><PI>7</PI><B>false</B></ScalarsResult>`},
		{name: "nested struct", svc: sqs, action: "Scalars", out: &scalars{S: "s", Sub: &struct {
			X string `json:"X" query:"X"`
		}{X: "x"}},
			want: `<ScalarsResult><S>s</S><I32>0</I32><I64>0</I64><B>false</B><Sub><X>x</X></Sub></ScalarsResult>`},
		{name: "sqs empty output", svc: sqs, action: "DeleteMessage", out: &emptyOutput{}, want: ``},
		{name: "sns empty output", svc: sns, action: "Unsubscribe", out: &emptyOutput{}, want: `<UnsubscribeResult/>`},
		{name: "nil output", svc: sqs, action: "ListQueues", out: (*listQueuesOutput)(nil), want: `<ListQueuesResult></ListQueuesResult>`},
		{name: "sns wrapped list", svc: sns, action: "ListTopics", out: &listTopicsOutput{Topics: []topic{{"arn:1"}, {"arn:2"}}, NextToken: ptr("n")},
			want: `<ListTopicsResult><Topics><member><TopicArn>arn:1</TopicArn></member><member><TopicArn>arn:2</TopicArn></member></Topics><NextToken>n</NextToken></ListTopicsResult>`},
		{name: "sns nil wrapped list omitted", svc: sns, action: "ListTopics", out: &listTopicsOutput{},
			want: `<ListTopicsResult></ListTopicsResult>`},
		{name: "sns wrapped map", svc: sns, action: "GetTopicAttributes", out: &getTopicAttributesOutput{
			Attributes: map[string]string{"Policy": `{"a":1}`, "DisplayName": "d"}, Tags: []snsTag{{"k", "v"}}},
			want: `<GetTopicAttributesResult><Attributes><entry><key>DisplayName</key><value>d</value></entry>` +
				`<entry><key>Policy</key><value>{&quot;a&quot;:1}</value></entry></Attributes>` +
				`<Tags><member><Key>k</Key><Value>v</Value></member></Tags></GetTopicAttributesResult>`},
		{name: "sns empty wrapped map", svc: sns, action: "GetTopicAttributes", out: &getTopicAttributesOutput{Attributes: map[string]string{}},
			want: `<GetTopicAttributesResult><Attributes/></GetTopicAttributesResult>`},
	}
	pc := &planCache{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := reflect.ValueOf(tt.out)
			c, err := pc.plan(v.Type().Elem())
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			encodeXMLResponse(&b, tt.svc, tt.action, c, v.Elem(), "rid")
			want := `<?xml version="1.0"?><` + tt.action + `Response xmlns="` + tt.svc.XMLNamespace + `">` + tt.want + meta + `</` + tt.action + `Response>`
			if b.String() != want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), want)
			}
			if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
				t.Errorf("not well-formed: %v", err)
			}
		})
	}
}

func TestEscapeText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`a&b<c>d"e'f`, "a&amp;b&lt;c&gt;d&quot;e'f"},
		{"cr\r\nlf\ttab", "cr&#xD;\nlf\ttab"},
		{"nul\x00bel\x07", "nul\uFFFDbel\uFFFD"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"\uFFFE\uFFFF", "\uFFFD\uFFFD"},
		{"日本語 😀 \u007f", "日本語 😀 \u007f"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		escapeText(&b, tt.in)
		if b.String() != tt.want {
			t.Errorf("escapeText(%q) = %q, want %q", tt.in, b.String(), tt.want)
		}
	}
}

// TestXMLRoundTrip checks that text read back by an XML parser is what was
// written, CR included.
func TestXMLRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a\r\nb", `"quoted" & <tagged>`, "  spaced  ", "ünï😀"} {
		got := xmlRoundTrip(t, s)
		if got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
}

func xmlRoundTrip(t testing.TB, s string) string {
	t.Helper()
	pc := &planCache{}
	c, err := pc.plan(reflect.TypeFor[createQueueOutput]())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	encodeXMLResponse(&b, &Service{XMLNamespace: sqsNS}, "CreateQueue", c, reflect.ValueOf(createQueueOutput{QueueUrl: s}), "rid")
	var doc struct {
		Result struct {
			QueueUrl string
		} `xml:"CreateQueueResult"`
		RequestID string `xml:"ResponseMetadata>RequestId"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("parse %q: %v", b.String(), err)
	}
	if doc.RequestID != "rid" {
		t.Fatalf("request id %q", doc.RequestID)
	}
	if !strings.HasPrefix(b.String(), xmlHeader) {
		t.Fatalf("no XML declaration")
	}
	return doc.Result.QueueUrl
}
