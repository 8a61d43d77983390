package embedded

import (
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/handle"
)

// parseHandles checks every handle's MAC before any lock is taken; the
// caller checks that each names its queue (ownReceipt).
func (e *Engine) parseHandles(n int, handleOf func(int) string) ([]handle.Receipt, []error) {
	rs := make([]handle.Receipt, n)
	errs := make([]error, n)
	for i := range n {
		r, ok := e.signer.Parse(handleOf(i))
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
func (q *queue) ownReceipt(rs []handle.Receipt, errs []error, i int) bool {
	if errs[i] == nil && rs[i].Queue != q.id {
		errs[i] = engine.ErrReceiptHandleInvalid
	}
	return errs[i] == nil
}
