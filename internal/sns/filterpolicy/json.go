package filterpolicy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/sns/snsjson"
)

// ---- JSON reading (as Jackson reads it) ----

type jkind uint8

const (
	jObject jkind = iota
	jArray
	jString
	jInt
	jFloat
	jTrue
	jFalse
	jNull
)

// jnode is a JSON value. Objects keep member order.
type jnode struct {
	kind jkind
	text string   // a string's value, a number's literal
	keys []string // an object's member names
	vals []*jnode // an object's member values, an array's elements
}

// jsonError is a Jackson parse error: its message and where it stopped.
type jsonError struct {
	msg       string
	line, col int
}

func (e *jsonError) Error() string { return e.msg + "\n at " + jsonLocation(e.line, e.col) }

// jsonLocation is Jackson's location text (the source is never echoed).
func jsonLocation(line, col int) string {
	return "[Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: " +
		strconv.Itoa(line) + ", column: " + strconv.Itoa(col) + "]"
}

const validValues = "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')"

type jsonReader struct {
	s        string
	pos      int
	line     int
	rowStart int
	dedupe   bool // a repeated key replaces the earlier value in place (a Jackson tree)
	depth    int
}

// parseJSON reads the first JSON value of s as Jackson does; what follows
// it is ignored, as ObjectMapper ignores it.
func parseJSON(s string, dedupe bool) (*jnode, *jsonError) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	r := &jsonReader{s: s, line: 1, dedupe: dedupe}
	c, ok, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	if !ok {
		// Jackson's wording for no input; not recorded from AWS.
		return nil, r.errHere("No content to map due to end-of-input")
	}
	if c == ']' || c == '}' {
		return nil, r.closeMismatch(c, "root", 1, 0)
	}
	return r.value(c, true)
}

func (r *jsonReader) colAt(pos int) int { return utf16Len(r.s[r.rowStart:pos]) + 1 }

func (r *jsonReader) errHere(msg string) *jsonError {
	return &jsonError{msg: msg, line: r.line, col: r.colAt(r.pos)}
}

func (r *jsonReader) errAt(msg string, pos int) *jsonError {
	return &jsonError{msg: msg, line: r.line, col: r.colAt(pos)}
}

// unexpected reports the character at pos, which has been consumed.
func (r *jsonReader) unexpected(c rune, pos int, comment string) *jsonError {
	return r.errAt("Unexpected character ("+charDesc(c)+"): "+comment, pos)
}

func (r *jsonReader) closeMismatch(c rune, ctx string, line, col int) *jsonError {
	want := '}'
	if c == '}' {
		want = ']'
	}
	r.pos++
	return r.errAt(fmt.Sprintf("Unexpected close marker '%c': expected '%c' (for %s starting at %s)",
		c, want, ctx, jsonLocation(line, col)), r.pos-1)
}

func (r *jsonReader) rune() (rune, int) {
	return utf8.DecodeRuneInString(r.s[r.pos:])
}

// skipSpace skips white space and returns the next character, unread;
// ok is false at the end of input.
func (r *jsonReader) skipSpace() (c rune, ok bool, err *jsonError) {
	for r.pos < len(r.s) {
		switch b := r.s[r.pos]; b {
		case ' ', '\t':
			r.pos++
		case '\n':
			r.pos++
			r.line, r.rowStart = r.line+1, r.pos
		case '\r':
			r.pos++
			if r.pos < len(r.s) && r.s[r.pos] == '\n' {
				r.pos++
			}
			r.line, r.rowStart = r.line+1, r.pos
		case '/':
			r.pos++
			return 0, false, r.unexpected('/', r.pos-1,
				"maybe a (non-standard) comment? (not recognized as one since Feature 'ALLOW_COMMENTS' not enabled for parser)")
		default:
			if b < 0x20 {
				r.pos++
				return 0, false, r.errHere("Illegal character (" + charDesc(rune(b)) +
					"): only regular white space (\\r, \\n, \\t) is allowed between tokens")
			}
			c, _ := r.rune()
			return c, true, nil
		}
	}
	return 0, false, nil
}

