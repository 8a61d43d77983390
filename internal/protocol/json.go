package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
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
