package embedded

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"

	"github.com/ferrymq/ferry/internal/engine"
)

// A receipt handle is base64url(version | queue id | seq | generation | MAC),
// the MAC being HMAC-SHA256 under the store's key, cut to 16 bytes. Queue
// ids, seqs and generations are never reused (see ids), so a handle names
// one receive of one message for good; the MAC makes it unforgeable.
const (
	handleVersion = 1
	handlePayload = 1 + 8 + 8 + 8
	handleMACLen  = 16
	handleRawLen  = handlePayload + handleMACLen
)

var handleLen = base64.RawURLEncoding.EncodedLen(handleRawLen)

type receipt struct {
	qid, seq, gen uint64
}

type handleSigner struct {
	pool sync.Pool // of *macState, all keyed with the store's key
}

// macState keeps a keyed MAC and a scratch buffer together, so that neither
// signing nor checking allocates beyond the handle string itself.
type macState struct {
	h   hash.Hash
	buf [handlePayload + sha256.Size]byte
	src [64]byte
}

func newHandleSigner(key []byte) *handleSigner {
	key = append([]byte(nil), key...)
	return &handleSigner{pool: sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, key)} }}}
}

// mac appends the MAC of buf's payload after it, in buf.
func (st *macState) mac() []byte {
	st.h.Reset()
	st.h.Write(st.buf[:handlePayload])
	return st.h.Sum(st.buf[:handlePayload])
}

func (s *handleSigner) sign(r receipt) string {
	return string(s.appendSigned(nil, r))
}

// appendSigned appends r's handle (handleLen bytes) to dst.
func (s *handleSigner) appendSigned(dst []byte, r receipt) []byte {
	st := s.pool.Get().(*macState)
	defer s.pool.Put(st)
	st.buf[0] = handleVersion
	binary.BigEndian.PutUint64(st.buf[1:9], r.qid)
	binary.BigEndian.PutUint64(st.buf[9:17], r.seq)
	binary.BigEndian.PutUint64(st.buf[17:25], r.gen)
	st.mac()
	return base64.RawURLEncoding.AppendEncode(dst, st.buf[:handleRawLen])
}

// parse checks a handle's form and MAC; it knows nothing of queue state.
func (s *handleSigner) parse(h string) (receipt, bool) {
	if len(h) != handleLen {
		return receipt{}, false
	}
	st := s.pool.Get().(*macState)
	defer s.pool.Put(st)
	var raw [handleRawLen]byte
	n, err := base64.RawURLEncoding.Decode(raw[:], st.src[:copy(st.src[:], h)])
	if err != nil || n != handleRawLen || raw[0] != handleVersion {
		return receipt{}, false
	}
	copy(st.buf[:handlePayload], raw[:handlePayload])
	if !hmac.Equal(st.mac()[handlePayload:handleRawLen], raw[handlePayload:]) {
		return receipt{}, false
	}
	return receipt{
		qid: binary.BigEndian.Uint64(raw[1:9]),
		seq: binary.BigEndian.Uint64(raw[9:17]),
		gen: binary.BigEndian.Uint64(raw[17:25]),
	}, true
}

// parseHandles checks every handle's MAC before any lock is taken; the
// caller checks that each names its queue (ownReceipt).
func (e *Engine) parseHandles(n int, handle func(int) string) ([]receipt, []error) {
	rs := make([]receipt, n)
	errs := make([]error, n)
	for i := range n {
		r, ok := e.signer.parse(handle(i))
		if !ok {
			errs[i] = engine.ErrReceiptHandleInvalid
			continue
		}
		rs[i] = r
	}
	return rs, errs
}

// ownReceipt reports whether the i-th of parseHandles' receipts is valid
// for q, failing it if it is another queue's.
func (q *queue) ownReceipt(rs []receipt, errs []error, i int) bool {
	if errs[i] == nil && rs[i].qid != q.id {
		errs[i] = engine.ErrReceiptHandleInvalid
	}
	return errs[i] == nil
}
