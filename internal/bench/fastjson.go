package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The fast client reads SQS's JSON answers with a scanner that walks the
// document once and keeps only the members it checks, as slices of the
// answer itself: decoding whole answers into maps or structs would cost
// the load generator more than the broker spends making them.

// errAnswer is a malformed JSON answer.
var errAnswer = errors.New("malformed JSON answer")

// maxDepth bounds the nesting the scanner follows into members it skips.
const maxDepth = 32

// scan is a position in one JSON document.
type scan struct {
	b []byte
	i int
}

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (s *scan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scan) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns its contents as they stand in the
// document, escapes included, and whether there were any.
func (s *scan) str() (raw []byte, escaped bool, err error) {
	if !s.eat('"') {
		return nil, false, errAnswer
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			if !s.escape() {
				return nil, false, errAnswer
			}
			escaped = true
		case c < 0x20:
			return nil, false, errAnswer
		default:
			s.i++
		}
	}
	return nil, false, errAnswer
}

// escape steps over the escape sequence at the scanner, reporting
// whether it is one JSON allows.
func (s *scan) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// text reads a string and returns its value, escapes decoded (AWS's
// answers seldom have any, so the slow path is seldom taken).
func (s *scan) text() ([]byte, error) {
	start := s.i
	raw, escaped, err := s.str()
	if err != nil || !escaped {
		return raw, err
	}
	var v string
	if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
		return nil, errAnswer
	}
	return []byte(v), nil
}

// object reads an object, calling member for each key with the scanner
// at its value, which member must consume (or skip).
func (s *scan) object(member func(key []byte) error) error {
	if !s.eat('{') {
		return errAnswer
	}
	if s.eat('}') {
		return nil
	}
	for {
		key, _, err := s.str()
		if err != nil {
			return err
		}
		if !s.eat(':') {
			return errAnswer
		}
		if err := member(key); err != nil {
			return err
		}
		if s.eat('}') {
			return nil
		}
		if !s.eat(',') {
			return errAnswer
		}
	}
}

// array reads an array, calling elem with the scanner at each element.
func (s *scan) array(elem func() error) error {
	if !s.eat('[') {
		return errAnswer
	}
	if s.eat(']') {
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if s.eat(']') {
			return nil
		}
		if !s.eat(',') {
			return errAnswer
		}
	}
}

// skip reads any value and ignores it.
func (s *scan) skip() error { return s.skipAt(0) }

func (s *scan) skipAt(depth int) error {
	if depth > maxDepth {
		return errAnswer
	}
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.skipAt(depth + 1) })
	case '[':
		return s.array(func() error { return s.skipAt(depth + 1) })
	case '"':
		_, _, err := s.str()
		return err
	case 0:
		return errAnswer
	}
	// A number or a literal: the bytes up to the next delimiter.
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.checkScalar(start)
		}
		s.i++
	}
	return s.checkScalar(start)
}

// checkScalar accepts the number or literal from start to the scanner.
func (s *scan) checkScalar(start int) error {
	if s.i == start || !json.Valid(s.b[start:s.i]) {
		return errAnswer
	}
	return nil
}

// end requires nothing but white space after the document.
func (s *scan) end() error {
	if s.peek() != 0 || s.i != len(s.b) {
		return errAnswer
	}
	return nil
}

// document reads b as one object with member (see object).
func document(b []byte, member func(s *scan, key []byte) error) error {
	s := &scan{b: b}
	if err := s.object(func(key []byte) error { return member(s, key) }); err != nil {
		return err
	}
	return s.end()
}

// fastMsg is one message of a ReceiveMessage answer: its body decoded, its
// MD5OfBody and its receipt handle as the answer wrote it (still a valid
// JSON string's contents, so it goes back into DeleteMessageBatch as is).
type fastMsg struct {
	body, md5, receipt []byte
}

// parseReceive reads a ReceiveMessage answer into msgs[:0].
func parseReceive(b []byte, msgs []fastMsg) ([]fastMsg, error) {
	msgs = msgs[:0]
	err := document(b, func(s *scan, key []byte) error {
		if string(key) != "Messages" {
			return s.skip()
		}
		msgs = msgs[:0] // a member given twice counts once, the last, as in encoding/json
		return s.array(func() error {
			var m fastMsg
			err := s.object(func(key []byte) error {
				var err error
				switch string(key) {
				case "Body":
					m.body, err = s.text()
				case "MD5OfBody":
					m.md5, err = s.text()
				case "ReceiptHandle":
					m.receipt, _, err = s.str()
				default:
					err = s.skip()
				}
				return err
			})
			if err != nil {
				return err
			}
			if m.body == nil || m.md5 == nil || m.receipt == nil {
				return fmt.Errorf("%w: a message lacks Body, MD5OfBody or ReceiptHandle", errAnswer)
			}
			msgs = append(msgs, m)
			return nil
		})
	})
	return msgs, err
}

// parseSend reads a SendMessage answer's MD5OfMessageBody.
func parseSend(b []byte) (md5 []byte, err error) {
	err = document(b, func(s *scan, key []byte) error {
		if string(key) != "MD5OfMessageBody" {
			return s.skip()
		}
		var err error
		md5, err = s.text()
		return err
	})
	if err == nil && md5 == nil {
		err = fmt.Errorf("%w: no MD5OfMessageBody", errAnswer)
	}
	return md5, err
}

// entryAnswer is one entry of a batch answer, Successful or Failed.
type entryAnswer struct {
	id, md5, code, message []byte
	failed                 bool
}

// parseBatch reads the Successful and Failed entries of a SendMessageBatch
// or DeleteMessageBatch answer into entries[:0].
func parseBatch(b []byte, entries []entryAnswer) ([]entryAnswer, error) {
	entries = entries[:0]
	err := document(b, func(s *scan, key []byte) error {
		failed := string(key) == "Failed"
		if !failed && string(key) != "Successful" {
			return s.skip()
		}
		return s.array(func() error {
			e := entryAnswer{failed: failed}
			err := s.object(func(key []byte) error {
				var err error
				switch string(key) {
				case "Id":
					e.id, err = s.text()
				case "MD5OfMessageBody":
					e.md5, err = s.text()
				case "Code":
					e.code, err = s.text()
				case "Message":
					e.message, err = s.text()
				default:
					err = s.skip()
				}
				return err
			})
			if err != nil {
				return err
			}
			if e.id == nil {
				return fmt.Errorf("%w: a batch entry lacks its Id", errAnswer)
			}
			entries = append(entries, e)
			return nil
		})
	})
	return entries, err
}

// apiError is an error answer of the JSON protocol.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HTTP %d: %s: %s", e.status, e.code, e.message)
}

// parseError reads the error answer b of HTTP status: its __type (without
// the shape's namespace) and message (AWS writes it lowercase; some
// brokers capitalise it).
func parseError(status int, b []byte) error {
	e := &apiError{status: status}
	err := document(b, func(s *scan, key []byte) error {
		switch string(key) {
		case "__type":
			t, err := s.text()
			if i := bytes.LastIndexByte(t, '#'); i >= 0 {
				t = t[i+1:]
			}
			e.code = string(t)
			return err
		case "message", "Message":
			m, err := s.text()
			e.message = string(m)
			return err
		}
		return s.skip()
	})
	if err != nil || e.code == "" {
		e.code, e.message = "unreadable error answer", shorten(string(b), 200)
	}
	return e
}
