package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// CBOR (RFC 8949) as Smithy's RPC v2 protocol uses it: structures and maps
// are maps keyed by member name (the JSON name), lists are arrays, blobs
// byte strings, timestamps tag 1 around epoch seconds. Both directions are
// driven by the same per-type plans as the other wires.

const (
	cborUint   = 0
	cborNegInt = 1
	cborBytes  = 2
	cborText   = 3
	cborArray  = 4
	cborMap    = 5
	cborTag    = 6
	cborSimple = 7

	cborFalse      = 20
	cborTrue       = 21
	cborNull       = 22
	cborUndefined  = 23
	cborFloat16    = 25
	cborFloat32    = 26
	cborFloat64    = 27
	cborIndefinite = 31
	cborBreak      = 0xff

	cborTagEpoch = 1
)

// maxCBORDepth bounds nesting, so that a body of nested arrays cannot
// exhaust the stack.
const maxCBORDepth = 64

// decodeCBOR fills v (an addressable input struct) from body. An empty body
// is an empty structure.
func decodeCBOR(c *codec, body []byte, v reflect.Value) error {
	if len(body) == 0 {
		return nil
	}
	d := &cborDecoder{b: body}
	if err := d.value(c, v, "input"); err != nil {
		return err
	}
	if d.off != len(d.b) {
		return cborError("The request body has %d bytes after its top-level value.", len(d.b)-d.off)
	}
	return nil
}

func cborError(format string, args ...any) *Error {
	return ErrSerialization.WithMessage(format, args...)
}

var errCBORTruncated = cborError("The request body is not valid CBOR: it ends in the middle of a value.")

type cborDecoder struct {
	b     []byte
	off   int
	depth int
}

// head reads an item's initial byte and argument. For indefinite lengths
// (arrays, maps, byte and text strings) indef is true and arg is 0.
func (d *cborDecoder) head() (major, info byte, arg uint64, indef bool, err error) {
	if d.off >= len(d.b) {
		return 0, 0, 0, false, errCBORTruncated
	}
	ib := d.b[d.off]
	d.off++
	major, info = ib>>5, ib&0x1f
	switch {
	case info < 24:
		return major, info, uint64(info), false, nil
	case info <= 27:
		n := 1 << (info - 24)
		if len(d.b)-d.off < n {
			return 0, 0, 0, false, errCBORTruncated
		}
		p := d.b[d.off : d.off+n]
		d.off += n
		switch n {
		case 1:
			arg = uint64(p[0])
		case 2:
			arg = uint64(binary.BigEndian.Uint16(p))
		case 4:
			arg = uint64(binary.BigEndian.Uint32(p))
		default:
			arg = binary.BigEndian.Uint64(p)
		}
		return major, info, arg, false, nil
	case info == cborIndefinite && major >= cborBytes && major <= cborMap:
		return major, info, 0, true, nil
	case info == cborIndefinite && major == cborSimple:
		return 0, 0, 0, false, cborError("The request body is not valid CBOR: unexpected break at byte %d.", d.off-1)
	}
	return 0, 0, 0, false, cborError("The request body is not valid CBOR: reserved additional information %d at byte %d.", info, d.off-1)
}

// atBreak consumes the break that ends an indefinite-length item.
func (d *cborDecoder) atBreak() (bool, error) {
	if d.off >= len(d.b) {
		return false, errCBORTruncated
	}
	if d.b[d.off] == cborBreak {
		d.off++
		return true, nil
	}
	return false, nil
}

// remaining bounds a length prefix by what is left of the body: every
// element takes at least one byte, so a larger count is a lie that must
// not size an allocation.
func (d *cborDecoder) checkCount(n uint64, per int) error {
	if n > uint64((len(d.b)-d.off)/per) {
		return errCBORTruncated
	}
	return nil
}

// str reads the payload of a byte or text string whose head was read.
func (d *cborDecoder) str(major byte, arg uint64, indef bool) ([]byte, error) {
	if !indef {
		if err := d.checkCount(arg, 1); err != nil {
			return nil, err
		}
		p := d.b[d.off : d.off+int(arg)]
		d.off += int(arg)
		return p, nil
	}
	// Chunks of the same major type, each definite, up to a break.
	var out []byte
	for {
		end, err := d.atBreak()
		if err != nil {
			return nil, err
		}
		if end {
			if out == nil {
				out = []byte{}
			}
			return out, nil
		}
		m, _, n, ind, err := d.head()
		if err != nil {
			return nil, err
		}
		if m != major || ind {
			return nil, cborError("The request body is not valid CBOR: a chunk of an indefinite-length string is not a definite string of its type.")
		}
		if err := d.checkCount(n, 1); err != nil {
			return nil, err
		}
		out = append(out, d.b[d.off:d.off+int(n)]...)
		d.off += int(n)
	}
}

