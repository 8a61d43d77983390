package protocol

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON plans below decode and encode the inputs and outputs of the
// request path without encoding/json's per-byte scanner and name lookups.
// A plan comes in one of two flavours, chosen per root type:
//
//   - Types that reach a timestamp or a double (CloudWatch's) are on the AWS
//     JSON wire as Smithy puts them, which encoding/json cannot do:
//     timestamps as epoch seconds, the non-finite doubles as the strings
//     "NaN", "Infinity" and "-Infinity", absent members left out as on the
//     CBOR wire. Their plans come from the query/CBOR plan (smithyJSON), and
//     a body the plan decoder gives up on is decided by the generic
//     document decoder (decodeJSONDocument).
//   - All other types (SQS's and SNS's) are read and written exactly as
//     encoding/json does, byte for byte. Their plans come from the json tags
//     (jsonPlans); a decode that gives up is done again by encoding/json,
//     which then decides, errors included, and a type the plans cannot
//     describe exactly (marshaler methods, embedded structs, kinds they do
//     not know) always goes to encoding/json.
//
// Either way the plan decoder takes the plain case only: it gives up on
// null, a \u escape, a key that differs from a member's name only in case,
// a duplicate member, invalid UTF-8, a number that does not fit, deep
// nesting. Differential tests and fuzz targets hold the plan decoder equal
// to its fallback.

// decodeJSONInput decodes a JSON request body into in (a pointer to a
// value of type t).
func (h *Handler) decodeJSONInput(t reflect.Type, body []byte, in any) error {
	c, err := h.plans.plan(t)
	if err != nil {
		return err
	}
	if j := smithyJSON(c); j != nil {
		v := reflect.ValueOf(in).Elem()
		if planDecode(j, body, v) {
			return nil
		}
		v.SetZero()
		return decodeJSONDocument(c, body, v)
	}
	return decodeJSONPlan(&h.jplans, body, in)
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
	if j := smithyJSON(c); j != nil {
		if !v.IsValid() {
			b.WriteString("{}")
			return nil
		}
		b.Write(appendJSON(b.AvailableBuffer(), j, v))
		return nil
	}
	return encodeJSONPlan(&h.jplans, b, out)
}

// jcodec is the JSON plan of one Go type, from its json tags (or, in the
// Smithy flavour, from its query/CBOR plan).
type jcodec struct {
	kind   kind
	typ    reflect.Type
	bits   int // kInt, kFloat
	elem   *jcodec
	fields []jfield // kStruct
	// smithy: the Smithy flavour (see above), else encoding/json's.
	smithy bool
	// dupNames: two members share a name, which the decoder leaves to the
	// fallback (it sets both).
	dupNames bool
}

// jfield is one member of a struct plan.
type jfield struct {
	index     int
	name      string
	key       string // `"name":`, as encoded
	omitEmpty bool
	c         *jcodec
}

// jsonPlans maps reflect.Type to *jcodec, or to nil when the type is left
// to encoding/json. The zero value is ready to use.
type jsonPlans struct {
	m  sync.Map
	mu sync.Mutex
}

