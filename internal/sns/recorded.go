package sns

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
)

// Protocols Ferry cannot reach (Lambda, SMS, mobile push, Firehose, and
// email without an SMTP server) are delivered into a log that tests and
// people read back at GET /_ferry/sns/deliveries.

// Delivery is one recorded delivery.
type Delivery struct {
	Protocol        string                      `json:"Protocol"`
	Endpoint        string                      `json:"Endpoint"`
	SubscriptionArn string                      `json:"SubscriptionArn,omitempty"`
	TopicArn        string                      `json:"TopicArn,omitempty"`
	Type            string                      `json:"Type"`
	MessageId       string                      `json:"MessageId"`
	Subject         string                      `json:"Subject,omitempty"`
	Message         string                      `json:"Message"`
	Attributes      map[string]MessageAttribute `json:"MessageAttributes,omitempty"`
	// Body is what the endpoint receives: the Lambda event, the envelope,
	// the email text, the SMS text.
	Body      string `json:"Body"`
	Timestamp string `json:"Timestamp"`
}

// deliveryLogSize and deliveryLogBytes bound the log, in deliveries and in
// the bytes of their texts; the oldest deliveries go first. A count alone
// would let 10,000 deliveries of 256 KiB messages, each kept as Message
// and inside Body, hold 5 GiB.
const (
	deliveryLogSize  = 10_000
	deliveryLogBytes = 64 << 20
)

// deliveryLog is a ring of the latest deliveries: n of them from head.
type deliveryLog struct {
	mu       sync.Mutex
	ring     []Delivery
	head, n  int
	bytes    int // deliverySize of the n kept
	maxBytes int
}

func newDeliveryLog(n, maxBytes int) *deliveryLog {
	return &deliveryLog{ring: make([]Delivery, n), maxBytes: maxBytes}
}

// deliverySize is about what d holds: its strings, and a little for the
// rest. The newest delivery is kept whatever its size.
func deliverySize(d *Delivery) int {
	n := 256 + len(d.Protocol) + len(d.Endpoint) + len(d.SubscriptionArn) + len(d.TopicArn) + len(d.Type) +
		len(d.MessageId) + len(d.Subject) + len(d.Message) + len(d.Body) + len(d.Timestamp)
	for name, a := range d.Attributes {
		n += len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

func (l *deliveryLog) add(d Delivery) {
	size := deliverySize(&d)
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.n > 0 && (l.n == len(l.ring) || l.bytes+size > l.maxBytes) {
		l.dropOldest()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = d
	l.n++
	l.bytes += size
}

func (l *deliveryLog) dropOldest() {
	l.bytes -= deliverySize(&l.ring[l.head])
	l.ring[l.head] = Delivery{}
	l.head = (l.head + 1) % len(l.ring)
	l.n--
}

// list returns the deliveries, oldest first, that match the filter.
func (l *deliveryLog) list(keep func(*Delivery) bool) []Delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Delivery
	for i := range l.n {
		if d := &l.ring[(l.head+i)%len(l.ring)]; keep(d) {
			out = append(out, *d)
		}
	}
	return out
}

func (l *deliveryLog) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.ring)
	l.head, l.n, l.bytes = 0, 0, 0
}

