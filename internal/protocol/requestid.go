package protocol

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"unsafe"
)

// requestIDs hands out request ids shaped as AWS's (version 4 UUIDs): 64
// random bits drawn once, then a counter, so that an id costs no read from
// the system's random source per request. Ids stay unique across restarts
// through the random half. The zero value is ready to use.
type requestIDs struct {
	once   sync.Once
	prefix [8]byte
	n      atomic.Uint64
}

// requestIDLen is the length of a request id.
const requestIDLen = 36

// format writes the next id into s and returns it as a string that shares
// s's memory, which saves an allocation when s lives in a value made for
// the request anyway: s must not change afterwards.
func (r *requestIDs) format(s *[requestIDLen]byte) string {
	r.once.Do(func() { _, _ = rand.Read(r.prefix[:]) }) // crypto/rand.Read never fails
	var u [16]byte
	copy(u[:8], r.prefix[:])
	binary.BigEndian.PutUint64(u[8:], r.n.Add(1))
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return unsafe.String(&s[0], len(s))
}
