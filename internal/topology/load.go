package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// LoadFile reads a topology file: JSON when its name ends in .json or its
// text starts with '{', YAML otherwise.
func LoadFile(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	return Load(path, data)
}

// Load reads a topology from data; name is the file's name in errors.
// Every mistake (bad syntax, an unknown key, a value of the wrong type, an
// attribute the resource does not have, a dead-letter queue named but
// not in the file, a cycle of redrive policies) is an *Error at its line
// and column.
func Load(name string, data []byte) (*Topology, error) {
	var root *yaml.Node
	var err error
	if strings.EqualFold(filepath.Ext(name), ".json") || bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		root, err = parseJSON(name, data)
	} else {
		root, err = parseYAML(name, data)
	}
	if err != nil {
		return nil, err
	}
	t := &Topology{Pos: Pos{File: name, Line: 1, Column: 1}}
	if root == nil {
		return t, nil // an empty file describes nothing
	}
	d := decoder{file: name}
	if err := d.decode(root, reflect.ValueOf(t).Elem(), ""); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// yamlLine finds the line yaml.v3 puts in its messages ("yaml: line 3:
// ..."); it gives no column.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func parseYAML(name string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		msg := err.Error()
		pos := Pos{File: name}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			pos.Line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		return nil, &Error{Pos: pos, Msg: msg}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, &Error{Pos: Pos{File: name, Line: more.Line, Column: more.Column}, Msg: "a second document: a topology file holds one"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// parseJSON reads a JSON document into the same tree the YAML parser
// makes, each node at the line and column its token starts at, so that one
// decoder serves both.
func parseJSON(name string, data []byte) (*yaml.Node, error) {
	lines := []int{0} // offsets at which lines start
	for i, c := range data {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	posAt := func(off int64) Pos {
		l := sort.Search(len(lines), func(i int) bool { return lines[i] > int(off) }) - 1
		return Pos{File: name, Line: l + 1, Column: int(off) - lines[l] + 1}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// start is where the token after offset off begins: between tokens
	// there is only white space and the separators.
	start := func(off int64) int64 {
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return off
	}
	fail := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &Error{Pos: posAt(se.Offset), Msg: "bad JSON: " + se.Error()}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return &Error{Pos: posAt(int64(len(data))), Msg: "bad JSON: unexpected end of the file"}
		}
		return &Error{Pos: Pos{File: name}, Msg: "bad JSON: " + err.Error()}
	}
	var value func() (*yaml.Node, error)
	value = func() (*yaml.Node, error) {
		p := posAt(start(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		n := &yaml.Node{Line: p.Line, Column: p.Column}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				n.Kind, n.Tag = yaml.MappingNode, "!!map"
				for dec.More() {
					k, err := value()
					if err != nil {
						return nil, err
					}
					val, err := value()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, k, val)
				}
			case '[':
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
				for dec.More() {
					e, err := value()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, e)
				}
			default:
				return nil, &Error{Pos: p, Msg: fmt.Sprintf("bad JSON: unexpected %q", v)}
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return nil, fail(err)
			}
		case string:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", v
		case json.Number:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!float", v.String()
			if _, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
				n.Tag = "!!int"
			}
		case bool:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", strconv.FormatBool(v)
		case nil:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
		}
		return n, nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	root, err := value()
	if err != nil {
		return nil, err
	}
	if off := start(dec.InputOffset()); off < int64(len(data)) {
		return nil, &Error{Pos: posAt(off), Msg: "bad JSON: text after the document"}
	}
	return root, nil
}

// decoder fills the topology's structs from the parsed tree, strictly:
// the keys are the fields' json names, and every other key, and every
// value of the wrong type, is an error at its place.
type decoder struct{ file string }

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Column: n.Column} }

// errorf is a mistake at n in the entry what ("queues[0].attributes").
func (d *decoder) errorf(n *yaml.Node, what, format string, args ...any) error {
	if what == "" {
		what = "top level"
	}
	return &Error{Pos: d.pos(n), Msg: what + ": " + fmt.Sprintf(format, args...)}
}

