package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/digest"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

const (
	maxReceiveMessages   = 10
	maxWaitSeconds       = 20
	maxVisibilitySeconds = 43200
)

func (s *service) sendMessage(ctx context.Context, in *SendMessageInput) (*SendMessageOutput, error) {
	q, err := s.viewQueue(ctx, in.QueueUrl, "SendMessage")
	if err != nil {
		return nil, err
	}
	msg, perr := buildMessage(messageRequest{
		body: in.MessageBody, delay: in.DelaySeconds, attrs: in.MessageAttributes,
		sysAttrs: in.MessageSystemAttributes, dedupID: in.MessageDeduplicationId, groupID: in.MessageGroupId,
	}, rulesOf(q), s.senderID(ctx), false)
	if perr != nil {
		return nil, perr
	}
	res, err := s.send(ctx, q.Account, q.Name, []engine.NewMessage{msg})
	if err != nil {
		return nil, s.engineError(err, "send to "+q.Name)
	}
	// A duplicate of a FIFO message answers with the original's id and
	// sequence number, which the engine returns. The digests are this
	// request's, as SDKs check them against what they sent (what AWS
	// answers for a duplicate id with another body is unrecorded).
	return &SendMessageOutput{
		MD5OfMessageBody:             msg.MD5OfBody,
		MD5OfMessageAttributes:       msg.MD5OfAttrs,
		MD5OfMessageSystemAttributes: msg.MD5OfSysAttrs,
		MessageId:                    res[0].MessageID,
		SequenceNumber:               res[0].SequenceNumber,
	}, nil
}

func (s *service) receiveMessage(ctx context.Context, in *ReceiveMessageInput) (*ReceiveMessageOutput, error) {
	q, err := s.viewQueue(ctx, in.QueueUrl, "ReceiveMessage")
	if err != nil {
		return nil, err
	}
	req := engine.ReceiveRequest{Max: 1, Wait: q.Settings.ReceiveWait}
	if n := in.MaxNumberOfMessages; n != nil {
		if *n < 1 || *n > maxReceiveMessages {
			return nil, invalidValue(*n, "MaxNumberOfMessages", "Must be between 1 and 10, if provided.")
		}
		req.Max = *n
	}
	if v := in.VisibilityTimeout; v != nil {
		if *v < 0 || *v > maxVisibilitySeconds {
			return nil, invalidValue(*v, "VisibilityTimeout", "Must be >= 0 and <= 43200, if provided.")
		}
		d := time.Duration(*v) * time.Second
		req.Visibility = &d
	}
	if w := in.WaitTimeSeconds; w != nil {
		if *w < 0 || *w > maxWaitSeconds {
			return nil, invalidValue(*w, "WaitTimeSeconds", "Must be >= 0 and <= 20, if provided.")
		}
		req.Wait = time.Duration(*w) * time.Second
	}
	// The attempt id only means something on FIFO queues; a standard
	// queue ignores it, unchecked (whether AWS checks it there is
	// unrecorded).
	if id := in.ReceiveRequestAttemptId; id != "" && isFifo(q.Attributes) {
		if !isPunctID(id) {
			return nil, invalidValue(id, "ReceiveRequestAttemptId", fmt.Sprintf(reasonPunctID, "ReceiveRequestAttemptId"))
		}
		req.AttemptID = id
	}
	if s.history {
		info := protocol.Info(ctx)
		req.Consumer = &engine.Consumer{SourceIP: info.SourceIP, UserAgent: info.UserAgent, AccessKey: info.AccessKey}
	}
	sys := selectSystemAttributes(in.AttributeNames, in.MessageSystemAttributeNames)
	filter := newAttributeFilter(in.MessageAttributeNames)
	msgs, err := s.backend.Receive(ctx, q.Account, q.Name, req)
	if err != nil {
		return nil, s.engineError(err, "receive from "+q.Name)
	}
	s.recordReceived(q.Account, q.Name, len(msgs))
	out := &ReceiveMessageOutput{}
	if len(msgs) == 0 {
		return out, nil
	}
	out.Messages = make([]Message, len(msgs))
	for i := range msgs {
		out.Messages[i] = renderMessage(&msgs[i], sys, filter)
	}
	return out, nil
}