func (d *cborDecoder) text(arg uint64, indef bool) (string, error) {
	p, err := d.str(cborText, arg, indef)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(p) {
		return "", cborError("The request body is not valid CBOR: a text string is not valid UTF-8.")
	}
	return string(p), nil
}

func (d *cborDecoder) enter() error {
	d.depth++
	if d.depth > maxCBORDepth {
		return cborError("The request body nests deeper than %d levels.", maxCBORDepth)
	}
	return nil
}

// skip passes over one whole item (an unknown member's value).
func (d *cborDecoder) skip() error {
	major, info, arg, indef, err := d.head()
	if err != nil {
		return err
	}
	return d.skipRest(major, info, arg, indef)
}

func (d *cborDecoder) skipRest(major, info byte, arg uint64, indef bool) error {
	switch major {
	case cborUint, cborNegInt:
		return nil
	case cborBytes, cborText:
		_, err := d.str(major, arg, indef)
		return err
	case cborSimple:
		return nil
	case cborTag:
		if err := d.enter(); err != nil {
			return err
		}
		defer func() { d.depth-- }()
		return d.skip()
	}
	// Arrays and maps.
	if err := d.enter(); err != nil {
		return err
	}
	defer func() { d.depth-- }()
	per := uint64(1)
	if major == cborMap {
		per = 2
	}
	if !indef {
		if err := d.checkCount(arg, int(per)); err != nil {
			return err
		}
		for range arg * per {
			if err := d.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		end, err := d.atBreak()
		if err != nil || end {
			return err
		}
		for range per {
			if err := d.skip(); err != nil {
				return err
			}
		}
	}
}

// number reads an integer or float item whose head was read, as a float64,
// and whether it was an integer (and then its value, as int64, if it fits).
func (d *cborDecoder) number(major, info byte, arg uint64) (f float64, i int64, isInt, fits bool, ok bool) {
	switch major {
	case cborUint:
		return float64(arg), int64(arg), true, arg <= math.MaxInt64, true
	case cborNegInt:
		// -1 - arg
		if arg > math.MaxInt64 {
			return -1 - float64(arg), 0, true, false, true
		}
		return -1 - float64(arg), -1 - int64(arg), true, true, true
	case cborSimple:
		switch info {
		case cborFloat16:
			return float16(uint16(arg)), 0, false, false, true
		case cborFloat32:
			return float64(math.Float32frombits(uint32(arg))), 0, false, false, true
		case cborFloat64:
			return math.Float64frombits(arg), 0, false, false, true
		}
	}
	return 0, 0, false, false, false
}

// float16 widens an IEEE 754 half-precision value.
func float16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(frac+1024, exp-25)
}

// cborKind names a CBOR item for error messages, in the words AWS uses for
// JSON tokens.
func cborKind(major, info byte) string {
	switch major {
	case cborUint, cborNegInt:
		return "NUMBER_VALUE"
	case cborBytes:
		return "BLOB_VALUE"
	case cborText:
		return "STRING_VALUE"
	case cborArray:
		return "START_ARRAY"
	case cborMap:
		return "START_MAP"
	case cborTag:
		return "TAGGED_VALUE"
	}
	switch info {
	case cborFalse, cborTrue:
		return "BOOLEAN_VALUE"
	case cborFloat16, cborFloat32, cborFloat64:
		return "NUMBER_VALUE"
	}
	return "VALUE"
}

func cborMismatch(major, info byte, c *codec, where string) *Error {
	return cborError("%s can not be converted to %s (%s).", cborKind(major, info), cborModelType(c), where)
}

func cborModelType(c *codec) string {
	switch c.kind {
	case kFloat:
		return "a Double"
	case kTime:
		return "a Timestamp"
	}
	return modelTypeName(c.typ)
}