// join names a member of the entry what.
func join(what, key string) string {
	if what == "" {
		return key
	}
	return what + "." + key
}

// describe names a node's type for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return n.Value
	case "!!null":
		return "null"
	}
	return strconv.Quote(n.Value)
}

var (
	posType   = reflect.TypeFor[Pos]()
	attrsType = reflect.TypeFor[Attributes]()
	anyType   = reflect.TypeFor[any]()
)

// decode fills v from n; what names v in messages ("queue orders").
func (d *decoder) decode(n *yaml.Node, v reflect.Value, what string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.Type() == anyType {
		doc, err := d.generic(n, what)
		if err != nil {
			return err
		}
		if doc != nil {
			v.Set(reflect.ValueOf(doc))
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.Tag == "!!null" {
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := d.decode(n, p.Elem(), what); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		return d.structure(n, v, what)
	case reflect.Slice:
		if n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return d.errorf(n, what, "want a list, not %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			if err := d.decode(e, s.Index(i), fmt.Sprintf("%s[%d]", what, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map: // map[string]string: tags
		if n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return d.errorf(n, what, "want a map, not %s", describe(n))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			k, e := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.errorf(k, what, "want a name, not %s", describe(k))
			}
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				return d.errorf(k, what, "%q appears twice", k.Value)
			}
			ev := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(e, ev, join(what, k.Value)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k.Value), ev)
		}
		v.Set(m)
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return d.errorf(n, what, "want %s, not %s", kindName(v.Kind()), describe(n))
	}
	switch v.Kind() {
	case reflect.String:
		// A number or a boolean is taken as written: a tag's value of 1.
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Tag != "!!bool" {
			return d.errorf(n, what, "want true or false, not %s", describe(n))
		}
		v.SetBool(n.Value == "true")
	case reflect.Int32, reflect.Int:
		i, err := strconv.ParseInt(n.Value, 10, v.Type().Bits())
		if n.Tag != "!!int" || err != nil {
			return d.errorf(n, what, "want a whole number, not %s", describe(n))
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Tag != "!!int" && n.Tag != "!!float" || err != nil {
			return d.errorf(n, what, "want a number, not %s", describe(n))
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("topology: no decoding of %s", v.Type())
	}
	return nil
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int32, reflect.Int:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	}
	return "a text"
}

