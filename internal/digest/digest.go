// Package digest computes the MD5 digests SQS attaches to a message
// (MD5OfMessageBody, MD5OfMessageAttributes). SDKs check them (the Java SDK
// throws on a mismatch), so they follow AWS's algorithm byte for byte. Every
// message enters a queue through package sqs, which computes them here, and
// receives answer with them.
package digest

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"unsafe"

	"github.com/ferrymq/ferry/internal/engine"
)

// MD5Hex is the lowercase hex MD5 of s. It runs for every message sent, so
// it reads s in place rather than through a copy, and allocates only the
// result.
func MD5Hex(s string) string {
	sum := md5.Sum(unsafe.Slice(unsafe.StringData(s), len(s))) // md5 only reads it
	var buf [2 * md5.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:])
}

// Transport bytes that tell a string value from a binary one.
const (
	transportString byte = 1
	transportBinary byte = 2
)

// MD5OfAttributes digests message attributes already sorted by name: for
// each, the length-prefixed name, the length-prefixed data type, a
// transport byte and the length-prefixed value. It is "" for none.
func MD5OfAttributes(attrs []engine.MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var b []byte
	for _, a := range attrs {
		b = appendPrefixed(b, a.Name)
		b = appendPrefixed(b, a.DataType)
		if IsBinaryType(a.DataType) {
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

// IsBinaryType reports whether a data type ("Binary", "Binary.gif") carries
// a binary value.
func IsBinaryType(dataType string) bool {
	base, _, _ := strings.Cut(dataType, ".")
	return base == "Binary"
}