// value reads the value starting with c (unread).
func (r *jsonReader) value(c rune, root bool) (*jnode, *jsonError) {
	start := r.pos
	switch {
	case c == '"':
		r.pos++
		s, err := r.str(false)
		if err != nil {
			return nil, err
		}
		return &jnode{kind: jString, text: s}, nil
	case c == '{' || c == '[':
		r.pos++
		if r.depth++; r.depth > maxJSONNesting {
			return nil, r.errHere(fmt.Sprintf("Document nesting depth (%d) exceeds the maximum allowed (%d, from `StreamReadConstraints.getMaxNestingDepth()`)",
				r.depth, maxJSONNesting))
		}
		line, col := r.line, r.colAt(start)
		var (
			n   *jnode
			err *jsonError
		)
		if c == '{' {
			n, err = r.object(line, col)
		} else {
			n, err = r.array(line, col)
		}
		r.depth--
		return n, err
	case c == '}':
		r.pos++
		return nil, r.unexpected(c, start, "expected a value")
	case c == 't':
		return r.literal("true", jTrue)
	case c == 'f':
		return r.literal("false", jFalse)
	case c == 'n':
		return r.literal("null", jNull)
	case c == '-' || c >= '0' && c <= '9':
		return r.number(root)
	case c == '+':
		r.pos++
		if r.pos >= len(r.s) {
			return nil, r.errHere("Unexpected end-of-input in a Number value")
		}
		_, size := r.rune()
		r.pos += size
		return nil, r.errAt("Unexpected character ('+' (code 43)) in numeric value: JSON spec does not allow numbers to have plus signs: enable `JsonReadFeature.ALLOW_LEADING_PLUS_SIGN_FOR_NUMBERS` to allow", r.pos-size)
	case c == 'N':
		return r.nonNumeric("NaN")
	case c == 'I':
		return r.nonNumeric("Infinity")
	}
	_, size := r.rune()
	r.pos += size
	if javaIdentStart(c) {
		return nil, r.invalidToken(string(c))
	}
	return nil, r.unexpected(c, start, "expected a valid value "+validValues)
}

func (r *jsonReader) object(line, col int) (*jnode, *jsonError) {
	n := &jnode{kind: jObject}
	var index map[string]int
	c, ok, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, r.eofInContainer("Object", line, col)
	}
	if c == '}' {
		r.pos++
		return n, nil
	}
	if c == ']' {
		return nil, r.closeMismatch(c, "Object", line, col)
	}
	for {
		if c != '"' {
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting double-quote to start field name")
		}
		r.pos++
		name, err := r.str(true)
		if err != nil {
			return nil, err
		}
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Object entries")
		}
		if c != ':' {
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting a colon to separate field name and value")
		}
		r.pos++
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Object entries")
		}
		v, err := r.value(c, false)
		if err != nil {
			return nil, err
		}
		n.add(name, v, r.dedupe, &index)
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		switch {
		case !ok:
			return nil, r.eofInContainer("Object", line, col)
		case c == '}':
			r.pos++
			return n, nil
		case c == ']':
			return nil, r.closeMismatch(c, "Object", line, col)
		case c != ',':
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting comma to separate Object entries")
		}
		r.pos++
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Object entries")
		}
	}
}

// add appends a member; with dedupe a repeated name replaces the value in
// its first position.
func (n *jnode) add(name string, v *jnode, dedupe bool, index *map[string]int) {
	if dedupe {
		if *index == nil {
			*index = make(map[string]int)
		}
		if i, ok := (*index)[name]; ok {
			n.vals[i] = v
			return
		}
		(*index)[name] = len(n.keys)
	}
	n.keys = append(n.keys, name)
	n.vals = append(n.vals, v)
}

func (r *jsonReader) array(line, col int) (*jnode, *jsonError) {
	n := &jnode{kind: jArray}
	c, ok, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, r.eofInContainer("Array", line, col)
	}
	if c == ']' {
		r.pos++
		return n, nil
	}
	if c == '}' {
		return nil, r.closeMismatch(c, "Array", line, col)
	}
	for {
		v, err := r.value(c, false)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		switch {
		case !ok:
			return nil, r.eofInContainer("Array", line, col)
		case c == ']':
			r.pos++
			return n, nil
		case c == '}':
			return nil, r.closeMismatch(c, "Array", line, col)
		case c != ',':
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting comma to separate Array entries")
		}
		r.pos++
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Array entries")
		}
	}
}

func (r *jsonReader) eofInContainer(kind string, line, col int) *jsonError {
	return r.errHere("Unexpected end-of-input: expected close marker for " + kind +
		" (start marker at " + jsonLocation(line, col) + ")")
}

// literal reads true, false or null, its first letter unread.
func (r *jsonReader) literal(word string, kind jkind) (*jnode, *jsonError) {
	if err := r.matchWord(word); err != nil {
		return nil, err
	}
	return &jnode{kind: kind, text: word}, nil
}

func (r *jsonReader) nonNumeric(word string) (*jnode, *jsonError) {
	if err := r.matchWord(word); err != nil {
		return nil, err
	}
	return nil, r.errHere("Non-standard token '" + word + "': enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow")
}

