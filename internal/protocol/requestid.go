package protocol

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ferrymq/ferry/internal/uuidv4"
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
const requestIDLen = uuidv4.Len

// format writes the next id into s and returns it as a string that shares
// s's memory, which saves an allocation when s lives in a value made for
// the request anyway: s must not change afterwards.
func (r *requestIDs) format(s *[requestIDLen]byte) string {
	r.once.Do(func() { _, _ = rand.Read(r.prefix[:]) }) // crypto/rand.Read never fails
	var u [16]byte
	copy(u[:8], r.prefix[:])
	binary.BigEndian.PutUint64(u[8:], r.n.Add(1))
	uuidv4.Encode(s, u)
	return unsafe.String(&s[0], len(s))
}