func (p *jsonPlans) plan(t reflect.Type) *jcodec {
	if c, ok := p.m.Load(t); ok {
		return c.(*jcodec)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.m.Load(t); ok {
		return c.(*jcodec)
	}
	c, ok := buildJSON(t, map[reflect.Type]*jcodec{})
	if !ok {
		c = nil
	}
	p.m.Store(t, c)
	return c
}

// smithyJSON returns the JSON plan of root c when c reaches a timestamp or
// a double, nil otherwise, building it once. It has the members of the
// query/CBOR plan, so that the JSON and CBOR wires agree.
func smithyJSON(c *codec) *jcodec {
	c.smithyOnce.Do(func() {
		if reachesTimeOrDouble(c, map[*codec]bool{}) {
			c.smithy = jsonFromPlan(c, map[*codec]*jcodec{})
		}
	})
	return c.smithy
}

func reachesTimeOrDouble(c *codec, seen map[*codec]bool) bool {
	if c == nil || seen[c] {
		return false
	}
	seen[c] = true
	if c.kind == kTime || c.kind == kFloat || reachesTimeOrDouble(c.elem, seen) {
		return true
	}
	for i := range c.fields {
		if reachesTimeOrDouble(c.fields[i].c, seen) {
			return true
		}
	}
	return false
}

func jsonFromPlan(c *codec, built map[*codec]*jcodec) *jcodec {
	if j, ok := built[c]; ok {
		return j
	}
	j := &jcodec{kind: c.kind, typ: c.typ, bits: c.bits, smithy: true}
	built[c] = j
	if c.elem != nil {
		j.elem = jsonFromPlan(c.elem, built)
	}
	for i := range c.fields {
		f := &c.fields[i]
		if f.jname == "" {
			continue
		}
		if slices.ContainsFunc(j.fields, func(g jfield) bool { return g.name == f.jname }) {
			j.dupNames = true
		}
		j.fields = append(j.fields, jfield{index: f.index, name: f.jname, key: string(appendJSONString(nil, f.jname)) + ":",
			omitEmpty: f.omitEmpty, c: jsonFromPlan(f.c, built)})
	}
	return j
}

var (
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// customJSON reports whether encoding/json would call a method of t's.
func customJSON(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, m := range []reflect.Type{jsonMarshalerType, jsonUnmarshalerType, textMarshalerType, textUnmarshalerType} {
		if t.Implements(m) || pt.Implements(m) {
			return true
		}
	}
	return false
}

func buildJSON(t reflect.Type, building map[reflect.Type]*jcodec) (*jcodec, bool) {
	if c, ok := building[t]; ok {
		return c, true
	}
	if customJSON(t) {
		return nil, false
	}
	switch t.Kind() {
	case reflect.String:
		return &jcodec{kind: kString, typ: t}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &jcodec{kind: kInt, typ: t, bits: t.Bits()}, true
	case reflect.Bool:
		return &jcodec{kind: kBool, typ: t}, true
	case reflect.Pointer:
		c := &jcodec{kind: kPtr, typ: t}
		building[t] = c
		elem, ok := buildJSON(t.Elem(), building)
		c.elem = elem
		return c, ok && elem.kind != kPtr
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &jcodec{kind: kBytes, typ: t}, t.Elem() == reflect.TypeFor[byte]()
		}
		c := &jcodec{kind: kList, typ: t}
		building[t] = c
		elem, ok := buildJSON(t.Elem(), building)
		c.elem = elem
		return c, ok
	case reflect.Map:
		if t.Key().Kind() != reflect.String || customJSON(t.Key()) {
			return nil, false
		}
		c := &jcodec{kind: kMap, typ: t}
		building[t] = c
		elem, ok := buildJSON(t.Elem(), building)
		c.elem = elem
		return c, ok
	case reflect.Struct:
		if t.NumField() > 64 { // duplicates are tracked in a uint64
			return nil, false
		}
		c := &jcodec{kind: kStruct, typ: t}
		building[t] = c
		for i := range t.NumField() {
			sf := t.Field(i)
			if sf.Anonymous {
				return nil, false
			}
			if !sf.IsExported() {
				continue
			}
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			f := jfield{index: i, name: name}
			for opt := range strings.SplitSeq(opts, ",") {
				switch opt {
				case "":
				case "omitempty":
					f.omitEmpty = true
				default: // string, omitzero, ...: encoding/json's business
					return nil, false
				}
			}
			if f.name == "" {
				f.name = sf.Name
			}
			if !plainName(f.name) || slices.ContainsFunc(c.fields, func(g jfield) bool { return g.name == f.name }) {
				return nil, false
			}
			f.key = strconv.Quote(f.name) + ":"
			var ok bool
			if f.c, ok = buildJSON(sf.Type, building); !ok {
				return nil, false
			}
			c.fields = append(c.fields, f)
		}
		return c, true
	}
	return nil, false
}

// plainName: ASCII letters, digits and underscores, which need no escaping
// and fold as encoding/json folds them.
func plainName(s string) bool {
	for _, r := range []byte(s) {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_') {
			return false
		}
	}
	return s != ""
}

// decodeJSONPlan decodes body into in (a pointer to a zero struct) along
// its plan when it can, and with encoding/json (decodeJSON) otherwise.
func decodeJSONPlan(plans *jsonPlans, body []byte, in any) error {
	v := reflect.ValueOf(in)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		if c := plans.plan(v.Type().Elem()); c != nil && c.kind == kStruct {
			if planDecode(c, body, v.Elem()) {
				return nil
			}
			v.Elem().SetZero()
		}
	}
	return decodeJSON(body, in)
}

// planDecode decodes body into v along c, reporting false (with v partly
// written) where encoding/json must decide.
func planDecode(c *jcodec, body []byte, v reflect.Value) bool {
	// One copy of the body backs every string decoded without escapes.
	d := jdec{b: body, s: string(body)}
	d.ws()
	if d.i == len(body) {
		return true // an empty body is {}
	}
	if !d.object(c, v, 0) {
		return false
	}
	d.ws()
	return d.i == len(body)
}

