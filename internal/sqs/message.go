package sqs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/digest"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/xmlchar"
)

const (
	maxMessageAttributes = 10
	maxDelaySeconds      = 900
	// maxAttrNameBytes and maxAttrTypeBytes: AWS answers "must be shorter
	// than 256 Bytes", so 256 itself is refused.
	maxAttrNameBytes   = 255
	maxAttrTypeBytes   = 255
	maxNumberPrecision = 38

	sysAttrTraceHeader = "AWSTraceHeader"
)

// messageRequest is what SendMessage and a SendMessageBatch entry share.
type messageRequest struct {
	body     string
	delay    *int
	attrs    map[string]MessageAttributeValue
	sysAttrs map[string]MessageAttributeValue
	dedupID  *string
	groupID  *string
}

// queueRules is what validating a message needs to know of its queue.
type queueRules struct {
	maxSize int
	fifo    bool
	// contentDedup: a FIFO queue with ContentBasedDeduplication.
	contentDedup bool
}

func rulesOf(q engine.Queue) queueRules {
	return queueRules{
		maxSize:      q.Settings.MaximumSize,
		fifo:         isFifo(q.Attributes),
		contentDedup: q.Attributes[attrContentBasedDeduplication] == "true",
	}
}

// A message with more than maxMessageAttributes attributes: SendMessage's
// answer, and SQS's answer to another service as SNS's delivery status
// logs show it (neither is recorded from AWS).
const (
	tooManyAttributes            = "Number of message attributes [%d] exceeds the allowed maximum [%d]."
	tooManyAttributesFromService = "Number of message attributes [%d] exceeds the maximum allowed [%d]."
)

// FIFO send refusals, in AWS's wording.
const (
	reasonPunctID       = "%s can only include alphanumeric and punctuation characters. 1 to 128 in length."
	needDedupMessage    = "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"
	fifoDelayReason     = "The request include parameter that is not valid for this queue type." // sic
	standardDedupReason = "The request includes a parameter that is not valid for this queue type."
)

// buildMessage validates one message bound for a queue with the given rules
// and returns it ready for the engine. inBatch selects the wording AWS uses
// for a batch entry that is too long.
func buildMessage(m messageRequest, q queueRules, senderID string, inBatch bool) (engine.NewMessage, *protocol.Error) {
	var nm engine.NewMessage
	if m.body == "" {
		return nm, missingParameter("MessageBody")
	}
	if m.delay != nil && (*m.delay < 0 || *m.delay > maxDelaySeconds) {
		return nm, invalidValue(*m.delay, "DelaySeconds", "DelaySeconds must be >= 0 and <= 900.")
	}
	if m.groupID != nil && !isPunctID(*m.groupID) {
		return nm, invalidValue(*m.groupID, "MessageGroupId", fmt.Sprintf(reasonPunctID, "MessageGroupId"))
	}
	if q.fifo {
		if perr := checkFifoMessage(m, q.contentDedup); perr != nil {
			return nm, perr
		}
	} else if m.dedupID != nil {
		// Deduplication is FIFO's; a standard queue refuses the parameter.
		return nm, invalidValue(*m.dedupID, "MessageDeduplicationId", standardDedupReason)
	}
	attrs, size, err := buildAttributes(m.attrs)
	if err != nil {
		return nm, err
	}
	trace, err := buildSystemAttributes(m.sysAttrs)
	if err != nil {
		return nm, err
	}
	if !xmlchar.Valid(m.body) {
		return nm, errInvalidMessageContents
	}
	if size += len(m.body); size > q.maxSize {
		verb := "are invalid"
		if inBatch {
			verb = "cannot be validated"
		}
		return nm, invalidParameter("One or more parameters %s. Reason: Message must be shorter than %d bytes.", verb, q.maxSize)
	}
	nm = engine.NewMessage{Body: m.body, Attributes: attrs, TraceHeader: trace, SenderID: senderID}
	setDigests(&nm)
	if m.groupID != nil {
		nm.MessageGroupID = *m.groupID
	}
	switch {
	case q.fifo:
		// FIFO queues only know their own delay: a DelaySeconds of 0 got
		// this far and leaves the queue's delay in force.
		nm.DeduplicationID = deduplicationID(m)
	case m.delay != nil:
		d := time.Duration(*m.delay) * time.Second
		nm.Delay = &d
	}
	return nm, nil
}

