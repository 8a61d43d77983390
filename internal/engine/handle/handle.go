// Package handle makes and checks receipt handles, the same for every
// store, so that a handle's form and its protection live in one place.
package handle

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
)

// A receipt handle is base64url(version | queue id | seq | generation | MAC),
// the MAC being HMAC-SHA256 under the store's key, cut to 16 bytes. A
// store never reuses queue ids, seqs or generations, so a handle names one
// receive of one message for good; the MAC makes it unforgeable, and a
// forged or garbled one is refused before any state is looked at.
const (
	handleVersion = 1
	handlePayload = 1 + 8 + 8 + 8
	handleMACLen  = 16
	handleRawLen  = handlePayload + handleMACLen
)

// Len is the length of every handle: handleRawLen bytes in unpadded
// base64, six bits a character.
const Len = (handleRawLen*8 + 5) / 6

// Receipt is what a handle names: one receive (Gen) of the message Seq of
// the queue Queue.
type Receipt struct {
	Queue, Seq, Gen uint64
}

// Signer signs and checks handles under one key; it is safe for
// concurrent use.
type Signer struct {
	pool sync.Pool // of *macState, all keyed with the store's key
}

// macState keeps a keyed MAC and a scratch buffer together, so that neither
// signing nor checking allocates beyond the handle string itself.
type macState struct {
	h   hash.Hash
	buf [handlePayload + sha256.Size]byte
	src [64]byte
}

// NewSigner returns a Signer under key.
func NewSigner(key []byte) *Signer {
	key = append([]byte(nil), key...)
	return &Signer{pool: sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, key)} }}}
}

// mac appends the MAC of buf's payload after it, in buf.
func (st *macState) mac() []byte {
	st.h.Reset()
	st.h.Write(st.buf[:handlePayload])
	return st.h.Sum(st.buf[:handlePayload])
}

// Sign returns r's handle.
func (s *Signer) Sign(r Receipt) string {
	return string(s.AppendSigned(nil, r))
}

// AppendSigned appends r's handle (Len bytes) to dst.
func (s *Signer) AppendSigned(dst []byte, r Receipt) []byte {
	st := s.pool.Get().(*macState)
	defer s.pool.Put(st)
	st.buf[0] = handleVersion
	binary.BigEndian.PutUint64(st.buf[1:9], r.Queue)
	binary.BigEndian.PutUint64(st.buf[9:17], r.Seq)
	binary.BigEndian.PutUint64(st.buf[17:25], r.Gen)
	st.mac()
	return base64.RawURLEncoding.AppendEncode(dst, st.buf[:handleRawLen])
}

// Parse checks a handle's form and MAC; it knows nothing of queue state.
func (s *Signer) Parse(h string) (Receipt, bool) {
	if len(h) != Len {
		return Receipt{}, false
	}
	st := s.pool.Get().(*macState)
	defer s.pool.Put(st)
	var raw [handleRawLen]byte
	n, err := base64.RawURLEncoding.Decode(raw[:], st.src[:copy(st.src[:], h)])
	if err != nil || n != handleRawLen || raw[0] != handleVersion {
		return Receipt{}, false
	}
	copy(st.buf[:handlePayload], raw[:handlePayload])
	if !hmac.Equal(st.mac()[handlePayload:handleRawLen], raw[handlePayload:]) {
		return Receipt{}, false
	}
	return Receipt{
		Queue: binary.BigEndian.Uint64(raw[1:9]),
		Seq:   binary.BigEndian.Uint64(raw[9:17]),
		Gen:   binary.BigEndian.Uint64(raw[17:25]),
	}, true
}
