package delivery

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/sns/delivery/deliverytest"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

const (
	topicARN = "arn:aws:sns:us-west-2:123456789012:MyTopic"
	subARN   = topicARN + ":c9135db0-26c4-47ec-8998-413945fb5a96"
	certURL  = "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"
	unsubURL = "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=" + subARN
)

var published = time.Date(2012, 5, 2, 0, 54, 6, 655_999_999, time.UTC)

func TestNotificationGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    Notification
		want string
	}{
		{"plain", Notification{
			MessageID: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", TopicARN: topicARN, Message: "Hello world!",
			Timestamp: published, Signature: "EXAMPLEw6JRN==", SigningCertURL: certURL, UnsubscribeURL: unsubURL,
		}, `{
  "Type" : "Notification",
  "MessageId" : "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic",
  "Message" : "Hello world!",
  "Timestamp" : "2012-05-02T00:54:06.655Z",
  "SignatureVersion" : "1",
  "Signature" : "EXAMPLEw6JRN==",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c9135db0-26c4-47ec-8998-413945fb5a96"
}`},
		{"subject, escapes and attributes", Notification{
			MessageID: "m-1", TopicARN: topicARN, Subject: `My "First" Message`,
			Message:   "{\"key\":\"value\"}\n\t/é😀\x01\\",
			Timestamp: published.In(time.FixedZone("X", 3600)), SignatureVersion: "2", Signature: "c2ln",
			SigningCertURL: certURL, UnsubscribeURL: unsubURL,
			MessageAttributes: map[string]filterpolicy.Attribute{
				"Prefix":  {DataType: "String", StringValue: "/grid/jpg"},
				"Command": {DataType: "String", StringValue: "process"},
				"s":       {DataType: "String.Array", StringValue: `["a","b"]`},
				"n":       {DataType: "Number", StringValue: "1"},
				"b":       {DataType: "Binary", BinaryValue: []byte{0xde, 0xad}},
			},
		}, `{
  "Type" : "Notification",
  "MessageId" : "m-1",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic",
  "Subject" : "My \"First\" Message",
  "Message" : "{\"key\":\"value\"}\n\t/é😀\u0001\\",
  "Timestamp" : "2012-05-02T00:54:06.655Z",
  "SignatureVersion" : "2",
  "Signature" : "c2ln",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c9135db0-26c4-47ec-8998-413945fb5a96",
  "MessageAttributes" : {
    "Command" : {"Type":"String","Value":"process"},
    "Prefix" : {"Type":"String","Value":"/grid/jpg"},
    "b" : {"Type":"Binary","Value":"3q0="},
    "n" : {"Type":"Number","Value":"1"},
    "s" : {"Type":"String.Array","Value":"[\"a\",\"b\"]"}
  }
}`},
		{"fifo", Notification{
			MessageID: "m-2", SequenceNumber: "10000000000000003000", TopicARN: topicARN + ".fifo", Message: "Test",
			Timestamp: published, SigningCertURL: certURL, UnsubscribeURL: unsubURL,
		}, `{
  "Type" : "Notification",
  "MessageId" : "m-2",
  "SequenceNumber" : "10000000000000003000",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic.fifo",
  "Message" : "Test",
  "Timestamp" : "2012-05-02T00:54:06.655Z",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c9135db0-26c4-47ec-8998-413945fb5a96"
}`},
	}
	for _, tt := range tests {
		got, err := tt.n.JSON()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: not JSON", tt.name)
		}
	}
}

