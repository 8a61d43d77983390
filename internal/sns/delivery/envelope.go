package delivery

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
	"github.com/ferrymq/ferry/internal/sns/snsjson"
)

// SNS message types: the envelope's Type and the x-amz-sns-message-type header.
const (
	TypeNotification             = "Notification"
	TypeSubscriptionConfirmation = "SubscriptionConfirmation"
	TypeUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// Headers of the HTTP/S POSTs SNS makes.
const (
	defaultContentType = "text/plain; charset=UTF-8"
	agent              = "Amazon Simple Notification Service Agent"
)

// timestampLayout is the envelope Timestamp: UTC, milliseconds, Z.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp renders t as SNS writes Timestamp in envelopes.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// Notification is a published message as one subscriber receives it in a
// JSON envelope (non-raw delivery to SQS, HTTP/S, and subscription DLQs).
type Notification struct {
	MessageID string
	// SequenceNumber is set for FIFO topics only; FIFO envelopes carry it and
	// no signature fields.
	SequenceNumber string
	TopicARN       string
	Subject        string // omitted when empty
	Message        string
	Timestamp      time.Time
	// SignatureVersion is "1" (SHA1withRSA, the default when empty) or "2".
	SignatureVersion string
	// Signature is set by Sign. It covers no per-subscription field, so one
	// signed Notification can be copied for every subscriber.
	Signature         string
	SigningCertURL    string
	UnsubscribeURL    string
	MessageAttributes map[string]filterpolicy.Attribute
}

func (n *Notification) fifo() bool { return n.SequenceNumber != "" }

// SigningFields are the envelope fields the signature covers.
func (n *Notification) SigningFields() map[string]string {
	f := map[string]string{
		"Type":      TypeNotification,
		"MessageId": n.MessageID,
		"TopicArn":  n.TopicARN,
		"Message":   n.Message,
		"Timestamp": FormatTimestamp(n.Timestamp),
	}
	if n.Subject != "" {
		f["Subject"] = n.Subject
	}
	return f
}

// Sign sets n.Signature with s. FIFO notifications are not signed.
func (n *Notification) Sign(s *Signer) error {
	if n.fifo() {
		return nil
	}
	if s == nil {
		return errors.New("sns: a signer is required for a standard-topic notification")
	}
	sig, err := s.Sign(n.SigningFields(), signatureVersion(n.SignatureVersion))
	if err != nil {
		return err
	}
	n.Signature = sig
	return nil
}

// JSON renders the envelope byte for byte as SNS writes it: its key order,
// its " : " spacing and line breaks, no escaping of '/' or non-ASCII.
func (n *Notification) JSON() ([]byte, error) {
	if !n.fifo() && n.Signature == "" {
		return nil, errors.New("sns: notification is not signed")
	}
	b := make([]byte, 0, 512+len(n.Message))
	b = append(b, "{\n"...)
	b = appendMember(b, "Type", TypeNotification, false)
	b = appendMember(b, "MessageId", n.MessageID, false)
	if n.fifo() {
		b = appendMember(b, "SequenceNumber", n.SequenceNumber, false)
	}
	b = appendMember(b, "TopicArn", n.TopicARN, false)
	if n.Subject != "" {
		b = appendMember(b, "Subject", n.Subject, false)
	}
	b = appendMember(b, "Message", n.Message, false)
	b = appendMember(b, "Timestamp", FormatTimestamp(n.Timestamp), false)
	if !n.fifo() {
		b = appendMember(b, "SignatureVersion", signatureVersion(n.SignatureVersion), false)
		b = appendMember(b, "Signature", n.Signature, false)
		b = appendMember(b, "SigningCertURL", n.SigningCertURL, false)
	}
	last := len(n.MessageAttributes) == 0
	b = appendMember(b, "UnsubscribeURL", n.UnsubscribeURL, last)
	if !last {
		b = append(b, `  "MessageAttributes" : {`+"\n"...)
		names := make([]string, 0, len(n.MessageAttributes))
		for name := range n.MessageAttributes {
			names = append(names, name)
		}
		// AWS keeps no documented order; sorted names keep output stable.
		slices.Sort(names)
		for i, name := range names {
			a := n.MessageAttributes[name]
			b = append(b, "    "...)
			b = snsjson.AppendString(b, name)
			b = append(b, ` : {"Type":`...)
			b = snsjson.AppendString(b, a.DataType)
			b = append(b, `,"Value":`...)
			b = snsjson.AppendString(b, envelopeValue(a))
			b = append(b, '}')
			if i < len(names)-1 {
				b = append(b, ',')
			}
			b = append(b, '\n')
		}
		b = append(b, "  }\n"...)
	}
	b = append(b, '}')
	return b, nil
}

// Headers are the headers of the HTTP/S POST that delivers n.
// contentType is the effective requestPolicy.headerContentType ("" for
// the default); raw marks raw message delivery (the body is n.Message).
func (n *Notification) Headers(subscriptionARN, contentType string, raw bool) http.Header {
	if contentType == "" {
		contentType = defaultContentType
	}
	h := postHeaders(TypeNotification, n.MessageID, n.TopicARN, contentType)
	h.Set("X-Amz-Sns-Subscription-Arn", subscriptionARN)
	if raw {
		h.Set("X-Amz-Sns-Rawdelivery", "true")
	}
	return h
}

// envelopeValue is the attribute's "Value": binary data travels as base64.
func envelopeValue(a filterpolicy.Attribute) string {
	if strings.HasPrefix(a.DataType, "Binary") {
		return base64.StdEncoding.EncodeToString(a.BinaryValue)
	}
	return a.StringValue
}

// Confirmation is a SubscriptionConfirmation or UnsubscribeConfirmation, as
// SNS POSTs it to an HTTP/S endpoint.
type Confirmation struct {
	Type      string // TypeSubscriptionConfirmation or TypeUnsubscribeConfirmation
	MessageID string
	Token     string
	TopicARN  string
	// SubscriptionARN is named in an UnsubscribeConfirmation's text and
	// headers; SubscriptionConfirmations carry none.
	SubscriptionARN  string
	SubscribeURL     string
	Timestamp        time.Time
	SignatureVersion string // "1" (default when empty) or "2"
	Signature        string // set by Sign
	SigningCertURL   string
}

// Message is the confirmation's text, worded as SNS words it.
func (c *Confirmation) Message() string {
	if c.Type == TypeUnsubscribeConfirmation {
		return "You have chosen to deactivate subscription " + c.SubscriptionARN +
			".\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message."
	}
	return "You have chosen to subscribe to the topic " + c.TopicARN +
		".\nTo confirm the subscription, visit the SubscribeURL included in this message."
}

func (c *Confirmation) check() error {
	if c.Type != TypeSubscriptionConfirmation && c.Type != TypeUnsubscribeConfirmation {
		return fmt.Errorf("sns: %q is not a confirmation type", c.Type)
	}
	return nil
}

// SigningFields are the envelope fields the signature covers.
func (c *Confirmation) SigningFields() map[string]string {
	return map[string]string{
		"Type":         c.Type,
		"MessageId":    c.MessageID,
		"Token":        c.Token,
		"TopicArn":     c.TopicARN,
		"Message":      c.Message(),
		"SubscribeURL": c.SubscribeURL,
		"Timestamp":    FormatTimestamp(c.Timestamp),
	}
}

// Sign sets c.Signature with s.
func (c *Confirmation) Sign(s *Signer) error {
	if err := c.check(); err != nil {
		return err
	}
	if s == nil {
		return errors.New("sns: a signer is required for a confirmation")
	}
	sig, err := s.Sign(c.SigningFields(), signatureVersion(c.SignatureVersion))
	if err != nil {
		return err
	}
	c.Signature = sig
	return nil
}

// JSON renders the envelope byte for byte as SNS writes it.
func (c *Confirmation) JSON() ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.Signature == "" {
		return nil, errors.New("sns: confirmation is not signed")
	}
	b := make([]byte, 0, 1024)
	b = append(b, "{\n"...)
	b = appendMember(b, "Type", c.Type, false)
	b = appendMember(b, "MessageId", c.MessageID, false)
	b = appendMember(b, "Token", c.Token, false)
	b = appendMember(b, "TopicArn", c.TopicARN, false)
	b = appendMember(b, "Message", c.Message(), false)
	b = appendMember(b, "SubscribeURL", c.SubscribeURL, false)
	b = appendMember(b, "Timestamp", FormatTimestamp(c.Timestamp), false)
	b = appendMember(b, "SignatureVersion", signatureVersion(c.SignatureVersion), false)
	b = appendMember(b, "Signature", c.Signature, false)
	b = appendMember(b, "SigningCertURL", c.SigningCertURL, true)
	b = append(b, '}')
	return b, nil
}