// value decodes one item into v along c. where names the member for errors.
func (d *cborDecoder) value(c *codec, v reflect.Value, where string) error {
	major, info, arg, indef, err := d.head()
	if err != nil {
		return err
	}
	// Tags other than epoch timestamps carry nothing Ferry needs: decode
	// what they wrap.
	for major == cborTag && !(c.kind == kTime || (c.kind == kPtr && c.elem.kind == kTime)) {
		if major, info, arg, indef, err = d.head(); err != nil {
			return err
		}
	}
	if major == cborSimple && (info == cborNull || info == cborUndefined) {
		return nil // an absent member
	}
	switch c.kind {
	case kPtr:
		p := reflect.New(c.elem.typ)
		if err := d.valueFrom(c.elem, p.Elem(), where, major, info, arg, indef); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	return d.valueFrom(c, v, where, major, info, arg, indef)
}

func (d *cborDecoder) valueFrom(c *codec, v reflect.Value, where string, major, info byte, arg uint64, indef bool) error {
	switch c.kind {
	case kString:
		if major != cborText {
			return cborMismatch(major, info, c, where)
		}
		s, err := d.text(arg, indef)
		if err != nil {
			return err
		}
		v.SetString(s)
	case kBytes:
		if major != cborBytes {
			return cborMismatch(major, info, c, where)
		}
		p, err := d.str(major, arg, indef)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(bytes.Clone(p)).Convert(c.typ))
	case kBool:
		if major != cborSimple || (info != cborTrue && info != cborFalse) {
			return cborMismatch(major, info, c, where)
		}
		v.SetBool(info == cborTrue)
	case kInt:
		_, i, isInt, fits, ok := d.number(major, info, arg)
		if !ok || !isInt {
			return cborMismatch(major, info, c, where)
		}
		if !fits || v.OverflowInt(i) {
			return cborError("The value of %s is out of range for %s.", where, cborModelType(c))
		}
		v.SetInt(i)
	case kFloat:
		f, _, _, _, ok := d.number(major, info, arg)
		if !ok {
			return cborMismatch(major, info, c, where)
		}
		v.SetFloat(f)
	case kTime:
		if major == cborTag {
			if arg != cborTagEpoch {
				return cborError("The value of %s is a CBOR tag %d; a timestamp is tag 1 (epoch seconds).", where, arg)
			}
			var err error
			if major, info, arg, _, err = d.head(); err != nil {
				return err
			}
		}
		f, _, _, _, ok := d.number(major, info, arg)
		if !ok {
			return cborMismatch(major, info, c, where)
		}
		t, ok := fromEpochSeconds(f)
		if !ok {
			return cborError("The value of %s is not a valid timestamp.", where)
		}
		v.Set(reflect.ValueOf(t))
	case kStruct:
		if major != cborMap {
			return cborMismatch(major, info, c, where)
		}
		return d.structBody(c, v, arg, indef)
	case kList:
		if major != cborArray {
			return cborMismatch(major, info, c, where)
		}
		return d.listBody(c, v, arg, indef, where)
	case kMap:
		if major != cborMap {
			return cborMismatch(major, info, c, where)
		}
		return d.mapBody(c, v, arg, indef, where)
	default:
		return fmt.Errorf("protocol: no CBOR decoding for %s", c.typ)
	}
	return nil
}

// entries calls each for every entry of a map or array whose head was
// read, definite or not.
func (d *cborDecoder) entries(arg uint64, indef bool, per int, each func() error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer func() { d.depth-- }()
	if !indef {
		if err := d.checkCount(arg, per); err != nil {
			return err
		}
		for range arg {
			if err := each(); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		end, err := d.atBreak()
		if err != nil || end {
			return err
		}
		if err := each(); err != nil {
			return err
		}
	}
}

// key reads a map key. The bytes may alias the body: callers copy what
// they keep.
func (d *cborDecoder) key() ([]byte, error) {
	major, _, arg, indef, err := d.head()
	if err != nil {
		return nil, err
	}
	if major != cborText {
		return nil, cborError("The request body has a map key that is not a text string.")
	}
	p, err := d.str(cborText, arg, indef)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(p) {
		return nil, cborError("The request body is not valid CBOR: a text string is not valid UTF-8.")
	}
	return p, nil
}

func (d *cborDecoder) structBody(c *codec, v reflect.Value, arg uint64, indef bool) error {
	return d.entries(arg, indef, 2, func() error {
		name, err := d.key()
		if err != nil {
			return err
		}
		for i := range c.fields {
			if f := &c.fields[i]; f.jname != "" && f.jname == string(name) {
				return d.value(f.c, v.Field(f.index), f.jname)
			}
		}
		return d.skip() // unknown members are ignored, as on the JSON wire
	})
}

func (d *cborDecoder) listBody(c *codec, v reflect.Value, arg uint64, indef bool, where string) error {
	n := 0
	if !indef {
		if err := d.checkCount(arg, 1); err != nil {
			return err
		}
		n = int(arg)
	}
	s := reflect.MakeSlice(c.typ, n, n)
	i := 0
	err := d.entries(arg, indef, 1, func() error {
		if indef {
			s = reflect.Append(s, reflect.Zero(c.elem.typ))
		}
		i++
		return d.value(c.elem, s.Index(i-1), where)
	})
	if err != nil {
		return err
	}
	v.Set(s)
	return nil
}

func (d *cborDecoder) mapBody(c *codec, v reflect.Value, arg uint64, indef bool, where string) error {
	n := 0
	if !indef {
		if err := d.checkCount(arg, 2); err != nil {
			return err
		}
		n = int(arg)
	}
	m := reflect.MakeMapWithSize(c.typ, n)
	keyType := c.typ.Key()
	err := d.entries(arg, indef, 2, func() error {
		k, err := d.key()
		if err != nil {
			return err
		}
		val := reflect.New(c.elem.typ).Elem()
		if err := d.value(c.elem, val, where); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(string(k)).Convert(keyType), val)
		return nil
	})
	if err != nil {
		return err
	}
	v.Set(m)
	return nil
}