func (r *jsonReader) matchWord(word string) *jsonError {
	r.pos++
	for i := 1; i < len(word); i++ {
		if r.pos >= len(r.s) || r.s[r.pos] != word[i] {
			return r.invalidToken(word[:i])
		}
		r.pos++
	}
	if r.pos < len(r.s) {
		if c, _ := r.rune(); c >= '0' && c != ']' && c != '}' && javaIdentPart(c) {
			return r.invalidToken(word)
		}
	}
	return nil
}

// invalidToken reports a bad token: what was read, extended by the
// identifier characters that follow.
func (r *jsonReader) invalidToken(read string) *jsonError {
	var b strings.Builder
	b.WriteString(read)
	n := utf16Len(read)
	for r.pos < len(r.s) {
		c, size := r.rune()
		if !javaIdentPart(c) {
			break
		}
		r.pos += size
		b.WriteRune(c)
		if n++; n >= maxErrorTokenLen {
			b.WriteString("...")
			break
		}
	}
	return r.errHere("Unrecognized token '" + b.String() + "': was expecting " + validValues)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func (r *jsonReader) number(root bool) (*jnode, *jsonError) {
	start := r.pos
	if r.s[r.pos] == '-' {
		r.pos++
		if r.pos >= len(r.s) {
			return nil, r.errHere("Unexpected end-of-input in a Number value")
		}
		if !isDigit(r.s[r.pos]) {
			c, size := r.rune()
			r.pos += size
			return nil, r.numberChar(c, r.pos-size, "expected digit (0-9) to follow minus sign, for valid numeric value")
		}
	}
	if r.s[r.pos] == '0' && r.pos+1 < len(r.s) && isDigit(r.s[r.pos+1]) {
		r.pos++
		return nil, r.errHere("Invalid numeric value: Leading zeroes not allowed")
	}
	kind := jInt
	intStart := r.pos
	for r.pos < len(r.s) && isDigit(r.s[r.pos]) {
		r.pos++
	}
	length := r.pos - intStart
	if r.pos < len(r.s) && r.s[r.pos] == '.' {
		kind = jFloat
		r.pos++
		from := r.pos
		for r.pos < len(r.s) && isDigit(r.s[r.pos]) {
			r.pos++
		}
		if r.pos == from {
			return nil, r.badNumberChar("Decimal point not followed by a digit", start)
		}
		length += r.pos - from
	}
	if r.pos < len(r.s) && (r.s[r.pos] == 'e' || r.s[r.pos] == 'E') {
		kind = jFloat
		r.pos++
		if r.pos < len(r.s) && (r.s[r.pos] == '+' || r.s[r.pos] == '-') {
			r.pos++
		}
		from := r.pos
		for r.pos < len(r.s) && isDigit(r.s[r.pos]) {
			r.pos++
		}
		if r.pos == from {
			return nil, r.badNumberChar("Exponent indicator not followed by a digit", start)
		}
		length += r.pos - from
	}
	if length > maxNumberLength {
		return nil, r.errHere(fmt.Sprintf("Number value length (%d) exceeds the maximum allowed (%d, from `StreamReadConstraints.getMaxNumberLength()`)",
			length, maxNumberLength))
	}
	if root && r.pos < len(r.s) {
		if b := r.s[r.pos]; b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			c, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "Expected space separating root-level values")
		}
	}
	return &jnode{kind: kind, text: r.s[start:r.pos]}, nil
}

func (r *jsonReader) numberChar(c rune, pos int, comment string) *jsonError {
	return r.errAt("Unexpected character ("+charDesc(c)+") in numeric value: "+comment, pos)
}

// badNumberChar reports the character after a '.' or an exponent mark.
// Jackson's fast path has not moved its position past the number's first
// character by then, so that is where it reports the error.
func (r *jsonReader) badNumberChar(comment string, start int) *jsonError {
	if r.pos >= len(r.s) {
		return r.errHere("Unexpected end-of-input in a Number value")
	}
	c, size := r.rune()
	r.pos += size
	return r.numberChar(c, start, comment)
}

// str reads a string whose opening quote has been read.
func (r *jsonReader) str(name bool) (string, *jsonError) {
	start := r.pos
	var b *strings.Builder
	for {
		if r.pos >= len(r.s) {
			if name {
				return "", r.errHere("Unexpected end-of-input in field name")
			}
			return "", r.errHere("Unexpected end-of-input: was expecting closing quote for a string value")
		}
		switch c := r.s[r.pos]; {
		case c == '"':
			r.pos++
			if b == nil {
				return r.s[start : r.pos-1], nil
			}
			b.WriteString(r.s[start : r.pos-1])
			return b.String(), nil
		case c == '\\':
			if b == nil {
				b = &strings.Builder{}
			}
			b.WriteString(r.s[start:r.pos])
			r.pos++
			if err := r.escape(b); err != nil {
				return "", err
			}
			start = r.pos
		case c < 0x20:
			r.pos++
			what := "string value"
			if name {
				what = "name"
			}
			return "", r.errAt("Illegal unquoted character ("+charDesc(rune(c))+
				"): has to be escaped using backslash to be included in "+what, r.pos-1)
		default:
			r.pos++
		}
	}
}

