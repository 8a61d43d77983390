package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AWS JSON sends timestamps as epoch seconds and non-finite doubles as the
// strings "NaN", "Infinity" and "-Infinity", which encoding/json cannot do
// for time.Time and float64. Types with such members (CloudWatch's) are
// read and written along their plans here; all others keep encoding/json.

// usesPlanJSON reports whether c (a root plan) reaches a timestamp or a
// double, marking it so that the walk happens once per type.
func usesPlanJSON(c *codec) bool {
	c.planJSONOnce.Do(func() {
		seen := map[*codec]bool{}
		var walk func(*codec) bool
		walk = func(n *codec) bool {
			if n == nil || seen[n] {
				return false
			}
			seen[n] = true
			if n.kind == kTime || n.kind == kFloat {
				return true
			}
			if walk(n.elem) {
				return true
			}
			for i := range n.fields {
				if walk(n.fields[i].c) {
					return true
				}
			}
			return false
		}
		c.planJSON = walk(c)
	})
	return c.planJSON
}

// decodeJSONInput decodes a JSON request body into in (a pointer to a
// value of type t).
func (h *Handler) decodeJSONInput(t reflect.Type, body []byte, in any) error {
	c, err := h.plans.plan(t)
	if err != nil {
		return err
	}
	if !usesPlanJSON(c) {
		return decodeJSONPlan(&h.jplans, body, in)
	}
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
	return assignJSON(c, doc, reflect.ValueOf(in).Elem())
}

// encodeJSONOutput writes an action's output as a JSON response body.
func (h *Handler) encodeJSONOutput(b *bytes.Buffer, a Action, out any) error {
	t, v, err := outputValue(a, out)
	if err != nil {
		return err
	}
	c, err := h.plans.plan(t)
	if err != nil {
		return err
	}
	if !usesPlanJSON(c) {
		return encodeJSONPlan(&h.jplans, b, out)
	}
	if !v.IsValid() {
		b.WriteString("{}")
		return nil
	}
	b.Write(appendJSONValue(b.AvailableBuffer(), c, v))
	return nil
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
		switch d {
		case "NaN":
			return math.NaN(), true
		case "Infinity":
			return math.Inf(1), true
		case "-Infinity":
			return math.Inf(-1), true
		}
	}
	return 0, false
}

// appendJSONValue writes v along c. Members are left out as on the CBOR
// wire (see field.present).
func appendJSONValue(b []byte, c *codec, v reflect.Value) []byte {
	switch c.kind {
	case kPtr:
		if v.IsNil() {
			return append(b, "null"...)
		}
		return appendJSONValue(b, c.elem, v.Elem())
	case kString:
		return appendJSONString(b, v.String())
	case kBool:
		return strconv.AppendBool(b, v.Bool())
	case kInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case kFloat:
		return appendJSONDouble(b, v.Float(), c.bits)
	case kTime:
		return strconv.AppendFloat(b, epochSeconds(timeOf(v)), 'f', -1, 64)
	case kBytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"')
	case kStruct:
		b = append(b, '{')
		first := true
		for i := range c.fields {
			f := &c.fields[i]
			fv := v.Field(f.index)
			if f.jname == "" || !f.present(fv) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, f.jname)
			b = append(b, ':')
			b = appendJSONValue(b, f.c, fv)
		}
		return append(b, '}')
	case kList:
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONValue(b, c.elem, v.Index(i))
		}
		return append(b, ']')
	case kMap:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k.String())
			b = append(b, ':')
			b = appendJSONValue(b, c.elem, v.MapIndex(k))
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// appendJSONDouble writes a double as encoding/json would, and the
// non-finite values as AWS JSON's strings.
func appendJSONDouble(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
