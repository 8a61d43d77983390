package embedded

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// The SNS FIFO topics' sequences (engine.Sequencer) live in memory: the
// store has one node, so memory is where every publish meets, and a
// publish costs no write of its own. A restart forgets the deduplication
// windows, and the numbers, made of the clock's microseconds, go on
// growing past those handed out before.

// sequences are the sequences by name.
type sequences struct {
	mu sync.Mutex
	m  map[string]*sequence
}

// sequence is one topic's. sequences.mu is never held while a
// sequence's mu is taken.
type sequence struct {
	mu sync.Mutex
	// dropped: DropSequence took it out of sequences.m; a caller that
	// got it before takes the new one.
	dropped bool
	// The last number: a microsecond stamp and a counter below 10^6.
	micros, n int64
	keys      map[string]claimedKey
	expiry    []expiringKey // in the order they expire
}

type claimedKey struct {
	id, number string
	expires    time.Time
}

type expiringKey struct {
	key     string
	expires time.Time
}

// get returns the sequence called name, made if missing.
func (ss *sequences) get(name string) *sequence {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[string]*sequence{}
	}
	q := ss.m[name]
	if q == nil {
		q = &sequence{keys: map[string]claimedKey{}}
		ss.m[name] = q
	}
	return q
}

// Sequence implements engine.Sequencer.
func (e *Engine) Sequence(ctx context.Context, name string, now time.Time, claims []engine.SequenceClaim) ([]engine.SequenceTicket, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	for {
		q := e.seqs.get(name)
		q.mu.Lock()
		if q.dropped { // dropped between get and lock: take the new one
			q.mu.Unlock()
			continue
		}
		out := q.take(now, claims)
		q.mu.Unlock()
		return out, nil
	}
}

// take numbers claims. The caller holds q.mu.
func (q *sequence) take(now time.Time, claims []engine.SequenceClaim) []engine.SequenceTicket {
	q.expire(now)
	out := make([]engine.SequenceTicket, len(claims))
	for i, c := range claims {
		if k, ok := q.keys[c.Key]; ok {
			out[i] = engine.SequenceTicket{Number: k.number, ID: k.id, Duplicate: true}
			continue
		}
		if stamp := now.UnixMicro(); stamp > q.micros {
			q.micros, q.n = stamp, 0
		} else if q.n++; q.n > 999_999 {
			q.micros, q.n = q.micros+1, 0
		}
		number := strconv.FormatInt(q.micros, 10) + pad6(q.n)
		exp := now.Add(engine.DeduplicationWindow)
		q.keys[c.Key] = claimedKey{id: c.ID, number: number, expires: exp}
		q.expiry = append(q.expiry, expiringKey{key: c.Key, expires: exp})
		out[i] = engine.SequenceTicket{Number: number, ID: c.ID}
	}
	return out
}

// expire forgets the keys whose window has ended. The caller holds q.mu.
func (q *sequence) expire(now time.Time) {
	n := 0
	for n < len(q.expiry) && !now.Before(q.expiry[n].expires) {
		if k, ok := q.keys[q.expiry[n].key]; ok && !now.Before(k.expires) {
			delete(q.keys, q.expiry[n].key)
		}
		n++
	}
	q.expiry = q.expiry[n:]
}

// pad6 writes n (below 10^6) in six digits.
func pad6(n int64) string {
	s := strconv.FormatInt(n, 10)
	return "000000"[len(s):] + s
}

// ReleaseSequence implements engine.Sequencer.
func (e *Engine) ReleaseSequence(ctx context.Context, name string, claims []engine.SequenceClaim) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	e.seqs.mu.Lock()
	q := e.seqs.m[name]
	e.seqs.mu.Unlock()
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range claims {
		if k, ok := q.keys[c.Key]; ok && k.id == c.ID {
			delete(q.keys, c.Key)
		}
	}
	return nil
}

// DropSequence implements engine.Sequencer.
func (e *Engine) DropSequence(ctx context.Context, name string) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	e.seqs.mu.Lock()
	q := e.seqs.m[name]
	delete(e.seqs.m, name)
	e.seqs.mu.Unlock()
	if q != nil {
		q.mu.Lock()
		q.dropped = true
		q.mu.Unlock()
	}
	return nil
}

var _ engine.Sequencer = (*Engine)(nil)