// escape decodes an escape sequence whose backslash has been read.
func (r *jsonReader) escape(b *strings.Builder) *jsonError {
	if r.pos >= len(r.s) {
		return r.errHere("Unexpected end-of-input in character escape sequence")
	}
	c, size := r.rune()
	r.pos += size
	switch c {
	case '"', '\\', '/':
		b.WriteRune(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		u, err := r.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(u) {
			// A pair makes one character; a lone half cannot be UTF-8.
			if u < 0xDC00 && strings.HasPrefix(r.s[r.pos:], `\u`) {
				save := r.pos
				r.pos += 2
				lo, err := r.hex4()
				if err != nil {
					return err
				}
				if d := utf16.DecodeRune(u, lo); d != unicode.ReplacementChar {
					b.WriteRune(d)
					return nil
				}
				r.pos = save
			}
			u = unicode.ReplacementChar
		}
		b.WriteRune(u)
	default:
		return r.errAt("Unrecognized character escape "+charDesc(c), r.pos-size)
	}
	return nil
}

func (r *jsonReader) hex4() (rune, *jsonError) {
	var v rune
	for range 4 {
		if r.pos >= len(r.s) {
			return 0, r.errHere("Unexpected end-of-input in character escape sequence")
		}
		c, size := r.rune()
		r.pos += size
		var d rune
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, r.unexpected(c, r.pos-size, "expected a hex-digit for character escape sequence")
		}
		v = v<<4 | d
	}
	return v, nil
}

// charDesc describes a character as Jackson does. Jackson sees UTF-16
// units, so a supplementary character shows as its high surrogate.
func charDesc(c rune) string {
	if c >= 0x10000 {
		hi, _ := utf16.EncodeRune(c)
		return fmt.Sprintf("'?' (code %d / 0x%x)", hi, hi)
	}
	if c < 0x20 || c >= 0x7F && c <= 0x9F {
		return fmt.Sprintf("(CTRL-CHAR, code %d)", c)
	}
	if c > 255 {
		return fmt.Sprintf("'%c' (code %d / 0x%x)", c, c, c)
	}
	return fmt.Sprintf("'%c' (code %d)", c, c)
}

// javaIdentStart and javaIdentPart follow Java's Character methods on a
// UTF-16 unit (so never true for a supplementary character).
func javaIdentStart(c rune) bool {
	return c < 0x10000 && (unicode.IsLetter(c) || unicode.In(c, unicode.Nl, unicode.Sc, unicode.Pc))
}

func javaIdentPart(c rune) bool {
	if c >= 0x10000 {
		return false
	}
	return javaIdentStart(c) || unicode.In(c, unicode.Nd, unicode.Mn, unicode.Mc, unicode.Cf) ||
		c <= 0x08 || c >= 0x0E && c <= 0x1B || c >= 0x7F && c <= 0x9F
}

func utf16Len(s string) int {
	n := 0
	for _, c := range s {
		n++
		if c >= 0x10000 {
			n++
		}
	}
	return n
}

// ---- Compact writing (as Jackson writes a tree back) ----

// appendCompact writes n without white space: integers in canonical form,
// other numbers as Java doubles (an overflowing one as the string
// "Infinity"), strings escaped as SNS's writer escapes them.
func appendCompact(b []byte, n *jnode) []byte {
	switch n.kind {
	case jObject:
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = snsjson.AppendString(b, k)
			b = append(b, ':')
			b = appendCompact(b, n.vals[i])
		}
		return append(b, '}')
	case jArray:
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCompact(b, v)
		}
		return append(b, ']')
	case jString:
		return snsjson.AppendString(b, n.text)
	case jInt:
		if n.text == "-0" {
			return append(b, '0')
		}
		return append(b, n.text...)
	case jFloat:
		f, _ := strconv.ParseFloat(n.text, 64)
		switch {
		case math.IsInf(f, 1):
			return snsjson.AppendString(b, "Infinity")
		case math.IsInf(f, -1):
			return snsjson.AppendString(b, "-Infinity")
		}
		return append(b, javaDouble(f)...)
	}
	return append(b, n.text...)
}
