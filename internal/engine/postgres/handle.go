package postgres

import (
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/handle"
)

// Handles are made and checked by package handle under the key kept in
// the secrets table: every node checks every node's handles, and a forged
// or garbled one is refused before the database is asked.

// handleBatch is a call's handles, parsed: the columns a statement unnests,
// and the handles refused before it.
type handleBatch struct {
	qids, seqs []int64
	gens       []int32
	errs       []error
}

// parseHandles parses a call's handles.
func parseHandles(s *handle.Signer, n int, handleOf func(int) string) handleBatch {
	hb := handleBatch{qids: make([]int64, n), seqs: make([]int64, n), gens: make([]int32, n), errs: make([]error, n)}
	for i := range n {
		r, ok := s.Parse(handleOf(i))
		if !ok {
			hb.errs[i] = engine.ErrReceiptHandleInvalid
			continue
		}
		hb.qids[i], hb.seqs[i], hb.gens[i] = int64(r.Queue), int64(r.Seq), int32(r.Gen)
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
