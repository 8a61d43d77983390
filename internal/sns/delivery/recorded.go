package delivery

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// Protocols Ferry cannot reach (Lambda, SMS, mobile push, Firehose, and
// email without an SMTP server) are delivered into a log that tests and
// people read back at GET /_ferry/sns/deliveries.

// Record is one recorded delivery.
type Record struct {
	Protocol        string                            `json:"Protocol"`
	Endpoint        string                            `json:"Endpoint"`
	SubscriptionArn string                            `json:"SubscriptionArn,omitempty"`
	TopicArn        string                            `json:"TopicArn,omitempty"`
	Type            string                            `json:"Type"`
	MessageId       string                            `json:"MessageId"`
	Subject         string                            `json:"Subject,omitempty"`
	Message         string                            `json:"Message"`
	Attributes      map[string]filterpolicy.Attribute `json:"MessageAttributes,omitempty"`
	// Body is what the endpoint receives: the Lambda event, the envelope,
	// the email text, the SMS text.
	Body      string `json:"Body"`
	Timestamp string `json:"Timestamp"`
}

// recordLogSize and recordLogBytes bound the log, in deliveries and in
// the bytes of their texts; the oldest deliveries go first. A count alone
// would let 10,000 deliveries of 256 KiB messages, each kept as Message
// and inside Body, hold 5 GiB.
const (
	recordLogSize  = 10_000
	recordLogBytes = 64 << 20
)

// recordLog is a ring of the latest deliveries: n of them from head.
type recordLog struct {
	mu       sync.Mutex
	ring     []Record
	head, n  int
	bytes    int // recordSize of the n kept
	maxBytes int
}

func newRecordLog(n, maxBytes int) *recordLog {
	return &recordLog{ring: make([]Record, n), maxBytes: maxBytes}
}

// recordSize is about what d holds: its strings, and a little for the
// rest. The newest delivery is kept whatever its size.
func recordSize(d *Record) int {
	n := 256 + len(d.Protocol) + len(d.Endpoint) + len(d.SubscriptionArn) + len(d.TopicArn) + len(d.Type) +
		len(d.MessageId) + len(d.Subject) + len(d.Message) + len(d.Body) + len(d.Timestamp)
	for name, a := range d.Attributes {
		n += len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

func (l *recordLog) add(d Record) {
	size := recordSize(&d)
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.n > 0 && (l.n == len(l.ring) || l.bytes+size > l.maxBytes) {
		l.dropOldest()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = d
	l.n++
	l.bytes += size
}

func (l *recordLog) dropOldest() {
	l.bytes -= recordSize(&l.ring[l.head])
	l.ring[l.head] = Record{}
	l.head = (l.head + 1) % len(l.ring)
	l.n--
}

// list returns the deliveries, oldest first, that match the filter.
func (l *recordLog) list(keep func(*Record) bool) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Record
	for i := range l.n {
		if d := &l.ring[(l.head+i)%len(l.ring)]; keep(d) {
			out = append(out, *d)
		}
	}
	return out
}

func (l *recordLog) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.ring)
	l.head, l.n, l.bytes = 0, 0, 0
}

// Records returns the recorded deliveries of a protocol ("" for all),
// oldest first.
func (d *Service) Records(protocol string) []Record {
	return d.records.list(func(r *Record) bool { return protocol == "" || r.Protocol == protocol })
}

// lambdaEvent is the event a Lambda function is invoked with.
type lambdaEvent struct {
	Records []lambdaRecord `json:"Records"`
}

type lambdaRecord struct {
	EventSource          string    `json:"EventSource"`
	EventVersion         string    `json:"EventVersion"`
	EventSubscriptionArn string    `json:"EventSubscriptionArn"`
	Sns                  lambdaSNS `json:"Sns"`
}

type lambdaAttr struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

type lambdaSNS struct {
	Type              string                `json:"Type"`
	MessageId         string                `json:"MessageId"`
	TopicArn          string                `json:"TopicArn"`
	Subject           *string               `json:"Subject"`
	Message           string                `json:"Message"`
	Timestamp         string                `json:"Timestamp"`
	SignatureVersion  string                `json:"SignatureVersion,omitempty"`
	Signature         string                `json:"Signature,omitempty"`
	SigningCertUrl    string                `json:"SigningCertUrl,omitempty"`
	UnsubscribeUrl    string                `json:"UnsubscribeUrl"`
	MessageAttributes map[string]lambdaAttr `json:"MessageAttributes"`
}

