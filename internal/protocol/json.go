package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

const jsonContentType = "application/x-amz-json-1.0"

// decodeJSON fills in (a pointer to the input struct) from body. An empty
// body is {}; unknown members are ignored.
func decodeJSON(body []byte, in any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkJSONText(body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, in); err != nil {
		return jsonDecodeError(err)
	}
	return nil
}

// decodeJSONDocument decodes body into v along c by way of a generic
// document: the slow path for types with timestamps or doubles, which
// encoding/json cannot read from the AWS JSON wire. It decides every body
// the plan decoder gives up on (see decodeJSONInput).
func decodeJSONDocument(c *codec, body []byte, v reflect.Value) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkJSONText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return ErrSerialization.WithMessage("The request body is not valid JSON (at byte %d).", len(body))
		}
		return jsonDecodeError(err)
	}
	if dec.More() {
		return ErrSerialization.WithMessage("The request body has more than one JSON value.")
	}
	return assignJSON(c, doc, v)
}

// checkJSONText refuses the two things encoding/json would otherwise turn
// into U+FFFD without a word, so that a decoded string is always exactly
// the string the client sent (else an MD5 would be of one text and the
// queue would hold another):
//
//   - Bytes that are not UTF-8. RFC 8259 (section 8.1) requires JSON text
//     to be UTF-8, so such a body is not JSON at all: SerializationException,
//     as AWS's JSON front end (Jackson) fails on "Invalid UTF-8 start byte".
//     The SDKs cannot send it; a hand-made request can.
//   - A \u escape of a lone surrogate (\ud800 not followed by a low
//     surrogate, or a low one alone). That is valid JSON syntax, but it
//     denotes no Unicode character, and a Go string can hold it only as
//     ill-formed UTF-8. It is a loneSurrogateError, which the service
//     answers (SQS: InvalidMessageContents, the answer its character rules
//     #x20-#xD7FF | #xE000-#xFFFD give a surrogate, as on the query wire).
//
// Both are refused wherever they are in the body, in a member Ferry reads
// or not. A surrogate pair (\ud83d\ude00) is one character and decodes.
func checkJSONText(body []byte) error {
	if !utf8.Valid(body) {
		return ErrSerialization.WithMessage("The request body is not valid UTF-8 (at byte %d).", invalidUTF8At(body))
	}
	if at := loneSurrogateAt(body); at >= 0 {
		return &loneSurrogateError{ErrSerialization.WithMessage(
			"The request body escapes a lone surrogate, which is not a Unicode character (at byte %d).", at)}
	}
	return nil
}

// loneSurrogateError is checkJSONText's answer to a lone surrogate escape;
// the handler replaces it with the service's InvalidCharacters error.
type loneSurrogateError struct{ err *Error }

func (e *loneSurrogateError) Error() string { return e.err.Error() }
func (e *loneSurrogateError) Unwrap() error { return e.err }

// invalidUTF8At is the offset of the first byte of b that does not start a
// valid UTF-8 sequence (overlong forms, surrogates and truncated sequences
// included), or len(b).
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && w == 1 {
			return i
		}
		i += w
	}
	return len(b)
}