func (s *service) deleteMessage(ctx context.Context, in *DeleteMessageInput) (*EmptyOutput, error) {
	ref, err := s.target(ctx, in.QueueUrl, "DeleteMessage")
	if err != nil {
		return nil, err
	}
	if in.ReceiptHandle == "" {
		return nil, missingParameter("ReceiptHandle")
	}
	errs, err := s.backend.Delete(ctx, ref.owner, ref.name, []string{in.ReceiptHandle})
	if err != nil {
		return nil, s.engineError(err, "delete from "+ref.name)
	}
	if perr := deleteError(in.ReceiptHandle, errs, 0); perr != nil {
		return nil, perr
	}
	s.recordDeleted(ref.owner, ref.name, 1)
	return &EmptyOutput{}, nil
}

// deleteError maps the engine's answer for handle i of a delete. A stale
// handle of a standard queue deletes nothing and succeeds, as on AWS; an
// expired one of a FIFO queue is refused.
func deleteError(handle string, errs []error, i int) *protocol.Error {
	if i >= len(errs) || errs[i] == nil || errors.Is(errs[i], engine.ErrMessageNotInflight) {
		return nil
	}
	switch {
	case errors.Is(errs[i], engine.ErrReceiptHandleInvalid):
		return receiptHandleInvalid(handle)
	case errors.Is(errs[i], engine.ErrReceiptHandleExpired):
		return receiptHandleExpired(handle)
	}
	var perr *protocol.Error
	if errors.As(errs[i], &perr) {
		return perr
	}
	return receiptHandleInvalid(handle)
}

func (s *service) changeMessageVisibility(ctx context.Context, in *ChangeMessageVisibilityInput) (*EmptyOutput, error) {
	ref, err := s.target(ctx, in.QueueUrl, "ChangeMessageVisibility")
	if err != nil {
		return nil, err
	}
	if in.ReceiptHandle == "" {
		return nil, missingParameter("ReceiptHandle")
	}
	if in.VisibilityTimeout == nil {
		return nil, missingParameter("VisibilityTimeout")
	}
	timeout := *in.VisibilityTimeout
	if perr := checkVisibility(timeout); perr != nil {
		return nil, perr
	}
	errs, err := s.backend.ChangeVisibility(ctx, ref.owner, ref.name,
		[]engine.VisibilityChange{{ReceiptHandle: in.ReceiptHandle, Timeout: time.Duration(timeout) * time.Second}})
	if err != nil {
		return nil, s.engineError(err, "change visibility in "+ref.name)
	}
	if len(errs) > 0 && errs[0] != nil {
		return nil, visibilityError(errs[0], in.ReceiptHandle, timeout)
	}
	return &EmptyOutput{}, nil
}

func checkVisibility(timeout int) *protocol.Error {
	if timeout < 0 || timeout > maxVisibilitySeconds {
		return invalidValue(timeout, "VisibilityTimeout", "Must be >= 0 and <= 43200, if provided.")
	}
	return nil
}

// visibilityError maps the engine's answer to a visibility change.
func visibilityError(err error, handle string, timeout int) *protocol.Error {
	switch {
	case errors.Is(err, engine.ErrReceiptHandleInvalid):
		return receiptHandleInvalid(handle)
	case errors.Is(err, engine.ErrVisibilityLimit):
		return visibilityLimit(timeout)
	case errors.Is(err, engine.ErrReceiptHandleExpired):
		return receiptHandleExpired(handle)
	}
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return notInflight(handle)
}

// System attributes a receive can return.
const (
	sysSenderID uint16 = 1 << iota
	sysSentTimestamp
	sysApproximateReceiveCount
	sysApproximateFirstReceiveTimestamp
	sysSequenceNumber
	sysMessageDeduplicationID
	sysMessageGroupID
	sysAWSTraceHeader
	sysDeadLetterQueueSourceArn
	sysAll = 1<<iota - 1
)

var systemAttributeBits = map[string]uint16{
	"All":                              sysAll,
	"SenderId":                         sysSenderID,
	"SentTimestamp":                    sysSentTimestamp,
	"ApproximateReceiveCount":          sysApproximateReceiveCount,
	"ApproximateFirstReceiveTimestamp": sysApproximateFirstReceiveTimestamp,
	"SequenceNumber":                   sysSequenceNumber,
	"MessageDeduplicationId":           sysMessageDeduplicationID,
	"MessageGroupId":                   sysMessageGroupID,
	"AWSTraceHeader":                   sysAWSTraceHeader,
	"DeadLetterQueueSourceArn":         sysDeadLetterQueueSourceArn,
}

