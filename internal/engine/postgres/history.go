package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// A message's history is the jsonb column history of its state row
// (migrations/0011_history.sql): a receive adds its event in the UPDATE
// that hands the message out, a move in the INSERT that moves the row.

// storedHistory is the column's value.
type storedHistory struct {
	Dropped int           `json:"dropped"`
	Events  []storedEvent `json:"events"`
}

// storedEvent is one event as the statements build it.
type storedEvent struct {
	Kind    string `json:"kind"`
	At      int64  `json:"at"`
	Count   int    `json:"count"`
	Visible int64  `json:"visible,omitempty"`
	IP      string `json:"ip,omitempty"`
	UA      string `json:"ua,omitempty"`
	Key     string `json:"key,omitempty"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Prev    string `json:"prev,omitempty"`
	// An SNS delivery attempt's.
	Endpoint string `json:"endpoint,omitempty"`
	Status   int    `json:"status,omitempty"`
	Error    string `json:"error,omitempty"`
	Latency  int64  `json:"latency,omitempty"`
	Phase    string `json:"phase,omitempty"`
	Fault    string `json:"fault,omitempty"`
}

func storedEventOf(ev *engine.HistoryEvent) storedEvent {
	return storedEvent{
		Kind: string(ev.Kind), At: ev.At.UnixNano(), Count: ev.ReceiveCount, Visible: nsOf(ev.VisibleAt),
		IP: ev.SourceIP, UA: ev.UserAgent, Key: ev.AccessKey, From: ev.From, To: ev.To, Cause: ev.Cause, Prev: ev.PreviousID,
		Endpoint: ev.Endpoint, Status: ev.Status, Error: ev.Error, Latency: int64(ev.Latency), Phase: ev.Phase, Fault: ev.Fault,
	}
}

func nsOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// encodeHistory is h as the column keeps it.
func encodeHistory(h *engine.MessageHistory) (string, error) {
	sh := storedHistory{Dropped: h.Dropped, Events: make([]storedEvent, len(h.Events))}
	for i := range h.Events {
		sh.Events[i] = storedEventOf(&h.Events[i])
	}
	b, err := json.Marshal(sh)
	return string(b), err
}

// receiveEvent is the part of a receive event the statement does not
// fill in (the consumer): nil, which records nothing, when c is nil.
func receiveEvent(c *engine.Consumer) []byte {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(storedEvent{Kind: string(engine.HistoryReceive), IP: c.SourceIP, UA: c.UserAgent, Key: c.AccessKey})
	return b
}

func decodeHistory(id string, v []byte) (engine.MessageHistory, error) {
	var sh storedHistory
	if err := json.Unmarshal(v, &sh); err != nil {
		return engine.MessageHistory{}, fmt.Errorf("postgres: history of %s: %w", id, err)
	}
	h := engine.MessageHistory{MessageID: id, Dropped: sh.Dropped, Events: make([]engine.HistoryEvent, 0, len(sh.Events))}
	for _, e := range sh.Events {
		h.Events = append(h.Events, engine.HistoryEvent{
			Kind: engine.HistoryKind(e.Kind), At: fromNS(e.At), ReceiveCount: e.Count, VisibleAt: fromNS(e.Visible),
			Consumer: engine.Consumer{SourceIP: e.IP, UserAgent: e.UA, AccessKey: e.Key},
			From:     e.From, To: e.To, Cause: e.Cause, PreviousID: e.Prev,
			Endpoint: e.Endpoint, Status: e.Status, Error: e.Error, Latency: time.Duration(e.Latency), Phase: e.Phase, Fault: e.Fault,
		})
	}
	return h, nil
}

// historySQL answers the queue's id (one row with NULLs but the id when
// no message matches) and the matching messages' seqs, ids and
// histories, newest first: message $4 if $4 is not NULL, otherwise those
// before seq $5 (NULL: from the newest), $6 at most. What retention has
// expired is gone, as for a receive.
const historySQL = `
WITH q AS (
	SELECT id, retention_ns FROM queues WHERE account = $1 AND name = $2 AND deleted_ns IS NULL
)
SELECT q.id, m.seq, m.message_id, m.history
FROM q LEFT JOIN LATERAL (
	SELECT m.seq, m.message_id, m.history FROM messages m
	WHERE m.queue_id = q.id AND m.history IS NOT NULL AND m.sent_ns > $3::int8 - q.retention_ns
		AND ($4::text IS NULL OR m.message_id = $4) AND ($5::int8 IS NULL OR m.seq < $5)
	ORDER BY m.seq DESC LIMIT $6) m ON true`

// histories runs historySQL; seqs are the messages' seqs.
func (s *Store) histories(ctx context.Context, account, name string, id *string, before *int64, limit int) (hs []engine.MessageHistory, seqs []int64, err error) {
	if err := s.enter(); err != nil {
		return nil, nil, err
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, historySQL, account, name, s.now(), id, before, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: histories of %s: %w", name, err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		found = true
		var (
			qid  int64
			seq  *int64
			mid  *string
			hist []byte
		)
		if err := rows.Scan(&qid, &seq, &mid, &hist); err != nil {
			return nil, nil, fmt.Errorf("postgres: histories of %s: %w", name, err)
		}
		if seq == nil {
			continue
		}
		h, err := decodeHistory(*mid, hist)
		if err != nil {
			return nil, nil, err
		}
		hs = append(hs, h)
		seqs = append(seqs, *seq)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("postgres: histories of %s: %w", name, err)
	}
	if !found {
		return nil, nil, engine.ErrQueueNotFound
	}
	return hs, seqs, nil
}

// MessageHistory implements engine.HistoryReader.
func (s *Store) MessageHistory(ctx context.Context, account, name, messageID string) (engine.MessageHistory, bool, error) {
	hs, _, err := s.histories(ctx, account, name, &messageID, nil, 1)
	if err != nil || len(hs) == 0 {
		return engine.MessageHistory{}, false, err
	}
	return hs[0], true, nil
}

// MessageHistories implements engine.HistoryReader; the cursor is the seq
// of the last message of the previous page.
func (s *Store) MessageHistories(ctx context.Context, account, name, cursor string, limit int) ([]engine.MessageHistory, string, error) {
	var before *int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("postgres: history cursor %q: %w", cursor, err)
		}
		before = &n
	}
	// One more than asked tells whether a next page exists.
	hs, seqs, err := s.histories(ctx, account, name, nil, before, limit+1)
	if err != nil || len(hs) <= limit {
		return hs, "", err
	}
	return hs[:limit], strconv.FormatInt(seqs[limit-1], 10), nil
}
