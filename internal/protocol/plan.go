package protocol

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// kind is what a codec node reads and writes.
type kind uint8

const (
	kString kind = iota
	kInt
	kBool
	kBytes
	kPtr
	kStruct
	kList
	kMap
	kFloat // float32, float64
	kTime  // time.Time
)

// codec is the query/XML plan of one Go type, built once from its struct
// tags so that decoding and encoding never look fields up by name.
type codec struct {
	kind   kind
	typ    reflect.Type
	bits   int     // kInt: the integer's size
	elem   *codec  // kPtr: the pointee; kList: the element; kMap: the value
	fields []field // kStruct

	// smithy is the JSON plan of a root that reaches a timestamp or a
	// double, nil for other types (see smithyJSON).
	smithyOnce sync.Once
	smithy     *jcodec
}

// field is one member of a struct codec.
type field struct {
	index int
	name  string // query parameter / XML element name
	// alias is the plural spelling accepted on input for a flat list or map
	// (Attributes.N for Attribute.N), which some hand-written clients send.
	alias   string
	flat    bool   // Name.N (SQS)
	wrapped bool   // Name.member.N / Name.entry.N (SNS)
	key     string // map entry key member name
	value   string // map entry value member name
	c       *codec
	// jname is the JSON and CBOR member name ("" when json:"-"), and
	// omitEmpty its omitempty option; see member.go.
	jname     string
	omitEmpty bool
}

// planCache maps reflect.Type to *codec. The zero value is ready to use.
type planCache struct {
	m  sync.Map
	mu sync.Mutex // serialises builds so that recursive types share nodes
}

// plan returns the codec of t, building it on first use.
func (pc *planCache) plan(t reflect.Type) (*codec, error) {
	if c, ok := pc.m.Load(t); ok {
		return c.(*codec), nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if c, ok := pc.m.Load(t); ok {
		return c.(*codec), nil
	}
	c, err := buildCodec(t, map[reflect.Type]*codec{})
	if err != nil {
		return nil, err
	}
	pc.m.Store(t, c)
	return c, nil
}

var (
	bytesType = reflect.TypeFor[[]byte]()
	timeType  = reflect.TypeFor[time.Time]()
)

func buildCodec(t reflect.Type, building map[reflect.Type]*codec) (*codec, error) {
	if c, ok := building[t]; ok {
		return c, nil
	}
	switch t.Kind() {
	case reflect.String:
		return &codec{kind: kString, typ: t}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &codec{kind: kInt, typ: t, bits: t.Bits()}, nil
	case reflect.Bool:
		return &codec{kind: kBool, typ: t}, nil
	case reflect.Float32, reflect.Float64:
		return &codec{kind: kFloat, typ: t, bits: t.Bits()}, nil
	case reflect.Pointer:
		c := &codec{kind: kPtr, typ: t}
		building[t] = c
		elem, err := buildCodec(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		c.elem = elem
		return c, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if !t.ConvertibleTo(bytesType) {
				return nil, fmt.Errorf("protocol: unsupported byte slice type %s", t)
			}
			return &codec{kind: kBytes, typ: t}, nil
		}
		c := &codec{kind: kList, typ: t}
		building[t] = c
		elem, err := buildCodec(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		if elem.kind == kList || elem.kind == kMap {
			return nil, fmt.Errorf("protocol: list of %s is not supported", t.Elem())
		}
		c.elem = elem
		return c, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("protocol: map key of %s must be a string", t)
		}
		c := &codec{kind: kMap, typ: t}
		building[t] = c
		elem, err := buildCodec(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		if elem.kind == kList || elem.kind == kMap {
			return nil, fmt.Errorf("protocol: map of %s is not supported", t.Elem())
		}
		c.elem = elem
		return c, nil
	case reflect.Struct:
		if t == timeType {
			return &codec{kind: kTime, typ: t}, nil
		}
		c := &codec{kind: kStruct, typ: t}
		building[t] = c
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			f, skip, err := parseField(sf)
			if err != nil {
				return nil, fmt.Errorf("protocol: %s.%s: %w", t, sf.Name, err)
			}
			if skip {
				continue
			}
			f.index = i
			f.jname, f.omitEmpty = jsonMember(sf)
			if f.c, err = buildCodec(sf.Type, building); err != nil {
				return nil, err
			}
			if err := f.checkShape(); err != nil {
				return nil, fmt.Errorf("protocol: %s.%s: %w", t, sf.Name, err)
			}
			c.fields = append(c.fields, f)
		}
		// A plural alias never shadows a member that has that name.
		for i := range c.fields {
			for j := range c.fields {
				if c.fields[i].alias != "" && c.fields[i].alias == c.fields[j].name {
					c.fields[i].alias = ""
				}
			}
		}
		return c, nil
	}
	return nil, fmt.Errorf("protocol: unsupported type %s", t)
}

// parseField reads a field's query tag: `query:"Name[,flat|,wrapped][,key=K][,value=V]"`.
func parseField(sf reflect.StructField) (f field, skip bool, err error) {
	tag, ok := sf.Tag.Lookup("query")
	if tag == "-" {
		return f, true, nil
	}
	f.name = sf.Name
	f.key, f.value = "Name", "Value"
	if !ok {
		return f, false, nil
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name != "" {
		f.name = name
	}
	for opt := range strings.SplitSeq(opts, ",") {
		switch k, v, _ := strings.Cut(opt, "="); k {
		case "":
		case "flat":
			f.flat = true
		case "wrapped":
			f.wrapped = true
		case "key":
			f.key = v
		case "value":
			f.value = v
		default:
			return f, false, fmt.Errorf("unknown query tag option %q", opt)
		}
	}
	if f.flat && f.wrapped {
		return f, false, fmt.Errorf("query tag is both flat and wrapped")
	}
	if f.key == "" || f.value == "" || f.key == f.value {
		return f, false, fmt.Errorf("map entry member names %q and %q must be set and differ", f.key, f.value)
	}
	return f, false, nil
}

// checkShape verifies that lists and maps declare their layout, and gives
// flat ones their plural alias.
func (f *field) checkShape() error {
	k := f.c.kind
	if k == kPtr {
		k = f.c.elem.kind
		if k == kList || k == kMap {
			return fmt.Errorf("pointer to a list or map is not supported")
		}
	}
	if k != kList && k != kMap {
		return nil
	}
	if !f.flat && !f.wrapped {
		return fmt.Errorf("a list or map needs ,flat or ,wrapped in its query tag")
	}
	if f.flat {
		f.alias = f.name + "s"
	}
	return nil
}
