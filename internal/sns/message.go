package sns

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
	"github.com/ferrymq/ferry/internal/xmlchar"
)

// MessageAttribute is a message attribute as published. It is the filter
// policy's own type, so that fan-out hands a message's attributes to every
// subscription's policy as they are.
type MessageAttribute = filterpolicy.Attribute

// Message limits (sns.md §5).
const (
	maxMessageBytes  = 262_144 // body and attributes together
	maxSubjectChars  = 100     // the longest Subject AWS takes
	maxAttrNameBytes = 256
	maxAttrTypeBytes = 256
	maxPunctIDChars  = 128
	maxBatchEntries  = 10
	maxBatchEntryID  = 80
	structureJSON    = "json"
)

// message is a validated published message, ready for fan-out: what
// deliveries carry, and what fan-out needs besides.
type message struct {
	delivery.Message
	// attrList is Attributes sorted by name.
	attrList []engine.MessageAttribute
	groupID  string
	dedupID  string // FIFO: explicit or content-based
	size     int

	// raw is the SQS message of every raw SQS copy, rawRefused SQS's
	// refusal of it (rawSQS).
	rawOnce    sync.Once
	raw        engine.NewMessage
	rawRefused error
}

// publishRequest is what Publish and a PublishBatch entry share.
type publishRequest struct {
	message   string
	subject   *string
	structure string
	attrs     map[string]messageAttributeValue
	dedupID   *string
	groupID   *string
	// batchPos is the entry's 1-based position in a batch; 0 for Publish.
	batchPos int
}

// checkSubject: present means non-empty, at most 100 characters, one line
// of printable text starting with a letter, digit or punctuation. The API
// reference says "less than 100", but AWS takes exactly 100 (and AWS
// Config publishes such subjects); 101 is refused.
func checkSubject(subject *string) error {
	if subject == nil {
		return nil
	}
	s := *subject
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxSubjectChars {
		return invalidParameter("Subject")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7F || r == '\u2028' || r == '\u2029' {
			return invalidParameter("Subject")
		}
	}
	if first, _ := utf8.DecodeRuneInString(s); first == ' ' {
		return invalidParameter("Subject")
	}
	return nil
}

// isPunctID: 1–128 characters, alphanumeric or punctuation.
func isPunctID(s string) bool {
	if s == "" || len(s) > maxPunctIDChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

var numberPattern = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// attrPath is where the framework says a message attribute member is.
func attrPath(pos int, name, member string) string {
	if pos > 0 {
		return fmt.Sprintf("publishBatchRequestEntries.%d.member.messageAttributes.%s.member.%s", pos, name, member)
	}
	return fmt.Sprintf("messageAttributes.%s.member.%s", name, member)
}

// checkAttributeName applies SNS's naming rules.
func checkAttributeName(name string) error {
	if len(name) > maxAttrNameBytes {
		return parameterValue("Length of message attribute name must be less than 256 bytes.")
	}
	if name == "" {
		return parameterValue("The message attribute name must not be empty.")
	}
	if name[0] == '.' {
		return parameterValue("Invalid message attribute name starting with character '.' was found.")
	}
	if name[len(name)-1] == '.' {
		return parameterValue("Invalid message attribute name ending with character '.' was found.")
	}
	prev := rune(0)
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		if !ok {
			return parameterValue("Invalid non-alphanumeric character '#x%X' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots.", r)
		}
		if r == '.' && prev == '.' {
			return parameterValue("Message attribute name can not have successive '.' character.")
		}
		prev = r
	}
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
		return parameterValue("The message attribute name '%s' is reserved: names starting with 'AWS.' or 'Amazon.' are for internal use.", name)
	}
	return nil
}

