package sns

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/protocol"
)

// Delivery status logging. A topic's <P>SuccessFeedbackRoleArn,
// <P>FailureFeedbackRoleArn and <P>SuccessFeedbackSampleRate attributes
// (P one of feedbackProtocols) make SNS write a line to CloudWatch Logs
// for delivery attempts to that protocol: every failure, and successes at
// the sample rate. Ferry writes the same JSON lines, with the log group
// SNS would use, to a file or stdout (Config.DeliveryStatusLog) and keeps
// the latest in memory (GET /_ferry/sns/delivery-logs).

// feedbackConf is one protocol's delivery status settings of a topic.
type feedbackConf struct {
	success, failure bool // a role is set: log successes, failures
	rate             int  // percentage of successes logged
}

// feedbackIndex is the position in feedbackProtocols of the attributes
// that govern a subscription protocol; -1 when none do.
func feedbackIndex(protocol string) int {
	switch protocol {
	case protoHTTP, protoHTTPS:
		return 0
	case protoSQS:
		return 1
	case protoLambda:
		return 2
	case protoFirehose:
		return 3
	case protoApplication:
		return 4
	}
	return -1
}

// prepareFeedback reads the delivery status attributes. An unset sample
// rate logs no successes.
func (t *topic) prepareFeedback() {
	t.feedback = nil
	for i, p := range feedbackProtocols {
		c := feedbackConf{
			success: t.Attrs[p+"SuccessFeedbackRoleArn"] != "",
			failure: t.Attrs[p+"FailureFeedbackRoleArn"] != "",
		}
		c.rate, _ = strconv.Atoi(t.Attrs[p+"SuccessFeedbackSampleRate"])
		if c.success && c.rate <= 0 {
			c.success = false
		}
		if !c.success && !c.failure {
			continue
		}
		if t.feedback == nil {
			t.feedback = new([len(feedbackProtocols)]feedbackConf)
		}
		t.feedback[i] = c
	}
}

// logsFor reports whether attempts to protocol may be logged at all, so
// that the delivery paths build nothing when they are not.
func (t *topic) logsFor(protocol string) bool {
	if t.feedback == nil {
		return false
	}
	i := feedbackIndex(protocol)
	return i >= 0 && (t.feedback[i].success || t.feedback[i].failure)
}

// validRoleARN: arn:{partition}:iam::{account}:role/{name}.
func validRoleARN(v string) bool {
	a, ok := arn.Split(v)
	if !ok || !a.Six() || a.Partition == "" || a.Service != "iam" || a.Region != "" || len(a.Account) != 12 {
		return false
	}
	for _, c := range a.Account {
		if c < '0' || c > '9' {
			return false
		}
	}
	name, ok := strings.CutPrefix(a.Resource, "role/")
	return ok && name != "" && !strings.HasSuffix(name, "/")
}

// sampled decides, the same way every time for a message and
// subscription, whether a success is logged at rate percent.
func sampled(rate int, messageID, subARN string) bool {
	switch {
	case rate >= 100:
		return true
	case rate <= 0:
		return false
	}
	h := fnv.New32a()
	io.WriteString(h, messageID)
	io.WriteString(h, subARN)
	return int(h.Sum32()%100) < rate
}

// DeliveryStatus is one delivery status log line: the fields SNS writes
// to CloudWatch Logs, and the log group it writes them to.
type DeliveryStatus struct {
	Notification DeliveryStatusNotification `json:"notification"`
	Delivery     DeliveryStatusDelivery     `json:"delivery"`
	Status       string                     `json:"status"` // SUCCESS or FAILURE
	// LogGroup is sns/{region}/{account}/{topic}, with /Failure appended
	// for failures.
	LogGroup string `json:"logGroup"`
}

// DeliveryStatusNotification describes the published message.
type DeliveryStatusNotification struct {
	MessageMD5Sum string `json:"messageMD5Sum"` // of the text the protocol receives
	MessageID     string `json:"messageId"`
	TopicARN      string `json:"topicArn"`
	Timestamp     string `json:"timestamp"` // of the publish: 2006-01-02 15:04:05.000
}

// DeliveryStatusDelivery describes one attempt.
type DeliveryStatusDelivery struct {
	DeliveryID       string `json:"deliveryId"`
	Destination      string `json:"destination"`
	ProviderResponse string `json:"providerResponse"`
	DwellTimeMs      int64  `json:"dwellTimeMs"` // from the publish to the hand-off
	Attempts         int    `json:"attempts"`
	// StatusCode is the endpoint's HTTP status (SQS: 200, or 400 for a
	// client-side error; Lambda: 202), 0 when no answer came.
	StatusCode int `json:"statusCode"`
}

