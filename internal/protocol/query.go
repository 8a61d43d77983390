package protocol

import (
	"cmp"
	"encoding/base64"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// qnode is one dotted segment of the query parameters: "A.1.B=x" becomes
// A → 1 → B holding x. Decoding walks this tree along a codec.
type qnode struct {
	name  string // the parameter name up to this segment, for errors
	seg   string // the last segment of name
	value string
	set   bool // a parameter ends here
	// The next segments, in the order first seen: most nodes have a
	// handful, looked up by a scan; index takes over for many.
	first, last *qnode
	next        *qnode // sibling
	kids        int
	index       map[string]*qnode
}

// maxScannedKids is the most children looked up by a linear scan.
const maxScannedKids = 16

func (n *qnode) child(seg string) *qnode {
	if n == nil {
		return nil
	}
	if n.index != nil {
		return n.index[seg]
	}
	for k := n.first; k != nil; k = k.next {
		if k.seg == seg {
			return k
		}
	}
	return nil
}

func (n *qnode) add(c *qnode) {
	if n.last == nil {
		n.first = c
	} else {
		n.last.next = c
	}
	n.last = c
	n.kids++
	switch {
	case n.index != nil:
		n.index[c.seg] = c
	case n.kids > maxScannedKids:
		n.index = make(map[string]*qnode, 2*n.kids)
		for k := n.first; k != nil; k = k.next {
			n.index[k.seg] = k
		}
	}
}

// parseTree arranges parameters by their dotted names. A parameter given
// twice keeps its first value.
func parseTree(vals url.Values) *qnode {
	// Nodes are allocated in chunks rather than one by one.
	var slab []qnode
	node := func() *qnode {
		if len(slab) == 0 {
			slab = make([]qnode, 32)
		}
		n := &slab[0]
		slab = slab[1:]
		return n
	}
	root := node()
	for k, vs := range vals {
		n := root
		rest, end := k, 0
		for {
			seg, tail, more := strings.Cut(rest, ".")
			end += len(seg)
			c := n.child(seg)
			if c == nil {
				c = node()
				c.name, c.seg = k[:end], seg
				n.add(c)
			}
			n = c
			if !more {
				break
			}
			rest = tail
			end++ // the dot
		}
		if len(vs) > 0 && !n.set {
			n.value, n.set = vs[0], true
		}
	}
	return root
}

// decodeQuery fills the struct v points to from the query parameters.
func decodeQuery(c *codec, vals url.Values, v reflect.Value) error {
	return decodeStruct(c, parseTree(vals), v)
}

func decodeStruct(c *codec, n *qnode, v reflect.Value) error {
	for i := range c.fields {
		f := &c.fields[i]
		child := n.child(f.name)
		if child == nil && f.alias != "" {
			child = n.child(f.alias)
		}
		if child == nil {
			continue
		}
		if err := decodeField(f, child, v.Field(f.index)); err != nil {
			return err
		}
	}
	return nil
}

func decodeField(f *field, n *qnode, v reflect.Value) error {
	switch f.c.kind {
	case kList:
		return decodeList(f, n, v)
	case kMap:
		return decodeMap(f, n, v)
	}
	return decodeValue(f.c, n, v)
}

// decodeValue decodes a scalar, pointer or struct.
func decodeValue(c *codec, n *qnode, v reflect.Value) error {
	switch c.kind {
	case kString:
		if n.set {
			v.SetString(n.value)
		}
	case kInt:
		if n.set {
			i, err := strconv.ParseInt(n.value, 10, c.bits)
			if err != nil {
				return invalidValue(n)
			}
			v.SetInt(i)
		}
	case kBool:
		if n.set {
			switch {
			case strings.EqualFold(n.value, "true"):
				v.SetBool(true)
			case strings.EqualFold(n.value, "false"):
				v.SetBool(false)
			default:
				return invalidValue(n)
			}
		}
	case kFloat:
		if n.set {
			f, err := strconv.ParseFloat(n.value, c.bits)
			if err != nil {
				return invalidValue(n)
			}
			v.SetFloat(f)
		}
	case kTime:
		if n.set {
			t, ok := parseQueryTime(n.value)
			if !ok {
				return invalidValue(n)
			}
			v.Set(reflect.ValueOf(t))
		}
	case kBytes:
		if n.set {
			b, err := decodeBase64(n.value)
			if err != nil {
				return invalidValue(n)
			}
			v.Set(reflect.ValueOf(b).Convert(c.typ))
		}
	case kPtr:
		if !n.set && c.elem.kind != kStruct {
			return nil
		}
		p := reflect.New(c.elem.typ)
		if err := decodeValue(c.elem, n, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	case kStruct:
		return decodeStruct(c, n, v)
	}
	return nil
}

// decodeBase64 accepts padded and unpadded standard base64.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(s)
	}
	return b, err
}