// RecordNotification delivers m to a subscription of a protocol that is
// only recorded (Lambda, Firehose, SMS, mobile push).
func (d *Service) RecordNotification(t *Topic, sub *Subscription, m *Message) error {
	text := m.TextFor(sub.Protocol)
	r := Record{Protocol: sub.Protocol, Endpoint: sub.Endpoint, SubscriptionArn: sub.ARN, TopicArn: t.ARN, Type: TypeNotification,
		MessageId: m.ID, Subject: m.Subject, Message: text, Attributes: m.Delivered(), Timestamp: FormatTimestamp(m.Timestamp)}
	switch sub.Protocol {
	case ProtoLambda:
		n, err := d.Notification(t, m, text, sub.ARN)
		if err != nil {
			return err
		}
		ev := lambdaSNS{Type: TypeNotification, MessageId: m.ID, TopicArn: t.ARN, Message: text, Timestamp: FormatTimestamp(m.Timestamp),
			SignatureVersion: signatureVersion(n.SignatureVersion), Signature: n.Signature, SigningCertUrl: n.SigningCertURL,
			UnsubscribeUrl: n.UnsubscribeURL, MessageAttributes: map[string]lambdaAttr{}}
		if t.FIFO {
			ev.SignatureVersion, ev.SigningCertUrl = "", ""
		}
		if m.Subject != "" {
			ev.Subject = &m.Subject
		}
		for name, a := range m.Delivered() {
			ev.MessageAttributes[name] = lambdaAttr{Type: a.DataType, Value: envelopeValue(a)}
		}
		b, err := json.Marshal(lambdaEvent{Records: []lambdaRecord{{EventSource: "aws:sns", EventVersion: "1.0", EventSubscriptionArn: sub.ARN, Sns: ev}}})
		if err != nil {
			return err
		}
		r.Body = string(b)
	case ProtoFirehose:
		if sub.Raw {
			r.Body = text
		} else {
			n, err := d.Notification(t, m, text, sub.ARN)
			if err != nil {
				return err
			}
			b, err := n.JSON()
			if err != nil {
				return err
			}
			r.Body = string(b)
		}
	default:
		r.Body = text
	}
	d.records.add(r)
	if t.LogsFor(sub.Protocol) {
		a := &Attempt{MessageID: m.ID, Text: text, Published: m.Timestamp, Handoff: d.clock.Now(), Attempts: 1, Success: true}
		switch sub.Protocol {
		case ProtoLambda:
			// An asynchronous invocation answers 202.
			a.Status, a.Response = http.StatusAccepted, `{"lambdaRequestId":"`+uuid.NewString()+`"}`
		case ProtoFirehose:
			// The response's wording is not recorded from AWS.
			a.Status, a.Response = http.StatusOK, `{"firehoseRequestId":"`+uuid.NewString()+`"}`
		default:
			a.Status, a.Response = http.StatusOK, "Recorded by Ferry (GET /_ferry/sns/deliveries)"
		}
		d.LogAttempt(t, sub, a)
	}
	return nil
}

// RecordPublish records m, as text, published straight to an endpoint of
// protocol (a phone number, a mobile push endpoint).
func (d *Service) RecordPublish(protocol, endpoint string, m *Message, text string) {
	d.records.add(Record{Protocol: protocol, Endpoint: endpoint, Type: TypeNotification, MessageId: m.ID, Subject: m.Subject,
		Message: text, Body: text, Attributes: m.Delivered(), Timestamp: FormatTimestamp(m.Timestamp)})
}

// serveRecords answers JSON lines, oldest first, filtered by the
// protocol, endpoint and topic query parameters.
func (d *Service) serveRecords(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	proto, endpoint, topic := q.Get("protocol"), q.Get("endpoint"), q.Get("topic")
	rs := d.records.list(func(r *Record) bool {
		return (proto == "" || r.Protocol == proto) && (endpoint == "" || r.Endpoint == endpoint) && (topic == "" || r.TopicArn == topic)
	})
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rs {
		if err := enc.Encode(&rs[i]); err != nil {
			return
		}
	}
}