// Status values.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
)

const statusTimestampLayout = "2006-01-02 15:04:05.000"

// attemptStatus is what a delivery path knows of one attempt.
type attemptStatus struct {
	messageID string
	text      string // the message as the protocol receives it
	published time.Time
	handoff   time.Time // just before the attempt
	attempts  int
	success   bool
	status    int
	response  string
}

// logAttempt writes an attempt's line if the topic logs it.
func (s *Service) logAttempt(t *topic, sub *subscription, a *attemptStatus) {
	if t.feedback == nil {
		return
	}
	i := feedbackIndex(sub.Protocol)
	if i < 0 {
		return
	}
	c := t.feedback[i]
	if a.success && !(c.success && sampled(c.rate, a.messageID, sub.ARN)) || !a.success && !c.failure {
		return
	}
	sum := md5.Sum([]byte(a.text))
	dest := maskEndpoint(sub.Endpoint) // a log is no place for the endpoint's password
	rec := DeliveryStatus{
		Notification: DeliveryStatusNotification{
			MessageMD5Sum: hex.EncodeToString(sum[:]),
			MessageID:     a.messageID,
			TopicARN:      t.ARN,
			Timestamp:     a.published.UTC().Format(statusTimestampLayout),
		},
		Delivery: DeliveryStatusDelivery{
			DeliveryID:       newID(),
			Destination:      dest,
			ProviderResponse: a.response,
			DwellTimeMs:      max(a.handoff.Sub(a.published).Milliseconds(), 0),
			Attempts:         a.attempts,
			StatusCode:       a.status,
		},
		Status:   StatusSuccess,
		LogGroup: "sns/" + s.region + "/" + s.account + "/" + t.Name,
	}
	if !a.success {
		rec.Status = StatusFailure
		rec.LogGroup += "/Failure"
	}
	s.statusLog.write(s, &rec)
}

// sqsResponse is the providerResponse of an SQS delivery, as SNS words it
// (the order of the two members is not recorded from AWS).
func sqsResponse(messageID string) string {
	return `{"sqsRequestId":"` + newID() + `","sqsMessageId":"` + messageID + `"}`
}

// sqsRefusal is the providerResponse of an SQS delivery that SNS gave up
// at once: SQS's refusal, a client-side error.
func sqsRefusal(refusal *protocol.Error) string {
	b, _ := json.Marshal(struct {
		ErrorCode    string
		ErrorMessage string
		RequestID    string `json:"sqsRequestId"`
	}{refusal.Code, refusal.Message, "Unrecoverable"})
	return string(b)
}

// statusLogSize is how many lines GET /_ferry/sns/delivery-logs keeps.
const statusLogSize = 1000

// statusLog writes delivery status lines to an optional writer and keeps
// the latest in a ring.
type statusLog struct {
	mu     sync.Mutex
	w      io.Writer // nil: memory only
	closer io.Closer
	ring   []json.RawMessage
	next   int
	full   bool
}

// openStatusLog opens the log's destination: a file (appended to), "-"
// for stdout, or "" for memory only.
func openStatusLog(dest string) (*statusLog, error) {
	l := &statusLog{ring: make([]json.RawMessage, statusLogSize)}
	switch dest {
	case "":
	case "-":
		l.w = os.Stdout
	default:
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("sns: open delivery status log: %w", err)
		}
		l.w, l.closer = f, f
	}
	return l, nil
}

func (l *statusLog) write(s *Service, rec *DeliveryStatus) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		s.log.Error("sns: encode delivery status", "err", err)
		return
	}
	line := buf.Bytes() // ends in a newline
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = line[:len(line)-1]
	if l.next++; l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	if l.w != nil {
		if _, err := l.w.Write(line); err != nil {
			s.log.Warn("sns: write delivery status log", "err", err)
		}
	}
}

// lines returns the kept lines, oldest first.
func (l *statusLog) lines() []json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]json.RawMessage, 0, len(l.ring))
	if l.full {
		out = append(out, l.ring[l.next:]...)
	}
	return append(out, l.ring[:l.next]...)
}

func (l *statusLog) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.ring)
	l.next, l.full = 0, false
}

func (l *statusLog) close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// serveDeliveryStatusLogs answers the kept lines as a JSON array, oldest
// first.
func (s *Service) serveDeliveryStatusLogs(w http.ResponseWriter, r *http.Request) {
	lines := s.statusLog.lines()
	w.Header().Set("Content-Type", "application/json")
	var b bytes.Buffer
	b.WriteByte('[')
	for i, l := range lines {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(l)
	}
	b.WriteByte(']')
	_, _ = w.Write(b.Bytes())
}
