package postgres

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/ferrymq/ferry/internal/engine"
)

// A receipt handle is base64url(queue id | seq | generation | MAC), the MAC
// being HMAC-SHA256 under the key kept in the secrets table, cut to 16
// bytes: every node checks every node's handles, and a forged or garbled
// one is refused before the database is asked.
const (
	receiptLen = 8 + 8 + 4
	macLen     = 16
)

type receipt struct {
	qid, seq int64
	gen      int32
}

type signer struct{ key []byte }

func newSigner(key []byte) *signer { return &signer{key: append([]byte(nil), key...)} }

func (s *signer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)[:macLen]
}

func (s *signer) sign(r receipt) string {
	var b [receiptLen + macLen]byte
	binary.BigEndian.PutUint64(b[0:], uint64(r.qid))
	binary.BigEndian.PutUint64(b[8:], uint64(r.seq))
	binary.BigEndian.PutUint32(b[16:], uint32(r.gen))
	copy(b[receiptLen:], s.mac(b[:receiptLen]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *signer) parse(h string) (receipt, bool) {
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil || len(b) != receiptLen+macLen || !hmac.Equal(s.mac(b[:receiptLen]), b[receiptLen:]) {
		return receipt{}, false
	}
	return receipt{
		qid: int64(binary.BigEndian.Uint64(b[0:])),
		seq: int64(binary.BigEndian.Uint64(b[8:])),
		gen: int32(binary.BigEndian.Uint32(b[16:])),
	}, true
}

// handleBatch is a call's handles, parsed: the columns a statement unnests,
// and the handles refused before it.
type handleBatch struct {
	qids, seqs []int64
	gens       []int32
	errs       []error
}

func (s *signer) parseAll(n int, handle func(int) string) handleBatch {
	hb := handleBatch{qids: make([]int64, n), seqs: make([]int64, n), gens: make([]int32, n), errs: make([]error, n)}
	for i := range n {
		r, ok := s.parse(handle(i))
		if !ok {
			hb.errs[i] = engine.ErrReceiptHandleInvalid
			continue
		}
		hb.qids[i], hb.seqs[i], hb.gens[i] = r.qid, r.seq, r.gen
	}
	return hb
}

// own fails the handles that belong to another queue than qid.
func (hb handleBatch) own(qid int64) {
	for i, q := range hb.qids {
		if hb.errs[i] == nil && q != qid {
			hb.errs[i] = engine.ErrReceiptHandleInvalid
		}
	}
}