// cborEncoder appends CBOR with definite lengths and the shortest heads.
type cborEncoder struct{ b []byte }

func (e *cborEncoder) head(major byte, n uint64) {
	m := major << 5
	switch {
	case n < 24:
		e.b = append(e.b, m|byte(n))
	case n <= math.MaxUint8:
		e.b = append(e.b, m|24, byte(n))
	case n <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, m|25), uint16(n))
	case n <= math.MaxUint32:
		e.b = binary.BigEndian.AppendUint32(append(e.b, m|26), uint32(n))
	default:
		e.b = binary.BigEndian.AppendUint64(append(e.b, m|27), n)
	}
}

func (e *cborEncoder) text(s string) {
	e.head(cborText, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *cborEncoder) int(i int64) {
	if i >= 0 {
		e.head(cborUint, uint64(i))
	} else {
		e.head(cborNegInt, uint64(-1-i))
	}
}

func (e *cborEncoder) float(f float64) {
	e.b = binary.BigEndian.AppendUint64(append(e.b, cborSimple<<5|cborFloat64), math.Float64bits(f))
}

// encodeCBOR writes an output struct (v invalid for a nil output: {}).
func encodeCBOR(b *bytes.Buffer, c *codec, v reflect.Value) {
	e := cborEncoder{b: b.AvailableBuffer()}
	if !v.IsValid() {
		e.head(cborMap, 0)
	} else {
		e.value(c, v)
	}
	b.Write(e.b)
}

func (e *cborEncoder) value(c *codec, v reflect.Value) {
	switch c.kind {
	case kPtr:
		if v.IsNil() {
			e.b = append(e.b, cborSimple<<5|cborNull)
			return
		}
		e.value(c.elem, v.Elem())
	case kString:
		e.text(v.String())
	case kBytes:
		p := v.Bytes()
		e.head(cborBytes, uint64(len(p)))
		e.b = append(e.b, p...)
	case kBool:
		if v.Bool() {
			e.b = append(e.b, cborSimple<<5|cborTrue)
		} else {
			e.b = append(e.b, cborSimple<<5|cborFalse)
		}
	case kInt:
		e.int(v.Int())
	case kFloat:
		e.float(v.Float())
	case kTime:
		// As Smithy's clients write them: tag 1, float64 epoch seconds.
		e.head(cborTag, cborTagEpoch)
		e.float(epochSeconds(timeOf(v)))
	case kStruct:
		n := 0
		for i := range c.fields {
			if f := &c.fields[i]; f.jname != "" && f.present(v.Field(f.index)) {
				n++
			}
		}
		e.head(cborMap, uint64(n))
		for i := range c.fields {
			if f := &c.fields[i]; f.jname != "" && f.present(v.Field(f.index)) {
				e.text(f.jname)
				e.value(f.c, v.Field(f.index))
			}
		}
	case kList:
		e.head(cborArray, uint64(v.Len()))
		for i := range v.Len() {
			e.value(c.elem, v.Index(i))
		}
	case kMap:
		// Sorted keys, so that equal maps encode alike.
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		e.head(cborMap, uint64(len(keys)))
		for _, k := range keys {
			e.text(k.String())
			e.value(c.elem, v.MapIndex(k))
		}
	}
}