// selectSystemAttributes merges the deprecated AttributeNames with
// MessageSystemAttributeNames; names it does not know select nothing.
func selectSystemAttributes(lists ...[]string) uint16 {
	var bits uint16
	for _, names := range lists {
		for _, n := range names {
			bits |= systemAttributeBits[n]
		}
	}
	return bits
}

// attributeFilter is ReceiveMessage's MessageAttributeNames: All, .* or *
// for every attribute, "prefix.*" for names starting with prefix, or exact
// names.
type attributeFilter struct {
	all      bool
	names    []string
	prefixes []string
}

func newAttributeFilter(names []string) attributeFilter {
	var f attributeFilter
	for _, n := range names {
		switch {
		case n == "All" || n == ".*" || n == "*":
			return attributeFilter{all: true}
		case strings.HasSuffix(n, ".*"):
			f.prefixes = append(f.prefixes, strings.TrimSuffix(n, ".*"))
		default:
			f.names = append(f.names, n)
		}
	}
	return f
}

func (f attributeFilter) none() bool { return !f.all && len(f.names) == 0 && len(f.prefixes) == 0 }

func (f attributeFilter) match(name string) bool {
	if f.all {
		return true
	}
	for _, n := range f.names {
		if n == name {
			return true
		}
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// renderMessage shapes a received message with the requested system
// attributes and the message attributes the filter lets through; the
// attribute digest covers exactly those returned.
func renderMessage(m *engine.Message, sys uint16, filter attributeFilter) Message {
	out := Message{
		MessageId:     m.MessageID,
		ReceiptHandle: m.ReceiptHandle,
		MD5OfBody:     m.MD5OfBody,
		Body:          m.Body,
	}
	if sys != 0 {
		attrs := make(map[string]string, 4)
		if sys&sysSenderID != 0 {
			attrs["SenderId"] = m.SenderID
		}
		if sys&sysSentTimestamp != 0 {
			attrs["SentTimestamp"] = strconv.FormatInt(m.SentAt.UnixMilli(), 10)
		}
		if sys&sysApproximateReceiveCount != 0 {
			attrs["ApproximateReceiveCount"] = strconv.Itoa(m.ReceiveCount)
		}
		if sys&sysApproximateFirstReceiveTimestamp != 0 {
			attrs["ApproximateFirstReceiveTimestamp"] = strconv.FormatInt(m.FirstReceiveAt.UnixMilli(), 10)
		}
		if sys&sysMessageGroupID != 0 && m.MessageGroupID != "" {
			attrs["MessageGroupId"] = m.MessageGroupID
		}
		if sys&sysSequenceNumber != 0 && m.SequenceNumber != "" {
			attrs["SequenceNumber"] = m.SequenceNumber
		}
		if sys&sysMessageDeduplicationID != 0 && m.DeduplicationID != "" {
			attrs["MessageDeduplicationId"] = m.DeduplicationID
		}
		if sys&sysAWSTraceHeader != 0 && m.TraceHeader != "" {
			attrs[sysAttrTraceHeader] = m.TraceHeader
		}
		if sys&sysDeadLetterQueueSourceArn != 0 && m.DeadLetterSourceARN != "" {
			attrs["DeadLetterQueueSourceArn"] = m.DeadLetterSourceARN
		}
		if len(attrs) > 0 {
			out.Attributes = attrs
		}
	}
	if len(m.Attributes) == 0 || filter.none() {
		return out
	}
	kept := m.Attributes
	if !filter.all {
		kept = make([]engine.MessageAttribute, 0, len(m.Attributes))
		for _, a := range m.Attributes {
			if filter.match(a.Name) {
				kept = append(kept, a)
			}
		}
		if len(kept) == 0 {
			return out
		}
	}
	out.MessageAttributes = make(map[string]MessageAttributeValue, len(kept))
	for _, a := range kept {
		out.MessageAttributes[a.Name] = MessageAttributeValue{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	if len(kept) == len(m.Attributes) && m.MD5OfAttrs != "" {
		out.MD5OfMessageAttributes = m.MD5OfAttrs
	} else {
		out.MD5OfMessageAttributes = digest.MD5OfAttributes(kept)
	}
	return out
}