// maxJSONDepth bounds nesting; deeper documents go to encoding/json.
const maxJSONDepth = 64

// jdec reads one JSON document; every method reports false to give up.
type jdec struct {
	b       []byte
	s       string // b as a string, which decoded strings share
	i       int
	scratch []byte
}

func (d *jdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and reads one byte.
func (d *jdec) next() (byte, bool) {
	d.ws()
	if d.i >= len(d.b) {
		return 0, false
	}
	c := d.b[d.i]
	d.i++
	return c, true
}

func (d *jdec) value(c *jcodec, v reflect.Value, depth int) bool {
	d.ws()
	if d.i >= len(d.b) || depth > maxJSONDepth {
		return false
	}
	switch c.kind {
	case kString:
		s, ok := d.str()
		if ok {
			v.SetString(s)
		}
		return ok
	case kInt:
		n, ok := d.integer(c.bits)
		if ok {
			v.SetInt(n)
		}
		return ok
	case kFloat:
		f, ok := d.double()
		if ok {
			v.SetFloat(f)
		}
		return ok
	case kTime:
		var t time.Time
		if d.b[d.i] == '"' {
			// Hand-written clients send ISO 8601; the SDKs send numbers.
			s, ok := d.str()
			if !ok {
				return false
			}
			if t, ok = parseQueryTime(s); !ok {
				return false
			}
		} else {
			f, ok := d.number()
			if !ok {
				return false
			}
			if t, ok = fromEpochSeconds(f); !ok {
				return false
			}
		}
		if p, ok := reflect.TypeAssert[*time.Time](v.Addr()); ok {
			*p = t // without boxing t
			return true
		}
		return false
	case kBool:
		switch {
		case bytes.HasPrefix(d.b[d.i:], []byte("true")):
			d.i += 4
			v.SetBool(true)
		case bytes.HasPrefix(d.b[d.i:], []byte("false")):
			d.i += 5
			v.SetBool(false)
		default:
			return false
		}
		return true
	case kPtr:
		if d.b[d.i] == 'n' { // null
			return false
		}
		p := reflect.New(c.elem.typ)
		if !d.value(c.elem, p.Elem(), depth) {
			return false
		}
		v.Set(p)
		return true
	case kStruct:
		if d.b[d.i] != '{' {
			return false
		}
		d.i++
		return d.object(c, v, depth+1)
	case kList:
		if d.b[d.i] != '[' {
			return false
		}
		d.i++
		return d.list(c, v, depth+1)
	case kMap:
		if d.b[d.i] != '{' {
			return false
		}
		d.i++
		return d.dict(c, v, depth+1)
	}
	return false // kBytes and the rest: encoding/json's
}

// object reads a struct's members; the '{' is read (or, at the top, read
// here).
func (d *jdec) object(c *jcodec, v reflect.Value, depth int) bool {
	if c.dupNames {
		return false
	}
	if depth == 0 {
		if ch, ok := d.next(); !ok || ch != '{' {
			return false
		}
	}
	if ch, ok := d.next(); !ok {
		return false
	} else if ch == '}' {
		return true
	} else {
		d.i--
	}
	var seen uint64
	for {
		if ch, ok := d.next(); !ok || ch != '"' {
			return false
		}
		d.i--
		key, ok := d.rawKey()
		if !ok {
			return false
		}
		if ch, ok := d.next(); !ok || ch != ':' {
			return false
		}
		j := -1
		for k := range c.fields {
			if c.fields[k].name == string(key) {
				j = k
				break
			}
		}
		if j < 0 {
			for k := range c.fields {
				if strings.EqualFold(c.fields[k].name, string(key)) {
					return false // encoding/json matches it case-insensitively
				}
			}
			if !d.skip(depth) {
				return false
			}
		} else {
			if j >= 64 || seen&(1<<j) != 0 { // duplicates are tracked in a uint64
				return false
			}
			seen |= 1 << j
			f := &c.fields[j]
			if !d.value(f.c, v.Field(f.index), depth) {
				return false
			}
		}
		switch ch, _ := d.next(); ch {
		case ',':
		case '}':
			return true
		default:
			return false
		}
	}
}

func (d *jdec) list(c *jcodec, v reflect.Value, depth int) bool {
	if ch, ok := d.next(); !ok {
		return false
	} else if ch == ']' {
		v.Set(reflect.MakeSlice(c.typ, 0, 0))
		return true
	} else {
		d.i--
	}
	n := 0
	for {
		if n == v.Len() {
			// Doubling from 10 rather than from 1: SQS's and SNS's batch
			// lists hold at most 10 entries, so they take one allocation.
			v.Grow(max(n, 10))
			v.SetLen(n + 1)
		}
		if !d.value(c.elem, v.Index(n), depth) {
			return false
		}
		n++
		switch ch, _ := d.next(); ch {
		case ',':
		case ']':
			return true
		default:
			return false
		}
	}
}

func (d *jdec) dict(c *jcodec, v reflect.Value, depth int) bool {
	m := reflect.MakeMap(c.typ)
	v.Set(m)
	if ch, ok := d.next(); !ok {
		return false
	} else if ch == '}' {
		return true
	} else {
		d.i--
	}
	keyType := c.typ.Key()
	for {
		d.ws()
		k, ok := d.str()
		if !ok {
			return false
		}
		key := reflect.ValueOf(k)
		if key.Type() != keyType {
			key = key.Convert(keyType)
		}
		if ch, ok := d.next(); !ok || ch != ':' {
			return false
		}
		elem := reflect.New(c.elem.typ).Elem()
		if !d.value(c.elem, elem, depth) {
			return false
		}
		m.SetMapIndex(key, elem)
		switch ch, _ := d.next(); ch {
		case ',':
		case '}':
			return true
		default:
			return false
		}
	}
}

// rawKey reads a member name that needs no unescaping and is ASCII; it
// aliases the body.
func (d *jdec) rawKey() ([]byte, bool) {
	d.i++ // '"'
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// str reads a string of valid UTF-8 with the short escapes only.
func (d *jdec) str() (string, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		if d.i = plainJSONWords(d.s, d.i); d.i >= len(d.b) {
			break
		}
		c := d.b[d.i]
		if jsonPlain[c] {
			d.i++
			continue
		}
		switch {
		case c == '"':
			d.i++
			return d.s[start : d.i-1], true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, w := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && w == 1 {
				return "", false
			}
			d.i += w
			continue
		}
		d.i++
	}
	return "", false
}

// escaped finishes a string that has escapes, from its first backslash.
func (d *jdec) escaped(start int) (string, bool) {
	out := append(d.scratch[:0], d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			d.scratch = out
			return string(out), true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return "", false
			}
			var r byte
			switch d.b[d.i+1] {
			case '"', '\\', '/':
				r = d.b[d.i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default: // \u and invalid escapes
				return "", false
			}
			out = append(out, r)
			d.i += 2
			continue
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, w := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && w == 1 {
				return "", false
			}
			out = append(out, d.b[d.i:d.i+w]...)
			d.i += w
			continue
		}
		out = append(out, c)
		d.i++
	}
	return "", false
}