func decodeList(f *field, n *qnode, v reflect.Value) error {
	entries, err := indexed(n, "member")
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		// "Name=" is how an empty list travels; a bare "Name=x" for a list of
		// scalars is taken as one element, as hand-written clients send it.
		if n.set && n.value != "" && f.c.elem.kind != kStruct && f.c.elem.kind != kPtr {
			entries = []*qnode{n}
		} else {
			return nil
		}
	}
	s := reflect.MakeSlice(f.c.typ, len(entries), len(entries))
	for i, e := range entries {
		if err := decodeValue(f.c.elem, e, s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func decodeMap(f *field, n *qnode, v reflect.Value) error {
	entries, err := indexed(n, "entry")
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	m := reflect.MakeMapWithSize(f.c.typ, len(entries))
	keyType := f.c.typ.Key()
	for _, e := range entries {
		k := e.child(f.key)
		if k == nil || !k.set {
			return ErrMissingParameter.WithMessage("The request must contain the parameter %s.%s.", e.name, f.key)
		}
		val := reflect.New(f.c.elem.typ).Elem()
		if vn := e.child(f.value); vn != nil {
			if err := decodeValue(f.c.elem, vn, val); err != nil {
				return err
			}
		}
		m.SetMapIndex(reflect.ValueOf(k.value).Convert(keyType), val)
	}
	v.Set(m)
	return nil
}

// indexed returns a list's or map's entries ordered by index. Both layouts
// are accepted whatever the tag says (Name.N and Name.member.N), so that a
// client that flattens where it should not is still understood; any other
// segment in that position is an error.
func indexed(n *qnode, container string) ([]*qnode, error) {
	type entry struct {
		idx  int
		node *qnode
	}
	var entries []entry
	collect := func(parent *qnode, allowContainer bool) error {
		for c := parent.first; c != nil; c = c.next {
			seg := c.seg
			if allowContainer && seg == container {
				continue
			}
			i, ok := parseIndex(seg)
			if !ok {
				return ErrMalformedQueryString.WithMessage("The parameter %s has an invalid index; indexes are positive integers.", c.name)
			}
			entries = append(entries, entry{i, c})
		}
		return nil
	}
	if err := collect(n, true); err != nil {
		return nil, err
	}
	if w := n.child(container); w != nil {
		if err := collect(w, false); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.idx, b.idx), strings.Compare(a.node.name, b.node.name))
	})
	out := make([]*qnode, len(entries))
	for i, e := range entries {
		out[i] = e.node
	}
	return out, nil
}

// parseIndex accepts 1, 2, ... written in decimal digits only.
func parseIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	i := 0
	for _, r := range []byte(s) {
		if r < '0' || r > '9' {
			return 0, false
		}
		i = i*10 + int(r-'0')
	}
	return i, i > 0
}

// invalidValue is AWS's answer to a value that does not parse as its type.
func invalidValue(n *qnode) *Error {
	if len(n.value) > 256 {
		return ErrInvalidParameterValue.WithMessage("Value for parameter %s is invalid.", n.name)
	}
	return ErrInvalidParameterValue.WithMessage("Value %s for parameter %s is invalid.", n.value, n.name)
}
