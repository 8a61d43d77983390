package protocol

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

const xmlHeader = `<?xml version="1.0"?>`

// encodeXMLResponse writes a query protocol success body. v is the output
// struct, or invalid when the action returned no output value.
func encodeXMLResponse(b *bytes.Buffer, svc *Service, action string, c *codec, v reflect.Value, requestID string) {
	b.WriteString(xmlHeader)
	b.WriteString("<")
	b.WriteString(action)
	b.WriteString(`Response xmlns="`)
	escapeText(b, svc.XMLNamespace)
	b.WriteString(`">`)
	switch {
	case len(c.fields) > 0:
		b.WriteString("<")
		b.WriteString(action)
		b.WriteString("Result>")
		if v.IsValid() {
			writeXMLFields(b, c, v)
		}
		b.WriteString("</")
		b.WriteString(action)
		b.WriteString("Result>")
	case svc.EmptyResult:
		b.WriteString("<")
		b.WriteString(action)
		b.WriteString("Result/>")
	}
	b.WriteString("<ResponseMetadata><RequestId>")
	escapeText(b, requestID)
	b.WriteString("</RequestId></ResponseMetadata></")
	b.WriteString(action)
	b.WriteString("Response>")
}

// encodeXMLError writes a query protocol error body.
func encodeXMLError(b *bytes.Buffer, svc *Service, e *Error, requestID string) {
	b.WriteString(xmlHeader)
	b.WriteString(`<ErrorResponse xmlns="`)
	if svc != nil {
		escapeText(b, svc.XMLNamespace)
	}
	b.WriteString(`"><Error><Type>`)
	b.WriteString(e.Fault())
	b.WriteString("</Type><Code>")
	escapeText(b, e.queryCode())
	b.WriteString("</Code><Message>")
	msg := e.Message
	if e.QueryMessage != "" {
		msg = e.QueryMessage
	}
	escapeText(b, msg)
	b.WriteString("</Message>")
	if svc == nil || !svc.OmitErrorDetail {
		b.WriteString("<Detail/>")
	}
	b.WriteString("</Error><RequestId>")
	escapeText(b, requestID)
	b.WriteString("</RequestId></ErrorResponse>")
}

// writeXMLFields writes a struct's members. Absent optional members (nil
// pointers, empty strings, nil or empty flat lists and maps) are left out;
// numbers and booleans that are not pointers are always written. A wrapped
// list or map that is empty but not nil is written as an empty element, so
// that outputs which always carry a list (SNS ListTopics) can say so.
func writeXMLFields(b *bytes.Buffer, c *codec, v reflect.Value) {
	for i := range c.fields {
		f := &c.fields[i]
		fv := v.Field(f.index)
		switch f.c.kind {
		case kString, kBytes:
			if fv.Len() > 0 {
				writeXMLValue(b, f.c, f.name, fv)
			}
		case kList:
			writeXMLList(b, f, fv)
		case kMap:
			writeXMLMap(b, f, fv)
		default:
			writeXMLValue(b, f.c, f.name, fv)
		}
	}
}

// writeXMLValue writes <name>v</name> for a scalar, pointer or struct; a
// nil pointer writes nothing.
func writeXMLValue(b *bytes.Buffer, c *codec, name string, v reflect.Value) {
	if c.kind == kPtr {
		if v.IsNil() {
			return
		}
		c, v = c.elem, v.Elem()
	}
	b.WriteString("<")
	b.WriteString(name)
	b.WriteString(">")
	switch c.kind {
	case kString:
		escapeText(b, v.String())
	case kInt:
		b.Write(strconv.AppendInt(b.AvailableBuffer(), v.Int(), 10))
	case kBool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case kFloat:
		b.Write(appendJavaDouble(b.AvailableBuffer(), v.Float(), c.bits))
	case kTime:
		b.Write(appendXMLTime(b.AvailableBuffer(), timeOf(v)))
	case kBytes:
		raw := v.Bytes()
		enc := base64.StdEncoding
		buf := b.AvailableBuffer()
		if n := enc.EncodedLen(len(raw)); cap(buf) < n {
			buf = make([]byte, 0, n)
		}
		b.Write(enc.AppendEncode(buf, raw))
	case kStruct:
		writeXMLFields(b, c, v)
	}
	b.WriteString("</")
	b.WriteString(name)
	b.WriteString(">")
}

func writeXMLList(b *bytes.Buffer, f *field, v reflect.Value) {
	if v.IsNil() || (f.flat && v.Len() == 0) {
		return
	}
	name := f.name
	if f.wrapped {
		if v.Len() == 0 {
			openClose(b, f.name)
			return
		}
		open(b, f.name)
		name = "member"
	}
	for i := range v.Len() {
		writeXMLValue(b, f.c.elem, name, v.Index(i))
	}
	if f.wrapped {
		closeTag(b, f.name)
	}
}

func writeXMLMap(b *bytes.Buffer, f *field, v reflect.Value) {
	if v.IsNil() || (f.flat && v.Len() == 0) {
		return
	}
	if f.wrapped {
		if v.Len() == 0 {
			openClose(b, f.name)
			return
		}
		open(b, f.name)
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
	entry := f.name
	if f.wrapped {
		entry = "entry"
	}
	for _, k := range keys {
		open(b, entry)
		open(b, f.key)
		escapeText(b, k.String())
		closeTag(b, f.key)
		writeXMLValue(b, f.c.elem, f.value, v.MapIndex(k))
		closeTag(b, entry)
	}
	if f.wrapped {
		closeTag(b, f.name)
	}
}

func open(b *bytes.Buffer, name string) {
	b.WriteString("<")
	b.WriteString(name)
	b.WriteString(">")
}

func closeTag(b *bytes.Buffer, name string) {
	b.WriteString("</")
	b.WriteString(name)
	b.WriteString(">")
}

func openClose(b *bytes.Buffer, name string) {
	b.WriteString("<")
	b.WriteString(name)
	b.WriteString("/>")
}

// escapeText writes s as XML character data the way SQS does: besides
// & < >, it escapes " as &quot; and CR as &#xD; (so that a CR survives XML
// line-end normalisation); ' is left alone. Characters XML cannot carry
// (most C0 controls, U+FFFE/U+FFFF, invalid UTF-8) become U+FFFD, so the
// document always parses.
func escapeText(b *bytes.Buffer, s string) {
	last := 0
	for i := 0; i < len(s); {
		if i = plainXMLWords(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if xmlPlain[c] {
			i++
			continue
		}
		width := 1
		var esc string
		if c < utf8.RuneSelf {
			switch c {
			case '&':
				esc = "&amp;"
			case '<':
				esc = "&lt;"
			case '>':
				esc = "&gt;"
			case '"':
				esc = "&quot;"
			case '\r':
				esc = "&#xD;"
			case '\t', '\n':
			default:
				if c < 0x20 {
					esc = "\uFFFD"
				}
			}
		} else {
			r, w := utf8.DecodeRuneInString(s[i:])
			width = w
			if (r == utf8.RuneError && w == 1) || r == 0xFFFE || r == 0xFFFF {
				esc = "\uFFFD"
			}
		}
		if esc != "" {
			b.WriteString(s[last:i])
			b.WriteString(esc)
			last = i + width
		}
		i += width
	}
	b.WriteString(s[last:])
}

// xmlPlain marks the bytes escapeText copies as they are: printable ASCII
// but for & < > ", and tab and newline.
var xmlPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '&' && c != '<' && c != '>' && c != '"'
	}
	t['\t'], t['\n'] = true, true
	return t
}()