// setDigests computes the digests of a message's body, attributes and
// system attributes, which SDKs check against what they receive.
func setDigests(nm *engine.NewMessage) {
	nm.MD5OfBody = digest.MD5Hex(nm.Body)
	nm.MD5OfAttrs = digest.MD5OfAttributes(nm.Attributes)
	nm.MD5OfSysAttrs = digest.MD5OfAttributes(traceHeaderAttrs(nm.TraceHeader))
}

// checkFifoMessage applies the FIFO rules: a group id, a valid explicit
// deduplication id unless the queue derives one from the body, and no
// delay of the message's own.
func checkFifoMessage(m messageRequest, contentDedup bool) *protocol.Error {
	if m.groupID == nil {
		return missingParameter("MessageGroupId")
	}
	if m.dedupID != nil && !isPunctID(*m.dedupID) {
		return invalidValue(*m.dedupID, "MessageDeduplicationId", fmt.Sprintf(reasonPunctID, "MessageDeduplicationId"))
	}
	if m.dedupID == nil && !contentDedup {
		return invalidParameter(needDedupMessage)
	}
	if m.delay != nil && *m.delay > 0 {
		return invalidValue(*m.delay, "DelaySeconds", fifoDelayReason)
	}
	return nil
}

// deduplicationID is a FIFO message's deduplication key: the explicit id,
// or else the lowercase hex SHA-256 of the body (attributes do not count).
func deduplicationID(m messageRequest) string {
	if m.dedupID != nil {
		return *m.dedupID
	}
	sum := sha256.Sum256([]byte(m.body))
	return hex.EncodeToString(sum[:])
}

// messageSize is what a message counts toward a batch's 1 MiB: its body and
// its attributes' names, types and values, before any validation.
func messageSize(body string, attrs map[string]MessageAttributeValue) int {
	n := len(body)
	for name, v := range attrs {
		n += len(name) + len(v.DataType) + len(v.StringValue) + len(v.BinaryValue)
	}
	return n
}

// buildAttributes validates user message attributes and returns them sorted
// by name, with the bytes they count toward the message size. Attributes
// are checked in name order so that a message breaking two rules always
// gets the same answer.
func buildAttributes(in map[string]MessageAttributeValue) ([]engine.MessageAttribute, int, *protocol.Error) {
	if len(in) == 0 {
		return nil, 0, nil
	}
	if len(in) > maxMessageAttributes {
		return nil, 0, invalidParameter(tooManyAttributes, len(in), maxMessageAttributes)
	}
	out := make([]engine.MessageAttribute, 0, len(in))
	for name, v := range in {
		out = append(out, engine.MessageAttribute{Name: name, DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue})
	}
	slices.SortFunc(out, func(a, b engine.MessageAttribute) int { return strings.Compare(a.Name, b.Name) })
	size := 0
	for i := range out {
		a := &out[i]
		if err := checkAttributeName(a.Name); err != nil {
			return nil, 0, err
		}
		if err := checkAttributeValue(a); err != nil {
			return nil, 0, err
		}
		size += len(a.Name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return out, size, nil
}

func checkAttributeName(name string) *protocol.Error {
	if len(name) > maxAttrNameBytes {
		return invalidParameter("Message (user) attribute names must be shorter than 256 Bytes")
	}
	// AWS documents A-Z, a-z, 0-9, '_', '-' and '.' alone: a letter outside
	// ASCII (an umlaut) is refused too, as SNS refuses it.
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isNameChar(c) && c != '.' {
			return invalidParameter("Message (user) attributes name can only contain upper and lower score characters, digits, periods, hyphens and underscores. ")
		}
	}
	lower := strings.ToLower(name)
	if name == "" || strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") ||
		strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
		return invalidParameter("You can't use message attribute names beginning with 'AWS.' or 'Amazon.'. " +
			"These strings are reserved for internal use. Additionally, they cannot start or end with '.'.")
	}
	if strings.Contains(name, "..") {
		return invalidParameter("Message (user) attribute name '%s' can not have successive '.' character.", name)
	}
	return nil
}