// checkAttributes validates message attributes in name order and returns
// them with the bytes they count toward the message size.
func checkAttributes(in map[string]messageAttributeValue, pos int) (map[string]MessageAttribute, []engine.MessageAttribute, int, error) {
	if len(in) == 0 {
		return nil, nil, 0, nil
	}
	attrs := make(map[string]MessageAttribute, len(in))
	list := make([]engine.MessageAttribute, 0, len(in))
	size := 0
	// A publish carries few attributes: their names are sorted on the
	// stack.
	var buf [10]string
	names := buf[:0]
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := in[name]
		if err := checkAttributeName(name); err != nil {
			return nil, nil, 0, err
		}
		if v.DataType == "" {
			return nil, nil, 0, notNull(attrPath(pos, name, "dataType"))
		}
		if len(v.DataType) > maxAttrTypeBytes {
			return nil, nil, 0, parameterValue("Length of message attribute type must be less than 256 bytes.")
		}
		base, custom, hasCustom := strings.Cut(v.DataType, ".")
		if base != "String" && base != "Number" && base != "Binary" || hasCustom && custom == "" {
			return nil, nil, 0, parameterValue("The message attribute '%s' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.", name)
		}
		str := ""
		if v.StringValue != nil {
			str = *v.StringValue
		}
		a := MessageAttribute{DataType: v.DataType}
		if base == "Binary" {
			if len(v.BinaryValue) == 0 {
				if str != "" {
					return nil, nil, 0, parameterValue("The message attribute '%s' with type '%s' must use field 'Binary'.", name, v.DataType)
				}
				return nil, nil, 0, parameterValue("The message attribute '%s' must contain non-empty message attribute value for message attribute type '%s'.", name, v.DataType)
			}
			a.BinaryValue = v.BinaryValue
		} else {
			if str == "" {
				if len(v.BinaryValue) > 0 {
					return nil, nil, 0, parameterValue("The message attribute '%s' with type '%s' must use field 'String'.", name, v.DataType)
				}
				return nil, nil, 0, parameterValue("The message attribute '%s' must contain non-empty message attribute value for message attribute type '%s'.", name, v.DataType)
			}
			if !validAttributeText(str) {
				return nil, nil, 0, parameterValue("Invalid attribute value was passed in for message attribute %s.", name)
			}
			switch {
			case base == "Number" && !numberPattern.MatchString(strings.TrimSpace(str)):
				return nil, nil, 0, parameterValue("Could not cast message attribute '%s' value to number.", name)
			case v.DataType == "String.Array" && !validStringArray(str):
				return nil, nil, 0, parameterValue("The message attribute '%s' with type 'String.Array' must be a JSON array of strings, numbers, true, false or null.", name)
			}
			a.StringValue = str
		}
		attrs[name] = a
		list = append(list, engine.MessageAttribute{Name: name, DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue})
		size += len(name) + len(v.DataType) + len(str) + len(v.BinaryValue)
	}
	return attrs, list, size, nil
}

// validAttributeText: message text without characters outside the Basic
// Multilingual Plane, which SNS refuses in attribute values.
func validAttributeText(s string) bool {
	if !xmlchar.Valid(s) {
		return false
	}
	for _, r := range s {
		if r > 0xFFFF {
			return false
		}
	}
	return true
}

// validStringArray: a JSON array of scalars.
func validStringArray(s string) bool {
	var vs []any
	if json.Unmarshal([]byte(s), &vs) != nil || vs == nil {
		return false
	}
	for _, v := range vs {
		switch v.(type) {
		case nil, string, float64, bool:
		default:
			return false
		}
	}
	return true
}

// parseStructure reads a MessageStructure=json body: an object whose
// string members are the messages per protocol, "default" required.
func parseStructure(body string) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		var anyv any
		if json.Unmarshal([]byte(body), &anyv) == nil {
			return nil, invalidParameter("Message Structure - No default entry in JSON message body")
		}
		return nil, invalidParameter("Message Structure - JSON message body failed to parse")
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		}
	}
	if _, ok := out[delivery.StructureDefault]; !ok {
		return nil, invalidParameter("Message Structure - No default entry in JSON message body")
	}
	return out, nil
}

// buildMessage validates what does not depend on the topic, in AWS's
// order: subject, empty message, attributes, size, structure.
func (s *Service) buildMessage(r publishRequest) (*message, error) {
	if err := checkSubject(r.subject); err != nil {
		return nil, err
	}
	if r.message == "" {
		return nil, invalidParameter("Empty message")
	}
	attrs, list, size, err := checkAttributes(r.attrs, r.batchPos)
	if err != nil {
		return nil, err
	}
	size += len(r.message)
	if size > maxMessageBytes && r.batchPos == 0 {
		return nil, invalidParameter("Message too long")
	}
	if !xmlchar.Valid(r.message) {
		return nil, invalidParameter("Message")
	}
	m := &message{Message: delivery.Message{Body: r.message, Attributes: attrs}, attrList: list, size: size}
	if r.subject != nil {
		m.Subject = *r.subject
	}
	switch r.structure {
	case "":
	case structureJSON:
		if m.PerProtocol, err = parseStructure(r.message); err != nil {
			return nil, err
		}
	default:
		return nil, invalidParameter("MessageStructure")
	}
	if r.groupID != nil && *r.groupID != "" {
		if !isPunctID(*r.groupID) {
			return nil, invalidParameter("MessageGroupId Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
		}
		m.groupID = *r.groupID
	}
	return m, nil
}

// applyTopic applies the rules that depend on the topic: FIFO topics need
// a group and a deduplication id (explicit or content-based); standard
// topics refuse a deduplication id.
func applyTopic(m *message, t *topic, r publishRequest) error {
	hasDedup := r.dedupID != nil && *r.dedupID != ""
	if !t.FIFO {
		if hasDedup {
			return invalidParameter("MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type")
		}
		return nil
	}
	if m.groupID == "" {
		return invalidParameter("The MessageGroupId parameter is required for FIFO topics")
	}
	switch {
	case hasDedup:
		if !isPunctID(*r.dedupID) {
			return invalidParameter("MessageDeduplicationId Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
		}
		m.dedupID = *r.dedupID
	case t.contentBasedDedup():
		sum := sha256.Sum256([]byte(m.Body))
		m.dedupID = hex.EncodeToString(sum[:])
	default:
		return invalidParameter("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	}
	return nil
}
