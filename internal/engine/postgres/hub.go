package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrymq/ferry/internal/clock"
)

// The hub is the node's one listening connection. Statements that make a
// message visible, or visible soon, send pg_notify(channel, "qid:at") in
// their own transaction, so PostgreSQL delivers it after commit, to every
// node; the hub hands it to this node's waiters on that queue. A waiter
// told of a time still to come arms a timer on the clock instead. The
// statements answer their notes too, and the call that ran one
// tells this node's waiters itself once it has committed (Store.tell),
// before it returns: a notification arrives when it will, and a step of a
// controlled clock that made a message visible later must not end before
// the waiting poll has armed its timer for it. The notification comes to
// this node as well, later: a waiter told twice looks once more. A
// change to a queue sends "view:" + its key, which drops the node's view
// of it (views.go); a change to a record sends a "rec:" note (recordNote), which
// the hub passes on to the services of the other nodes (cluster.go).

// hub fans notifications out to the waiters of each queue.
type hub struct {
	log     *slog.Logger
	clock   clock.Clock // whose steps wait for the waiters this node tells
	node    string      // this node: its own record notes are not passed on
	views   *views      // the queue views notifications drop
	records atomic.Pointer[func(kind, key string)]
	cancel  context.CancelFunc
	stopped chan struct{}

	mu      sync.Mutex
	waiters map[int64]map[*waiter]struct{}
	lost    string // why the listening connection is down; "" while up
}

// waiter is one long poll's mailbox: the earliest time it was told of
// since it last looked, the holds of the steps that told it, and a
// signal. Being told again, of the same time or another, only moves the
// earliest time, so a note told twice costs at most one more look.
type waiter struct {
	qid    int64
	signal chan struct{}

	mu     sync.Mutex
	told   bool
	soonst int64
	holds  []func()
}

// tell records that a message of the queue is visible from at (ns) on;
// hold, if not nil, is released once the poll has looked (take).
func (w *waiter) tell(at int64, hold func()) {
	w.mu.Lock()
	if !w.told || at < w.soonst {
		w.soonst = at
	}
	w.told = true
	if hold != nil {
		w.holds = append(w.holds, hold)
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// take returns the earliest time told since the last take, and the
// release of the holds that came with it (nil without any): the poll
// calls it once it has acted on the time, armed its timer or looked.
func (w *waiter) take() (int64, func(), bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok, holds := w.soonst, w.told, w.holds
	w.told, w.holds = false, nil
	if len(holds) == 0 {
		return at, nil, ok
	}
	return at, func() { releaseAll(holds) }, ok
}

// drop releases the holds of tells the poll will not look at.
func (w *waiter) drop() {
	w.mu.Lock()
	holds := w.holds
	w.holds = nil
	w.mu.Unlock()
	releaseAll(holds)
}

func releaseAll(holds []func()) {
	for _, rel := range holds {
		rel()
	}
}

// reconnectDelay paces reconnection attempts of the listening connection
// (network time, not broker time).
const (
	reconnectDelay   = 500 * time.Millisecond
	reconnectTimeout = 10 * time.Second
)

// startHub connects the listening connection and returns once it listens.
func startHub(ctx context.Context, cc *pgx.ConnConfig, channel, node string, views *views, clk clock.Clock, log *slog.Logger) (*hub, error) {
	conn, err := listen(ctx, cc, channel)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	h := &hub{log: log, clock: clk, node: node, views: views, cancel: cancel, stopped: make(chan struct{}), waiters: map[int64]map[*waiter]struct{}{}}
	go h.run(runCtx, conn, cc, channel)
	return h, nil
}

func listen(ctx context.Context, cc *pgx.ConnConfig, channel string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: connect the listener: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	return conn, nil
}

// run delivers notifications until stopped, reconnecting when the
// connection drops. Notifications sent while it was down are lost, so
// every waiter is woken once it listens again and looks for itself.
func (h *hub) run(ctx context.Context, conn *pgx.Conn, cc *pgx.ConnConfig, channel string) {
	defer close(h.stopped)
	for {
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				_ = conn.Close(context.Background())
				if ctx.Err() != nil {
					return
				}
				h.setLost(err)
				h.log.Warn("postgres: the listening connection dropped", "err", err)
				break
			}
			if key, ok := strings.CutPrefix(n.Payload, "view:"); ok {
				h.views.drop(key)
				continue
			}
			if rec, ok := strings.CutPrefix(n.Payload, "rec:"); ok {
				h.recordChanged(rec)
				continue
			}
			qid, at, ok := parseNote(n.Payload)
			if !ok {
				h.log.Warn("postgres: unknown notification", "payload", n.Payload)
				continue
			}
			h.deliver(qid, at)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(reconnectDelay): // the wall clock: a retry of I/O
			}
			// Bounded, so that a database that does not answer at all is
			// tried again rather than waited on until TCP gives up.
			actx, cancel := context.WithTimeout(ctx, reconnectTimeout)
			c, err := listen(actx, cc, channel)
			cancel()
			if err == nil {
				conn = c
				break
			}
			h.setLost(err)
		}
		h.setLost(nil)
		h.views.dropAll()
		h.wakeAll()
		if fn := h.records.Load(); fn != nil {
			(*fn)("", "")
		}
	}
}