// loneSurrogateAt is the offset of the first \u escape in a string of body
// that is a surrogate without its other half, or -1. It reads strings as
// JSON does; on a body that is not JSON its answer only has to be safe.
func loneSurrogateAt(body []byte) int {
	in := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in && i+1 < len(body):
			if body[i+1] != 'u' {
				i++ // a short escape, \" and \\ included
				continue
			}
			r, ok := hex4(body, i+2)
			if !ok || !utf16.IsSurrogate(r) {
				i++ // the 'u'; the hex digits are plain bytes
				continue
			}
			if r >= 0xDC00 { // a low surrogate first
				return i
			}
			if i+12 > len(body) || body[i+6] != '\\' || body[i+7] != 'u' {
				return i
			}
			if lo, ok := hex4(body, i+8); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 11
		}
	}
	return -1
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, h := range b[i : i+4] {
		switch {
		case '0' <= h && h <= '9':
			r = r<<4 | rune(h-'0')
		case 'a' <= h && h <= 'f':
			r = r<<4 | rune(h-'a'+10)
		case 'A' <= h && h <= 'F':
			r = r<<4 | rune(h-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// jsonDecodeError words a decoding failure as AWS's JSON services do
// (their SerializationException messages name the JSON token kind and the
// model type).
func jsonDecodeError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		var got string
		switch v := te.Value; {
		case v == "object":
			return ErrSerialization.WithMessage("Start of structure or map found where not expected.")
		case v == "array":
			return ErrSerialization.WithMessage("Start of list found where not expected.")
		case v == "string":
			got = "STRING_VALUE"
		case v == "bool":
			got = "BOOLEAN_VALUE"
		case strings.HasPrefix(v, "number"):
			got = "NUMBER_VALUE"
		default:
			got = "VALUE"
		}
		return ErrSerialization.WithMessage("%s can not be converted to %s", got, modelTypeName(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return ErrSerialization.WithMessage("The request body is not valid JSON (at byte %d).", se.Offset)
	}
	return ErrSerialization.WithMessage("The request body does not match the operation's input.")
}

// modelTypeName names a Go type as the AWS model would, with its article.
func modelTypeName(t reflect.Type) string {
	if t == nil {
		return "the expected type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a String"
	case reflect.Int32, reflect.Int, reflect.Int16, reflect.Int8:
		return "an Integer"
	case reflect.Int64:
		return "a Long"
	case reflect.Bool:
		return "a Boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a Blob"
		}
		return "a List"
	case reflect.Map:
		return "a Map"
	case reflect.Struct:
		return "a Structure"
	}
	return "the expected type"
}

// encodeJSON writes an output value; a nil output is {}.
func encodeJSON(b *bytes.Buffer, out any) error {
	if out == nil {
		b.WriteString("{}")
		return nil
	}
	if v := reflect.ValueOf(out); v.Kind() == reflect.Pointer && v.IsNil() {
		b.WriteString("{}")
		return nil
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// jsonError is the body of a JSON 1.0 error.
type jsonError struct {
	Type    string `json:"__type"`
	Message string `json:"message,omitempty"`
}

func encodeJSONError(b *bytes.Buffer, svc *Service, e *Error) {
	ns := ""
	if svc != nil {
		ns = svc.ShapeNamespace
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	// A struct of two strings always encodes.
	_ = enc.Encode(jsonError{Type: e.jsonType(ns), Message: e.Message})
}

// jsonTokenName names a decoded JSON value as AWS's messages do.
func jsonTokenName(v any) string {
	switch v.(type) {
	case string:
		return "STRING_VALUE"
	case json.Number:
		return "NUMBER_VALUE"
	case bool:
		return "BOOLEAN_VALUE"
	}
	return "VALUE"
}

func jsonMismatch(doc any, c *codec) *Error {
	switch doc.(type) {
	case map[string]any:
		return ErrSerialization.WithMessage("Start of structure or map found where not expected.")
	case []any:
		return ErrSerialization.WithMessage("Start of list found where not expected.")
	}
	return ErrSerialization.WithMessage("%s can not be converted to %s", jsonTokenName(doc), cborModelType(c))
}

// assignJSON stores a decoded JSON document in v along c. null leaves a
// member unset; unknown members are ignored; member names match exactly,
// else without regard to case, as encoding/json matches them.
func assignJSON(c *codec, doc any, v reflect.Value) error {
	if doc == nil {
		return nil
	}
	switch c.kind {
	case kPtr:
		p := reflect.New(c.elem.typ)
		if err := assignJSON(c.elem, doc, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	case kString:
		s, ok := doc.(string)
		if !ok {
			return jsonMismatch(doc, c)
		}
		v.SetString(s)
	case kBool:
		b, ok := doc.(bool)
		if !ok {
			return jsonMismatch(doc, c)
		}
		v.SetBool(b)
	case kInt:
		n, ok := doc.(json.Number)
		if !ok {
			return jsonMismatch(doc, c)
		}
		i, err := strconv.ParseInt(string(n), 10, c.bits)
		if err != nil {
			return jsonMismatch(doc, c)
		}
		v.SetInt(i)
	case kFloat:
		f, ok := jsonDouble(doc)
		if !ok {
			return jsonMismatch(doc, c)
		}
		v.SetFloat(f)
	case kTime:
		var t time.Time
		var ok bool
		switch d := doc.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(d), 64)
			if err != nil {
				return jsonMismatch(doc, c)
			}
			if t, ok = fromEpochSeconds(f); !ok {
				return ErrSerialization.WithMessage("NUMBER_VALUE %s is not a valid timestamp", d)
			}
		case string:
			// Hand-written clients send ISO 8601; the SDKs send numbers.
			if t, ok = parseQueryTime(d); !ok {
				return jsonMismatch(doc, c)
			}
		default:
			return jsonMismatch(doc, c)
		}
		v.Set(reflect.ValueOf(t))
	case kBytes:
		s, ok := doc.(string)
		if !ok {
			return jsonMismatch(doc, c)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return ErrSerialization.WithMessage("STRING_VALUE can not be converted to a Blob: it is not valid base64")
		}
		v.Set(reflect.ValueOf(b).Convert(c.typ))
	case kStruct:
		m, ok := doc.(map[string]any)
		if !ok {
			return jsonMismatch(doc, c)
		}
		for i := range c.fields {
			f := &c.fields[i]
			if f.jname == "" {
				continue
			}
			val, ok := m[f.jname]
			if !ok {
				for k, kv := range m {
					if strings.EqualFold(k, f.jname) {
						val, ok = kv, true
						break
					}
				}
			}
			if ok {
				if err := assignJSON(f.c, val, v.Field(f.index)); err != nil {
					return err
				}
			}
		}
	case kList:
		l, ok := doc.([]any)
		if !ok {
			return jsonMismatch(doc, c)
		}
		s := reflect.MakeSlice(c.typ, len(l), len(l))
		for i, e := range l {
			if err := assignJSON(c.elem, e, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case kMap:
		m, ok := doc.(map[string]any)
		if !ok {
			return jsonMismatch(doc, c)
		}
		out := reflect.MakeMapWithSize(c.typ, len(m))
		for k, e := range m {
			val := reflect.New(c.elem.typ).Elem()
			if err := assignJSON(c.elem, e, val); err != nil {
				return err
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(c.typ.Key()), val)
		}
		v.Set(out)
	}
	return nil
}

// jsonDouble reads a double: a number, or one of AWS JSON's strings for
// the non-finite values.
func jsonDouble(doc any) (float64, bool) {
	switch d := doc.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(d), 64)
		return f, err == nil
	case string:
		return nonFiniteDouble(d)
	}
	return 0, false
}
