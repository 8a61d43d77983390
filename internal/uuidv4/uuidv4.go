// Package uuidv4 writes UUIDs of version 4, as SQS message ids and AWS
// request ids are, into buffers the caller already has: the hot paths
// make them by the batch and keep them in memory made for the request.
package uuidv4

import "encoding/hex"

// Len is the length of a UUID in its text form.
const Len = 36

// Encode writes u, with the version-4 and RFC 4122 variant bits set, in
// its text form (8-4-4-4-12 lower-case hex digits) into dst.
func Encode(dst *[Len]byte, u [16]byte) {
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	hex.Encode(dst[0:8], u[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], u[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], u[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], u[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:], u[10:])
}
