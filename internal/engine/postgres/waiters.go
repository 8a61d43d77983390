package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Notifications only for queues that have waiters. A notification costs
// every committing transaction that sends one PostgreSQL's lock on the
// notification queue, so statements that make a message visible notify
// through notify_waiters, which sends only when some node has a row in
// waiters for the queue. A node writes its row before a long poll's
// second look, for waitFor, and writes it again only when less than
// waitRenew is left, so that a consumer polling in a loop writes about
// once every 30 s, not on every poll. A node that dies stops being
// notified for when its rows run out; the janitor deletes them later.
//
// No wake-up is lost: the registration takes an exclusive advisory lock
// on the queue, which notify_waiters holds shared to its commit. So a send
// either commits before the registration does, and the long poll's look
// after registering sees its message, or reads waiters after the
// registration committed, and notifies.
const (
	waitFor   = time.Minute
	waitRenew = maxLongPoll + 10*time.Second
)

// registrations are this node's rows in waiters, as far as it knows.
type registrations struct {
	mu sync.Mutex
	m  map[int64]*registration
}

// registration is one write of a row; done is closed once it has ended,
// and until (this node's clock, real time) is then when it lapses.
type registration struct {
	done  chan struct{}
	err   error
	until time.Time
}

// register makes sure that this node's row in waiters for queue qid lasts
// at least waitRenew more. Concurrent long polls on the queue share one
// write.
func (s *Store) register(ctx context.Context, qid int64) error {
	rs := &s.waiting
	for {
		rs.mu.Lock()
		if rs.m == nil {
			rs.m = map[int64]*registration{}
		}
		r := rs.m[qid]
		if r != nil {
			select {
			case <-r.done:
				if r.err == nil && time.Until(r.until) > waitRenew {
					rs.mu.Unlock()
					return nil
				}
			default:
				rs.mu.Unlock()
				select {
				case <-r.done:
					continue
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		now := time.Now()
		for q, old := range rs.m { // forget the lapsed ones
			select {
			case <-old.done:
				if now.After(old.until) {
					delete(rs.m, q)
				}
			default:
			}
		}
		r = &registration{done: make(chan struct{})}
		rs.m[qid] = r
		rs.mu.Unlock()
		_, r.err = s.pool.Exec(ctx, `
			WITH l AS (SELECT pg_advisory_xact_lock(hashtextextended($1, $2)))
			INSERT INTO waiters (queue_id, node, until) SELECT $2, $3, now() + $4 FROM l
			ON CONFLICT (queue_id, node) DO UPDATE SET until = excluded.until`,
			s.channel, qid, s.node, waitFor)
		// The row lasts waitFor from the statement's start on the
		// database's clock, which is after now.
		r.until = now.Add(waitFor)
		close(r.done)
		if r.err != nil {
			return fmt.Errorf("register a long poll: %w", r.err)
		}
		return nil
	}
}

// unregister deletes this node's rows, so that senders stop notifying
// at once; a node that cannot leaves them to lapse.
func (s *Store) unregister() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM waiters WHERE node = $1`, s.node); err != nil {
		s.log.Warn("postgres: delete this node's long-poll registrations", "err", err)
	}
}