func TestConfirmationGolden(t *testing.T) {
	t.Parallel()
	ts := time.Date(2012, 4, 26, 20, 45, 4, 751_000_000, time.UTC)
	token := "2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736"
	subscribeURL := "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + topicARN + "&Token=" + token
	tests := []struct {
		name string
		c    Confirmation
		want string
	}{
		{"subscribe", Confirmation{
			Type: TypeSubscriptionConfirmation, MessageID: "165545c9-2a5c-472c-8df2-7ff2be2b3b1b", Token: token,
			TopicARN: topicARN, SubscribeURL: subscribeURL, Timestamp: ts, Signature: "EXAMPLEpH+DcEwjAPg8O9mY8dReBSwksfg2S7WKQcikcNKWLQjwu6A4VbeS0QHVCkhRS7fUQvi2egU3N858fiTDN6bkkOxYDVrY0Ad8L10Hs3zH81mtnPk5uvvolIC1CXGu43obcgFxeL3khZl8IKvO61GWB6jI9b5+gLPoBc1Q=",
			SigningCertURL: certURL,
		}, `{
  "Type" : "SubscriptionConfirmation",
  "MessageId" : "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
  "Token" : "` + token + `",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic",
  "Message" : "You have chosen to subscribe to the topic arn:aws:sns:us-west-2:123456789012:MyTopic.\nTo confirm the subscription, visit the SubscribeURL included in this message.",
  "SubscribeURL" : "` + subscribeURL + `",
  "Timestamp" : "2012-04-26T20:45:04.751Z",
  "SignatureVersion" : "1",
  "Signature" : "EXAMPLEpH+DcEwjAPg8O9mY8dReBSwksfg2S7WKQcikcNKWLQjwu6A4VbeS0QHVCkhRS7fUQvi2egU3N858fiTDN6bkkOxYDVrY0Ad8L10Hs3zH81mtnPk5uvvolIC1CXGu43obcgFxeL3khZl8IKvO61GWB6jI9b5+gLPoBc1Q=",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"
}`},
		{"unsubscribe", Confirmation{
			Type: TypeUnsubscribeConfirmation, MessageID: "47138184-6831-46b8-8f7c-afc488602d7d", Token: "tok",
			TopicARN: topicARN, SubscriptionARN: subARN, SubscribeURL: "https://x/?Action=ConfirmSubscription",
			Timestamp: ts, SignatureVersion: "2", Signature: "sig", SigningCertURL: certURL,
		}, `{
  "Type" : "UnsubscribeConfirmation",
  "MessageId" : "47138184-6831-46b8-8f7c-afc488602d7d",
  "Token" : "tok",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic",
  "Message" : "You have chosen to deactivate subscription arn:aws:sns:us-west-2:123456789012:MyTopic:c9135db0-26c4-47ec-8998-413945fb5a96.\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message.",
  "SubscribeURL" : "https://x/?Action=ConfirmSubscription",
  "Timestamp" : "2012-04-26T20:45:04.751Z",
  "SignatureVersion" : "2",
  "Signature" : "sig",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"
}`},
	}
	for _, tt := range tests {
		got, err := tt.c.JSON()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// A signed envelope verifies from its own rendered fields.
func TestEnvelopesVerify(t *testing.T) {
	t.Parallel()
	s := testSigner(t)
	for _, version := range []string{"", "1", "2"} {
		n := Notification{MessageID: "m", TopicARN: topicARN, Subject: "S\nj", Message: "line1\nline2 \"q\" é",
			Timestamp: published, SignatureVersion: version, SigningCertURL: certURL, UnsubscribeURL: unsubURL,
			MessageAttributes: map[string]filterpolicy.Attribute{"a": {DataType: "String", StringValue: "v"}}}
		if err := n.Sign(s); err != nil {
			t.Fatal(err)
		}
		// Copies for other subscribers keep the signature.
		other := n
		other.UnsubscribeURL = "https://elsewhere/"
		for _, env := range []Notification{n, other} {
			b, err := env.JSON()
			if err != nil {
				t.Fatal(err)
			}
			fields := deliverytest.Decode(t, b)
			if err := deliverytest.Verify(s.CertPEM(), fields, fields["SignatureVersion"], fields["Signature"]); err != nil {
				t.Errorf("notification v%q: %v", version, err)
			}
		}

		c := Confirmation{Type: TypeUnsubscribeConfirmation, MessageID: "m", Token: "t", TopicARN: topicARN,
			SubscriptionARN: subARN, SubscribeURL: "https://x/?a=b&c=d", Timestamp: published,
			SignatureVersion: version, SigningCertURL: certURL}
		if err := c.Sign(s); err != nil {
			t.Fatal(err)
		}
		b, err := c.JSON()
		if err != nil {
			t.Fatal(err)
		}
		fields := deliverytest.Decode(t, b)
		if err := deliverytest.Verify(s.CertPEM(), fields, fields["SignatureVersion"], fields["Signature"]); err != nil {
			t.Errorf("confirmation v%q: %v", version, err)
		}
	}
}

func TestEnvelopeMisuse(t *testing.T) {
	t.Parallel()
	if _, err := (&Notification{MessageID: "m"}).JSON(); err == nil {
		t.Error("unsigned notification rendered")
	}
	if err := (&Notification{MessageID: "m"}).Sign(nil); err == nil {
		t.Error("signed without a signer")
	}
	fifo := &Notification{MessageID: "m", SequenceNumber: "1"}
	if err := fifo.Sign(nil); err != nil || fifo.Signature != "" {
		t.Errorf("FIFO notifications carry no signature: %v %q", err, fifo.Signature)
	}
	if _, err := (&Confirmation{Type: "Notification", Signature: "x"}).JSON(); err == nil {
		t.Error("confirmation of a bad type rendered")
	}
	if err := (&Confirmation{Type: "Bogus"}).Sign(testSigner(t)); err == nil {
		t.Error("confirmation of a bad type signed")
	}
	if _, err := (&Confirmation{Type: TypeSubscriptionConfirmation}).JSON(); err == nil {
		t.Error("unsigned confirmation rendered")
	}
	bad := &Notification{MessageID: "m", SignatureVersion: "9"}
	if err := bad.Sign(testSigner(t)); err == nil {
		t.Error("unknown signature version accepted")
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	base := http.Header{
		"Content-Type":           {"text/plain; charset=UTF-8"},
		"User-Agent":             {"Amazon Simple Notification Service Agent"},
		"Accept-Encoding":        {"gzip,deflate"},
		"X-Amz-Sns-Message-Id":   {"m"},
		"X-Amz-Sns-Topic-Arn":    {topicARN},
		"X-Amz-Sns-Message-Type": {"Notification"},
	}
	with := func(kv ...string) http.Header {
		h := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = []string{kv[i+1]}
		}
		return h
	}
	n := &Notification{MessageID: "m", TopicARN: topicARN}
	tests := []struct {
		name      string
		got, want http.Header
	}{
		{"notification", n.Headers(subARN, "", false), with("X-Amz-Sns-Subscription-Arn", subARN)},
		{"raw with content type", n.Headers(subARN, "application/json", true),
			with("X-Amz-Sns-Subscription-Arn", subARN, "X-Amz-Sns-Rawdelivery", "true", "Content-Type", "application/json")},
		{"subscription confirmation", (&Confirmation{Type: TypeSubscriptionConfirmation, MessageID: "m", TopicARN: topicARN, SubscriptionARN: subARN}).Headers(),
			with("X-Amz-Sns-Message-Type", "SubscriptionConfirmation")},
		{"unsubscribe confirmation", (&Confirmation{Type: TypeUnsubscribeConfirmation, MessageID: "m", TopicARN: topicARN, SubscriptionARN: subARN}).Headers(),
			with("X-Amz-Sns-Message-Type", "UnsubscribeConfirmation", "X-Amz-Sns-Subscription-Arn", subARN)},
	}
	for _, tt := range tests {
		if !maps.EqualFunc(tt.got, tt.want, func(a, b []string) bool { return len(a) == 1 && len(b) == 1 && a[0] == b[0] }) {
			t.Errorf("%s:\n got %v\nwant %v", tt.name, tt.got, tt.want)
		}
	}
}

func FuzzNotificationJSON(f *testing.F) {
	f.Add("hello", "subject", "name", "value")
	f.Add("\x00\xff\"\\\u2028", "", "\xc3", "\x7f")
	f.Fuzz(func(t *testing.T, msg, subject, name, value string) {
		n := Notification{MessageID: "m", TopicARN: topicARN, Subject: subject, Message: msg, Timestamp: published,
			Signature: "s", MessageAttributes: map[string]filterpolicy.Attribute{name: {DataType: "String", StringValue: value}}}
		b, err := n.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Message, Subject  string
			MessageAttributes map[string]struct{ Value string }
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b)
		}
		if want := toValid(msg); back.Message != want {
			t.Fatalf("Message %q read back as %q", msg, back.Message)
		}
		if got := back.MessageAttributes[toValid(name)].Value; got != toValid(value) {
			t.Fatalf("attribute %q read back as %q", value, got)
		}
	})
}

// toValid is s with each byte that is not UTF-8 replaced by U+FFFD.
func toValid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}