// watchRecords sets the function told of other nodes' record changes.
func (h *hub) watchRecords(fn func(kind, key string)) { h.records.Store(&fn) }

// recordChanged passes a record note of another node on.
func (h *hub) recordChanged(p string) {
	node, kind, key, ok := parseRecordNote(p)
	if !ok {
		h.log.Warn("postgres: unknown notification", "payload", "rec:"+p)
		return
	}
	if fn := h.records.Load(); fn != nil && node != h.node {
		(*fn)(kind, key)
	}
}

func (h *hub) setLost(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lost = ""
	if err != nil {
		h.lost = "database connection lost: " + err.Error()
	}
}

// down says why the hub is not listening; "" while it is.
func (h *hub) down() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

func (h *hub) stop() {
	h.cancel()
	<-h.stopped
}

// note is the payload for a message of queue qid visible from at.
func note(qid, at int64) string {
	return strconv.FormatInt(qid, 10) + ":" + strconv.FormatInt(at, 10)
}

// notesSQL answers the notes of a statement's CTE n, whose rows (qid, at)
// are the notes it gives notify_waiters (which sends each only while some
// node waits on the queue): two arrays, in the order of the queues, that
// notes.dst scans.
const notesSQL = `coalesce((SELECT array_agg(n.qid ORDER BY n.qid) FROM n), '{}'),
	coalesce((SELECT array_agg(n.at ORDER BY n.qid) FROM n), '{}')`

// notes are the notes of statements: a message of queue qids[i] is visible
// from ats[i] on.
type notes struct{ qids, ats []int64 }

// dst are the destinations of notesSQL's columns.
func (n *notes) dst() []any { return []any{&n.qids, &n.ats} }

func (n *notes) add(m notes) {
	n.qids = append(n.qids, m.qids...)
	n.ats = append(n.ats, m.ats...)
}

// tell hands the notes of statements this node has committed to its own
// waiters (hub.tellOwn). Call it after the commit, before the call that
// made the change returns.
func (s *Store) tell(n notes) {
	for i, qid := range n.qids {
		s.hub.tellOwn(qid, n.ats[i])
	}
}

func parseNote(p string) (qid, at int64, ok bool) {
	a, b, found := strings.Cut(p, ":")
	if !found {
		return 0, 0, false
	}
	qid, err1 := strconv.ParseInt(a, 10, 64)
	at, err2 := strconv.ParseInt(b, 10, 64)
	return qid, at, errors.Join(err1, err2) == nil
}

func (h *hub) subscribe(qid int64) *waiter {
	w := &waiter{qid: qid, signal: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.waiters[qid]
	if ws == nil {
		ws = map[*waiter]struct{}{}
		h.waiters[qid] = ws
	}
	ws[w] = struct{}{}
	return w
}

// unsubscribe ends w's wait; no tell reaches it afterwards.
func (h *hub) unsubscribe(w *waiter) {
	h.mu.Lock()
	ws := h.waiters[w.qid]
	delete(ws, w)
	if len(ws) == 0 {
		delete(h.waiters, w.qid)
	}
	h.mu.Unlock()
	w.drop()
}

// deliver hands a notification to the waiters of queue qid.
func (h *hub) deliver(qid, at int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters[qid] {
		w.tell(at, nil)
	}
}

// tellOwn hands the note of a change this node committed to its waiters
// of queue qid, each with a hold of a controlled clock's step (clock.Hold),
// released once that poll has looked: the step that made the change waits
// for the polls to take what it made visible or arm their timers.
func (h *hub) tellOwn(qid, at int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters[qid] {
		w.tell(at, clock.Hold(h.clock))
	}
}

func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ws := range h.waiters {
		for w := range ws {
			w.tell(math.MinInt64, nil)
		}
	}
}