// integer reads a JSON integer (no fraction or exponent) that fits bits.
func (d *jdec) integer(bits int) (int64, bool) {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, bits)
	return n, err == nil
}

// number reads a JSON number as a double; one that does not fit gives up.
func (d *jdec) number() (float64, bool) {
	start := d.i
	if !d.skipNumber() {
		return 0, false
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	return f, err == nil
}

// double reads a number or one of AWS JSON's strings for the non-finite
// doubles.
func (d *jdec) double() (float64, bool) {
	if d.b[d.i] != '"' {
		return d.number()
	}
	s, ok := d.str()
	if !ok {
		return 0, false
	}
	return nonFiniteDouble(s)
}

// nonFiniteDouble reads AWS JSON's strings for the non-finite doubles.
func nonFiniteDouble(s string) (float64, bool) {
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// skip reads over a value of a member the plan does not know, checking
// its syntax as encoding/json would.
func (d *jdec) skip(depth int) bool {
	c, ok := d.next()
	if !ok || depth > maxJSONDepth {
		return false
	}
	switch {
	case c == '"':
		d.i--
		return d.skipString()
	case c == '{':
		if ch, ok := d.next(); !ok {
			return false
		} else if ch == '}' {
			return true
		}
		d.i--
		for {
			if ch, ok := d.next(); !ok || ch != '"' {
				return false
			}
			d.i--
			if !d.skipString() {
				return false
			}
			if ch, ok := d.next(); !ok || ch != ':' {
				return false
			}
			if !d.skip(depth + 1) {
				return false
			}
			switch ch, _ := d.next(); ch {
			case ',':
			case '}':
				return true
			default:
				return false
			}
		}
	case c == '[':
		if ch, ok := d.next(); !ok {
			return false
		} else if ch == ']' {
			return true
		}
		d.i--
		for {
			if !d.skip(depth + 1) {
				return false
			}
			switch ch, _ := d.next(); ch {
			case ',':
			case ']':
				return true
			default:
				return false
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		d.i--
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
				d.i += len(lit)
				return true
			}
		}
		return false
	case c == '-' || '0' <= c && c <= '9':
		d.i--
		return d.skipNumber()
	}
	return false
}

// skipString reads over a string the plan does not keep. It gives up
// where the fallback refuses the body (see checkJSONText): on invalid UTF-8
// and, to leave pairing to it, on any surrogate escape.
func (d *jdec) skipString() bool {
	d.i++ // '"'
	for d.i < len(d.b) {
		c := d.b[d.i]
		if jsonPlain[c] {
			d.i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, w := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && w == 1 {
				return false
			}
			d.i += w
			continue
		}
		switch {
		case c == '"':
			d.i++
			return true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return false
			}
			switch d.b[d.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i += 2
			case 'u':
				if d.i+6 > len(d.b) {
					return false
				}
				if r, ok := hex4(d.b, d.i+2); !ok || utf16.IsSurrogate(r) {
					return false
				}
				d.i += 6
			default:
				return false
			}
			continue
		case c < 0x20:
			return false
		}
		d.i++
	}
	return false
}

// skipNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (d *jdec) skipNumber() bool {
	digits := func() int {
		s := d.i
		for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
			d.i++
		}
		return d.i - s
	}
	if d.b[d.i] == '-' {
		d.i++
	}
	first := d.i
	n := digits()
	if n == 0 || (d.b[first] == '0' && n > 1) {
		return false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// encodeJSONPlan writes out as encodeJSON does (encoding/json with HTML
// escaping off, then a newline), along out's plan when it has one.
func encodeJSONPlan(plans *jsonPlans, b *bytes.Buffer, out any) error {
	if out == nil {
		b.WriteString("{}")
		return nil
	}
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer {
		return encodeJSON(b, out)
	}
	if v.IsNil() {
		b.WriteString("{}")
		return nil
	}
	c := plans.plan(v.Type().Elem())
	if c == nil {
		return encodeJSON(b, out)
	}
	buf := appendJSON(b.AvailableBuffer(), c, v.Elem())
	b.Write(append(buf, '\n'))
	return nil
}

func appendJSON(dst []byte, c *jcodec, v reflect.Value) []byte {
	switch c.kind {
	case kString:
		return appendJSONString(dst, v.String())
	case kInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case kBool:
		return strconv.AppendBool(dst, v.Bool())
	case kFloat:
		return appendJSONDouble(dst, v.Float(), c.bits)
	case kTime:
		return strconv.AppendFloat(dst, epochSeconds(timeOf(v)), 'f', -1, 64)
	case kBytes:
		if v.IsNil() && !c.smithy { // Smithy has no null blob: ""
			return append(dst, "null"...)
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes())
		return append(dst, '"')
	case kPtr:
		if v.IsNil() {
			return append(dst, "null"...)
		}
		return appendJSON(dst, c.elem, v.Elem())
	case kStruct:
		dst = append(dst, '{')
		first := true
		for i := range c.fields {
			f := &c.fields[i]
			fv := v.Field(f.index)
			if c.smithy && !presentMember(f.c.kind, f.omitEmpty, fv) || !c.smithy && f.omitEmpty && emptyJSON(f.c, fv) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, f.key...)
			dst = appendJSON(dst, f.c, fv)
		}
		return append(dst, '}')
	case kList:
		if v.IsNil() && !c.smithy {
			return append(dst, "null"...)
		}
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, c.elem, v.Index(i))
		}
		return append(dst, ']')
	case kMap:
		if v.IsNil() && !c.smithy {
			return append(dst, "null"...)
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k.String())
			dst = append(dst, ':')
			dst = appendJSON(dst, c.elem, v.MapIndex(k))
		}
		return append(dst, '}')
	}
	panic("protocol: no JSON plan for " + c.typ.String()) // buildJSON refuses such types
}

// emptyJSON is encoding/json's test for omitempty.
func emptyJSON(c *jcodec, v reflect.Value) bool {
	switch c.kind {
	case kString, kBytes, kList, kMap:
		return v.Len() == 0
	case kInt:
		return v.Int() == 0
	case kBool:
		return !v.Bool()
	case kPtr:
		return v.IsNil()
	}
	return false
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

const hexDigits = "0123456789abcdef"

// jsonPlain marks the bytes a JSON string carries as they are: printable
// ASCII but for the quote and the backslash.
var jsonPlain = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendJSONString quotes s as encoding/json does without HTML escaping:
// short escapes where JSON has them, \u00XX for other controls, U+FFFD for
// invalid UTF-8, and U+2028/U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = plainJSONWords(s, i); i >= len(s) {
			break
		}
		b := s[i]
		if jsonPlain[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