// structure fills a struct from a map whose keys are its fields' json
// names.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, what string) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, what, "want a map, not %s", describe(n))
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == posType {
			v.Field(i).Set(reflect.ValueOf(d.pos(n)))
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = i
		names = append(names, name)
	}
	seen := map[string]bool{}
	for i := 0; i < len(n.Content); i += 2 {
		k, e := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return d.errorf(k, what, "want a key, not %s", describe(k))
		}
		fi, ok := fields[k.Value]
		if !ok {
			return d.errorf(k, what, "unknown key %q; want one of %s", k.Value, strings.Join(names, ", "))
		}
		if seen[k.Value] {
			return d.errorf(k, what, "%q appears twice", k.Value)
		}
		seen[k.Value] = true
		f := t.Field(fi)
		if f.Type == attrsType {
			attrs, err := d.attributes(e, attributeKinds[f.Tag.Get("topology")], join(what, k.Value))
			if err != nil {
				return err
			}
			v.Field(fi).Set(reflect.ValueOf(attrs))
			continue
		}
		if err := d.decode(e, v.Field(fi), join(what, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// attributes reads a resource's attributes: each name one it has, each
// value of its kind; a JSON attribute written as a map becomes its
// compact JSON.
func (d *decoder) attributes(n *yaml.Node, kinds map[string]kind, what string) (Attributes, error) {
	if n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errorf(n, what, "want a map, not %s", describe(n))
	}
	attrs := make(Attributes, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k, e := n.Content[i], n.Content[i+1]
		if e.Kind == yaml.AliasNode {
			e = e.Alias
		}
		kd, ok := kinds[k.Value]
		if k.Kind != yaml.ScalarNode || !ok {
			return nil, d.errorf(k, what, "unknown attribute %s; want one of %s", describe(k), strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
		}
		if _, dup := attrs[k.Value]; dup {
			return nil, d.errorf(k, what, "attribute %q appears twice", k.Value)
		}
		val := Value{Pos: d.pos(e)}
		switch {
		case kd == kindJSON && (e.Kind == yaml.MappingNode || e.Kind == yaml.SequenceNode):
			doc, err := d.generic(e, join(what, k.Value))
			if err != nil {
				return nil, err
			}
			val.Text = compactJSON(doc)
		case e.Kind != yaml.ScalarNode || e.Tag == "!!null":
			want := "a text"
			if kd == kindJSON {
				want = "a map or a JSON text"
			}
			return nil, d.errorf(e, what, "attribute %s: want %s, not %s", k.Value, want, describe(e))
		case kd == kindInt && e.Tag != "!!int" && e.Tag != "!!str":
			return nil, d.errorf(e, what, "attribute %s: want a whole number, not %s", k.Value, describe(e))
		case kd == kindBool && e.Tag != "!!bool" && e.Tag != "!!str":
			return nil, d.errorf(e, what, "attribute %s: want true or false, not %s", k.Value, describe(e))
		default:
			// Numbers and booleans may also be written as AWS's strings
			// ("30", "true"); the service judges the text.
			val.Text = e.Value
		}
		attrs[k.Value] = val
	}
	return attrs, nil
}

// generic reads a node as encoding/json would have read its JSON:
// map[string]any, []any, string, json.Number, bool or nil.
func (d *decoder) generic(n *yaml.Node, what string) (any, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, d.errorf(k, what, "want a key, not %s", describe(k))
			}
			if _, dup := m[k.Value]; dup {
				return nil, d.errorf(k, what, "%q appears twice", k.Value)
			}
			e, err := d.generic(n.Content[i+1], join(what, k.Value))
			if err != nil {
				return nil, err
			}
			m[k.Value] = e
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			e, err := d.generic(c, fmt.Sprintf("%s[%d]", what, i))
			if err != nil {
				return nil, err
			}
			s = append(s, e)
		}
		return s, nil
	}
	switch n.Tag {
	case "!!int", "!!float":
		if _, err := strconv.ParseFloat(n.Value, 64); err != nil {
			return nil, d.errorf(n, what, "%s is not a number JSON can hold", n.Value)
		}
		return json.Number(n.Value), nil
	case "!!bool":
		return n.Value == "true", nil
	case "!!null":
		return nil, nil
	}
	return n.Value, nil
}