// Deliveries returns the recorded deliveries of a protocol ("" for all),
// oldest first.
func (s *Service) Deliveries(protocol string) []Delivery {
	return s.deliveries.list(func(d *Delivery) bool { return protocol == "" || d.Protocol == protocol })
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

// record delivers m to a subscription that is only recorded.
func (s *Service) record(t *topic, sub *subscription, m *message) error {
	text := m.textFor(sub.Protocol)
	d := Delivery{Protocol: sub.Protocol, Endpoint: sub.Endpoint, SubscriptionArn: sub.ARN, TopicArn: t.ARN, Type: TypeNotification,
		MessageId: m.id, Subject: m.subject, Message: text, Attributes: m.deliveredAttrs(), Timestamp: FormatTimestamp(m.timestamp)}
	switch sub.Protocol {
	case protoLambda:
		n, err := s.notification(t, m, text, sub.ARN)
		if err != nil {
			return err
		}
		ev := lambdaSNS{Type: TypeNotification, MessageId: m.id, TopicArn: t.ARN, Message: text, Timestamp: FormatTimestamp(m.timestamp),
			SignatureVersion: signatureVersion(n.SignatureVersion), Signature: n.Signature, SigningCertUrl: n.SigningCertURL,
			UnsubscribeUrl: n.UnsubscribeURL, MessageAttributes: map[string]lambdaAttr{}}
		if t.FIFO {
			ev.SignatureVersion, ev.SigningCertUrl = "", ""
		}
		if m.subject != "" {
			ev.Subject = &m.subject
		}
		for name, a := range m.deliveredAttrs() {
			ev.MessageAttributes[name] = lambdaAttr{Type: a.DataType, Value: envelopeValue(a)}
		}
		b, err := json.Marshal(lambdaEvent{Records: []lambdaRecord{{EventSource: "aws:sns", EventVersion: "1.0", EventSubscriptionArn: sub.ARN, Sns: ev}}})
		if err != nil {
			return err
		}
		d.Body = string(b)
	case protoFirehose:
		if sub.raw() {
			d.Body = text
		} else {
			n, err := s.notification(t, m, text, sub.ARN)
			if err != nil {
				return err
			}
			b, err := n.JSON()
			if err != nil {
				return err
			}
			d.Body = string(b)
		}
	default:
		d.Body = text
	}
	s.deliveries.add(d)
	s.count(sub, cDelivered, 1)
	if t.logsFor(sub.Protocol) {
		a := &attemptStatus{messageID: m.id, text: text, published: m.timestamp, handoff: s.clock.Now(), attempts: 1, success: true}
		switch sub.Protocol {
		case protoLambda:
			// An asynchronous invocation answers 202.
			a.status, a.response = http.StatusAccepted, `{"lambdaRequestId":"`+newID()+`"}`
		case protoFirehose:
			// The response's wording is not recorded from AWS.
			a.status, a.response = http.StatusOK, `{"firehoseRequestId":"`+newID()+`"}`
		default:
			a.status, a.response = http.StatusOK, "Recorded by Ferry (GET /_ferry/sns/deliveries)"
		}
		s.logAttempt(t, sub, a)
	}
	return nil
}

// publishSMS records a message published straight to a phone number.
func (s *Service) publishSMS(phone string, m *message) error {
	s.mu.RLock()
	_, optedOut := slices.BinarySearch(s.platform.sms.OptedOut, phone)
	s.mu.RUnlock()
	if optedOut {
		return errOptedOut
	}
	text := m.textFor(protoSMS)
	s.deliveries.add(Delivery{Protocol: protoSMS, Endpoint: phone, Type: TypeNotification, MessageId: m.id, Subject: m.subject,
		Message: text, Body: text, Attributes: m.deliveredAttrs(), Timestamp: FormatTimestamp(m.timestamp)})
	return nil
}

// Register adds Ferry's own SNS paths to mux: the signing certificate
// (where SigningCertURL points), the recorded deliveries, the counters and
// the delivery status logs.
func (s *Service) Register(mux *http.ServeMux) {
	s.keys.register(mux)
	mux.HandleFunc("GET /_ferry/sns/deliveries", s.serveDeliveries)
	mux.HandleFunc("DELETE /_ferry/sns/deliveries", func(w http.ResponseWriter, r *http.Request) {
		s.deliveries.clear()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /_ferry/sns/counters", s.serveCounters)
	mux.HandleFunc("GET /_ferry/sns/delivery-logs", s.serveDeliveryStatusLogs)
	mux.HandleFunc("DELETE /_ferry/sns/delivery-logs", func(w http.ResponseWriter, r *http.Request) {
		s.statusLog.clear()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /_ferry/sns/sms-opt-outs", s.serveOptOut)
}

// serveDeliveries answers JSON lines, oldest first, filtered by the
// protocol, endpoint and topic query parameters.
func (s *Service) serveDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	proto, endpoint, topic := q.Get("protocol"), q.Get("endpoint"), q.Get("topic")
	ds := s.deliveries.list(func(d *Delivery) bool {
		return (proto == "" || d.Protocol == proto) && (endpoint == "" || d.Endpoint == endpoint) && (topic == "" || d.TopicArn == topic)
	})
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range ds {
		if err := enc.Encode(&ds[i]); err != nil {
			return
		}
	}
}

// serveCounters answers {"topics":{arn:counters},"subscriptions":{arn:counters}}.
func (s *Service) serveCounters(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Topics        map[string]Counters `json:"topics"`
		Subscriptions map[string]Counters `json:"subscriptions"`
	}{map[string]Counters{}, map[string]Counters{}}
	s.mu.RLock()
	for arn, t := range s.topics {
		out.Topics[arn] = t.state.counters.snapshot()
	}
	for arn, sub := range s.subs {
		if !sub.Deleted {
			out.Subscriptions[arn] = sub.state.counters.snapshot()
		}
	}
	s.mu.RUnlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