// Headers are the headers of the POST that delivers c. Confirmations always
// go as text/plain, whatever the delivery policy says. A
// SubscriptionConfirmation names no subscription; an UnsubscribeConfirmation
// names its own (not recorded against AWS).
func (c *Confirmation) Headers() http.Header {
	h := postHeaders(c.Type, c.MessageID, c.TopicARN, defaultContentType)
	if c.Type == TypeUnsubscribeConfirmation && c.SubscriptionARN != "" {
		h.Set("X-Amz-Sns-Subscription-Arn", c.SubscriptionARN)
	}
	return h
}

func postHeaders(messageType, messageID, topicARN, contentType string) http.Header {
	h := make(http.Header, 8)
	h.Set("Content-Type", contentType)
	h.Set("User-Agent", agent)
	h.Set("Accept-Encoding", "gzip,deflate")
	h.Set("X-Amz-Sns-Message-Type", messageType)
	h.Set("X-Amz-Sns-Message-Id", messageID)
	h.Set("X-Amz-Sns-Topic-Arn", topicARN)
	return h
}

func signatureVersion(v string) string {
	if v == "" {
		return SignatureVersion1
	}
	return v
}

// appendMember writes one `  "name" : "value"` line of an envelope.
func appendMember(b []byte, name, value string, last bool) []byte {
	b = append(b, "  "...)
	b = snsjson.AppendString(b, name)
	b = append(b, " : "...)
	b = snsjson.AppendString(b, value)
	if !last {
		b = append(b, ',')
	}
	return append(b, '\n')
}