func checkAttributeValue(a *engine.MessageAttribute) *protocol.Error {
	if a.DataType == "" {
		return invalidParameter("The message attribute '%s' must contain non-empty message attribute type.", a.Name)
	}
	if len(a.DataType) > maxAttrTypeBytes {
		return invalidParameter("Message (user) attribute types must be shorter than 256 Bytes")
	}
	switch base := baseType(a.DataType); base {
	case "String", "Number":
		a.BinaryValue = nil
		if a.StringValue == "" {
			return invalidParameter("Message (user) attribute '%s' must contain a non-empty value of type '%s'.", a.Name, base)
		}
		if !xmlchar.Valid(a.StringValue) {
			return invalidParameter(invalidCharactersMessage)
		}
		if base == "Number" && !validNumber(a.StringValue) {
			return invalidParameter("Can't cast the value of message (user) attribute '%s' to a number.", a.Name)
		}
	case "Binary":
		a.StringValue = ""
		if len(a.BinaryValue) == 0 {
			return invalidParameter("Message (user) attribute '%s' must contain a non-empty value of type 'Binary'.", a.Name)
		}
	default:
		return invalidParameter("The type of message (user) attribute '%s' is invalid. "+
			"You must use only the following supported type prefixes: Binary, Number, String.", a.Name)
	}
	return nil
}

// buildSystemAttributes validates MessageSystemAttributes, where only
// AWSTraceHeader (a String) exists, and returns the trace header.
func buildSystemAttributes(in map[string]MessageAttributeValue) (string, *protocol.Error) {
	trace := ""
	for name, v := range in {
		if name != sysAttrTraceHeader {
			return "", invalidParameter("Message system attribute name '%s' is invalid.", name)
		}
		if v.DataType != "String" {
			return "", invalidParameter("Message system attribute '%s' must be of type 'String'.", name)
		}
		if v.StringValue == "" {
			return "", invalidParameter("Message system attribute '%s' must contain a non-empty value of type 'String'.", name)
		}
		if !xmlchar.Valid(v.StringValue) {
			return "", invalidParameter(invalidCharactersMessage)
		}
		trace = v.StringValue
	}
	return trace, nil
}

// validNumber reports whether s is a decimal number SQS accepts for a Number
// attribute: an optional sign, digits with an optional point, an optional
// exponent; at most 38 significant digits; magnitude within 10^-128..10^126.
func validNumber(s string) bool {
	mant, exp := s, ""
	hasExp := false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp, hasExp = s[:i], s[i+1:], true
	}
	if mant != "" && (mant[0] == '+' || mant[0] == '-') {
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return false
	}
	e := 0
	if hasExp {
		var err error
		if e, err = strconv.Atoi(exp); err != nil {
			return false
		}
	}
	all := intPart + frac
	digits := strings.TrimLeft(all, "0")
	sig := strings.TrimRight(digits, "0")
	switch {
	case sig == "":
		return true // zero
	case len(sig) > maxNumberPrecision:
		return false
	}
	// The power of ten of the leading significant digit.
	lead := len(intPart) - (len(all) - len(digits)) - 1 + e
	if lead == 126 {
		return sig == "1"
	}
	return lead >= -128 && lead < 126
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
