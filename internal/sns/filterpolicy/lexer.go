package filterpolicy

import (
	"strconv"
	"strings"
)

// ---- Reading the compact rewrite as event-ruler's parser does ----

type rtok uint8

const (
	tkNone rtok = iota
	tkStartObject
	tkEndObject
	tkStartArray
	tkEndArray
	tkFieldName
	tkString
	tkInt
	tkFloat
	tkTrue
	tkFalse
	tkNull
)

// ruleLexer steps through compact, valid JSON the way Jackson's parser
// does, so that its position (and so the reported column) is Jackson's:
// a field name token consumes the name, the colon and the start of the
// value (all of a number or literal); a string token consumes only its
// opening quote until its text is asked for.
type ruleLexer struct {
	s       string
	pos     int
	objects []bool // open containers: true for an object
	pending rtok   // the value token read along with a field name
	cur     rtok
	name    string // the current field name
	lit     string // the current number or literal
	strFrom int    // where the current string's content starts
	open    bool   // the current string's content is unread
	str     string
}

func (l *ruleLexer) col() int { return utf16Len(l.s[:l.pos]) + 1 }

func (l *ruleLexer) next() rtok {
	if l.pending != tkNone {
		t := l.pending
		l.pending = tkNone
		l.enter(t)
		l.cur = t
		return t
	}
	if l.open {
		l.finishString()
	}
	if l.pos >= len(l.s) {
		l.cur = tkNone
		return tkNone
	}
	switch l.s[l.pos] {
	case '}', ']':
		t := tkEndObject
		if l.s[l.pos] == ']' {
			t = tkEndArray
		}
		l.pos++
		l.objects = l.objects[:len(l.objects)-1]
		l.cur = t
		return t
	case ',':
		l.pos++
	}
	if n := len(l.objects); n > 0 && l.objects[n-1] {
		l.pos++ // the name's opening quote
		l.name = l.readString()
		l.pos++ // ':'
		l.pending = l.valueStart()
		l.cur = tkFieldName
		return tkFieldName
	}
	t := l.valueStart()
	l.enter(t)
	l.cur = t
	return t
}

func (l *ruleLexer) enter(t rtok) {
	switch t {
	case tkStartObject:
		l.objects = append(l.objects, true)
	case tkStartArray:
		l.objects = append(l.objects, false)
	}
}

func (l *ruleLexer) valueStart() rtok {
	c := l.s[l.pos]
	switch c {
	case '"':
		l.pos++
		l.open, l.strFrom = true, l.pos
		return tkString
	case '{':
		l.pos++
		return tkStartObject
	case '[':
		l.pos++
		return tkStartArray
	case 't':
		l.pos += 4
		l.lit = "true"
		return tkTrue
	case 'f':
		l.pos += 5
		l.lit = "false"
		return tkFalse
	case 'n':
		l.pos += 4
		l.lit = "null"
		return tkNull
	}
	start := l.pos
	t := tkInt
	for l.pos < len(l.s) && strings.IndexByte("+-0123456789.eE", l.s[l.pos]) >= 0 {
		if c := l.s[l.pos]; c == '.' || c == 'e' || c == 'E' {
			t = tkFloat
		}
		l.pos++
	}
	l.lit = l.s[start:l.pos]
	return t
}

func (l *ruleLexer) finishString() {
	l.pos = l.strFrom
	l.str = l.readString()
	l.open = false
}

// readString decodes the rest of a string and steps past its closing quote.
func (l *ruleLexer) readString() string {
	start := l.pos
	var b *strings.Builder
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		if c == '"' {
			break
		}
		if c != '\\' {
			l.pos++
			continue
		}
		if b == nil {
			b = &strings.Builder{}
		}
		b.WriteString(l.s[start:l.pos])
		l.pos++
		switch e := l.s[l.pos]; e {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'u':
			v, _ := strconv.ParseUint(l.s[l.pos+1:l.pos+5], 16, 8)
			b.WriteByte(byte(v))
			l.pos += 4
		default: // '"' and '\\'
			b.WriteByte(e)
		}
		l.pos++
		start = l.pos
	}
	s := l.s[start:l.pos]
	l.pos++ // closing quote
	if b == nil {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// text is the current token's text, reading a string's content if needed.
func (l *ruleLexer) text() string {
	switch l.cur {
	case tkString:
		if l.open {
			l.finishString()
		}
		return l.str
	case tkFieldName:
		return l.name
	case tkStartObject:
		return "{"
	case tkEndObject:
		return "}"
	case tkStartArray:
		return "["
	case tkEndArray:
		return "]"
	}
	return l.lit
}

func (l *ruleLexer) double() float64 {
	f, _ := strconv.ParseFloat(l.lit, 64)
	return f
}
