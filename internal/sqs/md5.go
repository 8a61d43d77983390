package sqs

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/ferrymq/ferry/internal/engine"
)

// SDKs check these digests (the Java SDK throws on a mismatch), so they
// follow AWS's algorithm to the byte.

// md5Hex is the lowercase hex MD5 of s.
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Transport bytes that tell a string value from a binary one in the
// attribute digest.
const (
	transportString byte = 1
	transportBinary byte = 2
)

// md5OfAttributes digests message attributes that are already sorted by
// name: for each, the length-prefixed name, the length-prefixed data type,
// a transport byte and the length-prefixed value. It is "" for none.
func md5OfAttributes(attrs []engine.MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var b []byte
	for _, a := range attrs {
		b = appendPrefixed(b, a.Name)
		b = appendPrefixed(b, a.DataType)
		if isBinaryType(a.DataType) {
			b = append(b, transportBinary)
			b = appendPrefixed(b, a.BinaryValue)
		} else {
			b = append(b, transportString)
			b = appendPrefixed(b, a.StringValue)
		}
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func appendPrefixed[T string | []byte](b []byte, v T) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// traceHeaderAttrs is the system attribute map AWSTraceHeader forms.
func traceHeaderAttrs(trace string) []engine.MessageAttribute {
	if trace == "" {
		return nil
	}
	return []engine.MessageAttribute{{Name: sysAttrTraceHeader, DataType: "String", StringValue: trace}}
}

// baseType is a data type without its custom suffix ("Number" of "Number.float").
func baseType(dataType string) string {
	base, _, _ := strings.Cut(dataType, ".")
	return base
}

func isBinaryType(dataType string) bool { return baseType(dataType) == "Binary" }
