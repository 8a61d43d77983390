package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Formats Encode writes.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// Encode writes t as a file Load reads back: YAML or JSON, the same
// document either way. Keys come in the order the format documents them,
// attributes and tags sorted; an attribute is written as its type (a
// number, a boolean, a JSON policy as a map).
func Encode(t *Topology, format string) ([]byte, error) {
	n := nodeOf(reflect.ValueOf(*t), "")
	switch format {
	case FormatYAML, "":
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return nil, fmt.Errorf("encode topology: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("encode topology: %w", err)
		}
		return b.Bytes(), nil
	case FormatJSON:
		var b bytes.Buffer
		writeJSON(&b, n)
		var out bytes.Buffer
		if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
			return nil, fmt.Errorf("encode topology: %w", err)
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	return nil, fmt.Errorf("unknown format %q: want yaml or json", format)
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// number is a scalar of a number's text: an integer's tag when it is one,
// so that YAML writes it plainly.
func number(s string) *yaml.Node {
	tag := "!!float"
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		tag = "!!int"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}
}

func add(m *yaml.Node, key string, v *yaml.Node) { m.Content = append(m.Content, str(key), v) }

// nodeOf is the tree of a topology value, along the fields' json names;
// empty fields are left out. attrs names the attribute table of an
// Attributes value.
func nodeOf(v reflect.Value, attrs string) *yaml.Node {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		}
		if v.Kind() == reflect.Interface {
			return genericNode(v.Interface())
		}
		return nodeOf(v.Elem(), attrs)
	case reflect.Struct:
		m := mapping()
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || opts == "omitempty" && v.Field(i).IsZero() || v.Field(i).Kind() == reflect.Slice && v.Field(i).Len() == 0 {
				continue
			}
			add(m, name, nodeOf(v.Field(i), f.Tag.Get("topology")))
		}
		return m
	case reflect.Slice:
		s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := range v.Len() {
			s.Content = append(s.Content, nodeOf(v.Index(i), ""))
		}
		return s
	case reflect.Map:
		m := mapping()
		if v.Type() == attrsType {
			a := v.Interface().(Attributes)
			for _, name := range slices.Sorted(maps.Keys(a)) {
				add(m, name, attributeNode(a[name].Text, attributeKinds[attrs][name]))
			}
			return m
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		for _, k := range keys {
			add(m, k.String(), nodeOf(v.MapIndex(k), ""))
		}
		return m
	case reflect.String:
		return str(v.String())
	case reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return number(strconv.FormatInt(v.Int(), 10))
	case reflect.Float64:
		return number(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	}
	return str(fmt.Sprint(v.Interface()))
}

// attributeNode writes an attribute's text as its kind: a number, a
// boolean, a JSON object as a map; as text when it is not one.
func attributeNode(text string, k kind) *yaml.Node {
	switch k {
	case kindInt:
		if _, err := strconv.ParseInt(text, 10, 64); err == nil {
			return number(text)
		}
	case kindBool:
		if text == "true" || text == "false" {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: text}
		}
	case kindJSON:
		if doc, ok := parseObject(text); ok {
			return genericNode(doc)
		}
	}
	return str(text)
}

// genericNode is the tree of a decoded JSON document, keys sorted.
func genericNode(doc any) *yaml.Node {
	switch d := doc.(type) {
	case map[string]any:
		m := mapping()
		for _, k := range slices.Sorted(maps.Keys(d)) {
			add(m, k, genericNode(d[k]))
		}
		return m
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range d {
			s.Content = append(s.Content, genericNode(e))
		}
		return s
	case string:
		return str(d)
	case json.Number:
		return number(d.String())
	case float64:
		return number(strconv.FormatFloat(d, 'g', -1, 64))
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(d)}
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	return str(fmt.Sprint(doc))
}

// writeJSON writes the tree as compact JSON, keys in the tree's order.
func writeJSON(b *bytes.Buffer, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, n.Content[i])
			b.WriteByte(':')
			writeJSON(b, n.Content[i+1])
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	default:
		switch n.Tag {
		case "!!int", "!!float", "!!bool", "!!null":
			b.WriteString(n.Value)
		default:
			enc := json.NewEncoder(b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(n.Value) // a string always encodes
			b.Truncate(b.Len() - 1) // the encoder's newline
		}
	}
}
