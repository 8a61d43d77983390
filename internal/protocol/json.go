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
)

const jsonContentType = "application/x-amz-json-1.0"

// decodeJSON fills in (a pointer to the input struct) from body. An empty
// body is {}; unknown members are ignored.
func decodeJSON(body []byte, in any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
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
