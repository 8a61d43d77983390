package protocol

import (
	"reflect"
	"strings"
)

// jsonMember reads a field's JSON (and CBOR: Smithy names members alike on
// both wires) name by encoding/json's rules: the json tag's name, else the
// Go field name; json:"-" leaves the member off both wires.
func jsonMember(sf reflect.StructField) (name string, omitEmpty bool) {
	tag, ok := sf.Tag.Lookup("json")
	if !ok {
		return sf.Name, false
	}
	if tag == "-" {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = sf.Name
	}
	for opt := range strings.SplitSeq(opts, ",") {
		if opt == "omitempty" || opt == "omitzero" {
			omitEmpty = true
		}
	}
	return name, omitEmpty
}

// present reports whether a member is written on the JSON and CBOR wires:
// nil pointers, lists and maps never are (Smithy sends no nulls for absent
// members); zero scalars are left out only when tagged omitempty.
func (f *field) present(v reflect.Value) bool {
	return presentMember(f.c.kind, f.omitEmpty, v)
}

func presentMember(k kind, omitEmpty bool, v reflect.Value) bool {
	switch k {
	case kPtr, kList, kMap, kBytes:
		if v.IsNil() {
			return false
		}
		if omitEmpty && k != kPtr {
			return v.Len() > 0
		}
		return true
	}
	return !omitEmpty || !v.IsZero()
}
