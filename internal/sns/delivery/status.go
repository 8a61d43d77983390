package delivery

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/protocol"
)

// Delivery status logging. A topic's <P>SuccessFeedbackRoleArn,
// <P>FailureFeedbackRoleArn and <P>SuccessFeedbackSampleRate attributes
// (P one of FeedbackProtocols) make SNS write a line to CloudWatch Logs
// for delivery attempts to that protocol: every failure, and successes at
// the sample rate. Ferry writes the same JSON lines, with the log group
// SNS would use, to a file or stdout (Config.StatusLog) and keeps
// the latest in memory (GET /_ferry/sns/delivery-logs).

// FeedbackProtocols have delivery status attributes:
// <P>SuccessFeedbackRoleArn, <P>FailureFeedbackRoleArn and
// <P>SuccessFeedbackSampleRate.
var FeedbackProtocols = [...]string{"HTTP", "SQS", "Lambda", "Firehose", "Application"}

// CheckFeedbackAttribute reports whether name is a delivery status
// attribute (known) and value one it takes: "", a role's ARN, a sample
// rate of 0 to 100.
func CheckFeedbackAttribute(name, value string) (known, valid bool) {
	for _, p := range FeedbackProtocols {
		switch name {
		case p + "SuccessFeedbackRoleArn", p + "FailureFeedbackRoleArn":
			return true, value == "" || validRoleARN(value)
		case p + "SuccessFeedbackSampleRate":
			n, err := strconv.Atoi(value)
			return true, value == "" || err == nil && n >= 0 && n <= 100
		}
	}
	return false, false
}

// feedbackConf is one protocol's delivery status settings of a topic.
type feedbackConf struct {
	success, failure bool // a role is set: log successes, failures
	rate             int  // percentage of successes logged
}

// feedbackIndex is the position in FeedbackProtocols of the attributes
// that govern a subscription protocol; -1 when none do.
func feedbackIndex(protocol string) int {
	switch protocol {
	case ProtoHTTP, ProtoHTTPS:
		return 0
	case ProtoSQS:
		return 1
	case ProtoLambda:
		return 2
	case ProtoFirehose:
		return 3
	case ProtoApplication:
		return 4
	}
	return -1
}

// parseFeedback reads a topic's delivery status attributes; nil when they
// log nothing. An unset sample rate logs no successes.
func parseFeedback(attrs map[string]string) *[len(FeedbackProtocols)]feedbackConf {
	var fb *[len(FeedbackProtocols)]feedbackConf
	for i, p := range FeedbackProtocols {
		c := feedbackConf{
			success: attrs[p+"SuccessFeedbackRoleArn"] != "",
			failure: attrs[p+"FailureFeedbackRoleArn"] != "",
		}
		c.rate, _ = strconv.Atoi(attrs[p+"SuccessFeedbackSampleRate"])
		if c.success && c.rate <= 0 {
			c.success = false
		}
		if !c.success && !c.failure {
			continue
		}
		if fb == nil {
			fb = new([len(FeedbackProtocols)]feedbackConf)
		}
		fb[i] = c
	}
	return fb
}

// LogsFor reports whether attempts to protocol may be logged at all, so
// that the delivery paths build nothing when they are not.
func (t *Topic) LogsFor(protocol string) bool {
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

// Status is one delivery status log line: the fields SNS writes to
// CloudWatch Logs, and the log group it writes them to.
type Status struct {
	Notification StatusNotification `json:"notification"`
	Delivery     StatusDelivery     `json:"delivery"`
	Status       string             `json:"status"` // SUCCESS or FAILURE
	// LogGroup is sns/{region}/{account}/{topic}, with /Failure appended
	// for failures.
	LogGroup string `json:"logGroup"`
}

// StatusNotification describes the published message.
type StatusNotification struct {
	MessageMD5Sum string `json:"messageMD5Sum"` // of the text the protocol receives
	MessageID     string `json:"messageId"`
	TopicARN      string `json:"topicArn"`
	Timestamp     string `json:"timestamp"` // of the publish: 2006-01-02 15:04:05.000
}

// StatusDelivery describes one attempt.
type StatusDelivery struct {
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

// Attempt is what a delivery path knows of one attempt.
type Attempt struct {
	MessageID string
	Text      string // the message as the protocol receives it
	Published time.Time
	Handoff   time.Time // just before the attempt
	Attempts  int
	Success   bool
	Status    int // the endpoint's HTTP status
	Response  string
}

// LogAttempt writes an attempt's line if the topic logs it.
func (d *Service) LogAttempt(t *Topic, sub *Subscription, a *Attempt) {
	if t.feedback == nil {
		return
	}
	i := feedbackIndex(sub.Protocol)
	if i < 0 {
		return
	}
	c := t.feedback[i]
	if a.Success && !(c.success && sampled(c.rate, a.MessageID, sub.ARN)) || !a.Success && !c.failure {
		return
	}
	sum := md5.Sum([]byte(a.Text))
	dest := MaskEndpoint(sub.Endpoint) // a log is no place for the endpoint's password
	owner, _ := arn.Split(t.ARN)       // the topic's region and account name its log group
	rec := Status{
		Notification: StatusNotification{
			MessageMD5Sum: hex.EncodeToString(sum[:]),
			MessageID:     a.MessageID,
			TopicARN:      t.ARN,
			Timestamp:     a.Published.UTC().Format(statusTimestampLayout),
		},
		Delivery: StatusDelivery{
			DeliveryID:       uuid.NewString(),
			Destination:      dest,
			ProviderResponse: a.Response,
			DwellTimeMs:      max(a.Handoff.Sub(a.Published).Milliseconds(), 0),
			Attempts:         a.Attempts,
			StatusCode:       a.Status,
		},
		Status:   StatusSuccess,
		LogGroup: "sns/" + owner.Region + "/" + owner.Account + "/" + t.Name,
	}
	if !a.Success {
		rec.Status = StatusFailure
		rec.LogGroup += "/Failure"
	}
	d.status.write(d.log, &rec)
}

// SQSResponse is the providerResponse of an SQS delivery, as SNS words it
// (the order of the two members is not recorded from AWS).
func SQSResponse(messageID string) string {
	return `{"sqsRequestId":"` + uuid.NewString() + `","sqsMessageId":"` + messageID + `"}`
}

// SQSRefusal is the providerResponse of an SQS delivery that SNS gave up
// at once: SQS's refusal (Refusal), a client-side error.
func SQSRefusal(refusal *protocol.Error) string {
	b, _ := json.Marshal(struct {
		ErrorCode    string
		ErrorMessage string
		RequestID    string `json:"sqsRequestId"`
	}{refusal.Code, refusal.Message, "Unrecoverable"})
	return string(b)
}

// Refusal is err as SQS's refusal of a message, a client-side error that
// SNS does not retry; nil for any other error.
func Refusal(err error) *protocol.Error {
	if err == nil {
		return nil // before perr, which As moves to the heap
	}
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return nil
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

func (l *statusLog) write(log *slog.Logger, rec *Status) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		log.Error("sns: encode delivery status", "err", err)
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
			log.Warn("sns: write delivery status log", "err", err)
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

// serveStatusLog answers the kept lines as a JSON array, oldest first.
func (d *Service) serveStatusLog(w http.ResponseWriter, r *http.Request) {
	lines := d.status.lines()
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