// check finds the mistakes that span entries: names missing or given
// twice, a bad account or region, a queue named as a dead-letter target
// that the file does not hold, redrive policies in a cycle.
func (t *Topology) check() error {
	if t.Account != "" && !sigv4.IsAccountID(t.Account) {
		return &Error{Pos: t.Pos, Msg: fmt.Sprintf("account %q: want 12 digits", t.Account)}
	}
	if t.Region != "" && !region.Valid(t.Region) {
		return &Error{Pos: t.Pos, Msg: fmt.Sprintf("region %q: not a region", t.Region)}
	}
	queues := map[string]*Queue{}
	for i := range t.Queues {
		q := &t.Queues[i]
		if q.Name == "" {
			return &Error{Pos: q.Pos, Msg: "queue: name is missing"}
		}
		if queues[q.Name] != nil {
			return &Error{Pos: q.Pos, Msg: fmt.Sprintf("queue %s: named twice (first at %s)", q.Name, queues[q.Name].Pos)}
		}
		queues[q.Name] = q
	}
	// A dead-letter target or an sqs endpoint given by name must be one
	// of the file's queues: nothing else would create it.
	named := func(ref string, pos Pos, what string) error {
		if ref == "" || isARN(ref) || queues[ref] != nil {
			return nil
		}
		return &Error{Pos: pos, Msg: fmt.Sprintf("%s: no queue %q in the file (name one of its queues, or give an ARN)", what, ref)}
	}
	for _, q := range t.Queues {
		if v, ok := q.Attributes["RedrivePolicy"]; ok {
			if err := named(deadLetterTarget(v.Text), v.Pos, "queue "+q.Name+": RedrivePolicy"); err != nil {
				return err
			}
		}
	}
	if _, err := queueOrder(t.Queues); err != nil {
		return err
	}
	topics := map[string]*Topic{}
	for i := range t.Topics {
		tp := &t.Topics[i]
		if tp.Name == "" {
			return &Error{Pos: tp.Pos, Msg: "topic: name is missing"}
		}
		if topics[tp.Name] != nil {
			return &Error{Pos: tp.Pos, Msg: fmt.Sprintf("topic %s: named twice (first at %s)", tp.Name, topics[tp.Name].Pos)}
		}
		topics[tp.Name] = tp
		seen := map[[2]string]bool{}
		for _, s := range tp.Subscriptions {
			what := "topic " + tp.Name + ": subscription"
			if s.Protocol == "" || s.Endpoint == "" {
				return &Error{Pos: s.Pos, Msg: what + ": protocol and endpoint are required"}
			}
			if seen[[2]string{s.Protocol, s.Endpoint}] {
				return &Error{Pos: s.Pos, Msg: fmt.Sprintf("%s %s %s: given twice", what, s.Protocol, s.Endpoint)}
			}
			seen[[2]string{s.Protocol, s.Endpoint}] = true
			if s.Protocol == "sqs" {
				if err := named(s.Endpoint, s.Pos, what+" endpoint"); err != nil {
					return err
				}
			}
			if v, ok := s.Attributes["RedrivePolicy"]; ok {
				if err := named(deadLetterTarget(v.Text), v.Pos, what+": RedrivePolicy"); err != nil {
					return err
				}
			}
		}
	}
	alarms := map[string]Pos{}
	for _, a := range t.Alarms {
		if a.AlarmName == "" {
			return &Error{Pos: a.Pos, Msg: "alarm: AlarmName is missing"}
		}
		if first, dup := alarms[a.AlarmName]; dup {
			return &Error{Pos: a.Pos, Msg: fmt.Sprintf("alarm %s: named twice (first at %s)", a.AlarmName, first)}
		}
		alarms[a.AlarmName] = a.Pos
	}
	return nil
}

func isARN(s string) bool { return strings.HasPrefix(s, "arn:") }

// deadLetterTarget is a redrive policy's deadLetterTargetArn, "" when the
// policy has none or is not JSON (the service judges that).
func deadLetterTarget(policy string) string {
	var p struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if json.Unmarshal([]byte(policy), &p) != nil {
		return ""
	}
	return p.DeadLetterTargetArn
}

// queueOrder orders queues so that each dead-letter queue of the file
// comes before the queues that redrive to it, and otherwise as the file
// lists them; a cycle is an error.
func queueOrder(queues []Queue) ([]*Queue, error) {
	index := map[string]int{}
	for i, q := range queues {
		index[q.Name] = i
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(queues))
	order := make([]*Queue, 0, len(queues))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			q := queues[i]
			return &Error{Pos: q.Attributes["RedrivePolicy"].Pos, Msg: fmt.Sprintf("queue %s: redrive policies form a cycle", q.Name)}
		}
		state[i] = visiting
		target := deadLetterTarget(queues[i].Attributes["RedrivePolicy"].Text)
		if a, ok := arn.Split(target); ok {
			target = a.Resource // a full ARN of a queue in the file orders as its name
		}
		if j, ok := index[target]; ok && j != i {
			if err := visit(j); err != nil {
				return err
			}
		}
		state[i] = done
		order = append(order, &queues[i])
		return nil
	}
	for i := range queues {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return order, nil
}
