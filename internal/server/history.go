package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// Failure history: GET /_ferry/history tells the story the store keeps
// with each message (engine.HistoryReader): its receives and their
// consumers, the visibility expiries between them, its moves between
// queues.

// ErrHistoryOff: the server runs with Config.NoFailureHistory.
var ErrHistoryOff = errors.New("failure history is off; start Ferry with --failure-history (FERRY_FAILURE_HISTORY)")

// ErrNoHistory: the queue has no such message, or the message has no
// story (nobody received it since the history was on).
var ErrNoHistory = errors.New("no such message, or it has no history")

// errBadQueueRef: the queue parameter names no queue.
var errBadQueueRef = errors.New("queue: want a queue URL or ARN")

// History is a message's story as the admin API shows it.
type History struct {
	MessageID string `json:"messageId"`
	// Dropped counts the oldest events left out to keep the latest
	// engine.HistoryCap.
	Dropped int            `json:"dropped"`
	Events  []HistoryEvent `json:"events"`
}

// HistoryEvent is one event of a History; the fields its kind has not
// are left out.
type HistoryEvent struct {
	Kind         string `json:"kind"`
	At           string `json:"at"`
	ReceiveCount int    `json:"receiveCount"`
	VisibleAt    string `json:"visibleAt,omitempty"`
	SourceIP     string `json:"sourceIp,omitempty"`
	UserAgent    string `json:"userAgent,omitempty"`
	AccessKeyID  string `json:"accessKeyId,omitempty"`
	From         string `json:"from,omitempty"`
	To           string `json:"to,omitempty"`
	Cause        string `json:"cause,omitempty"`
	PreviousID   string `json:"previousMessageId,omitempty"`
	// An SNS delivery attempt's: latency is a Go duration.
	Endpoint string `json:"endpoint,omitempty"`
	Status   int    `json:"status,omitempty"`
	Error    string `json:"error,omitempty"`
	Latency  string `json:"latency,omitempty"`
	Phase    string `json:"phase,omitempty"`
	Fault    string `json:"fault,omitempty"`
}

// HistoryPage is a page of a queue's stories, newest message first.
type HistoryPage struct {
	Messages  []History `json:"messages"`
	NextToken string    `json:"nextToken,omitempty"`
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// render turns a stored story into the API's, with the expiries derived
// as of now.
func render(h engine.MessageHistory, now time.Time) History {
	story := h.Story(now)
	out := History{MessageID: h.MessageID, Dropped: h.Dropped, Events: make([]HistoryEvent, len(story))}
	for i, ev := range story {
		out.Events[i] = HistoryEvent{
			Kind: string(ev.Kind), At: formatTime(ev.At), ReceiveCount: ev.ReceiveCount,
			SourceIP: ev.SourceIP, UserAgent: ev.UserAgent, AccessKeyID: ev.AccessKey,
			From: ev.From, To: ev.To, Cause: ev.Cause, PreviousID: ev.PreviousID,
		}
		switch ev.Kind {
		case engine.HistoryReceive:
			out.Events[i].VisibleAt = formatTime(ev.VisibleAt)
		case engine.HistoryDelivery:
			e := &out.Events[i]
			e.Endpoint, e.Status, e.Error, e.Latency, e.Phase, e.Fault = ev.Endpoint, ev.Status, ev.Error, ev.Latency.String(), ev.Phase, ev.Fault
		}
	}
	return out
}

// locate is the store's key of the queue a URL or ARN names.
func (s *Server) locate(queue string) (owner, name string, err error) {
	owner, name, ok := s.sqs.Locate(queue)
	if !ok {
		return "", "", fmt.Errorf("%w: %q", errBadQueueRef, queue)
	}
	return owner, name, nil
}

// MessageHistory returns the story of the message messageID of the queue
// (its URL or ARN). ErrHistoryOff, ErrNoHistory, engine.ErrQueueNotFound.
func (s *Server) MessageHistory(ctx context.Context, queue, messageID string) (History, error) {
	if s.cfg.NoFailureHistory {
		return History{}, ErrHistoryOff
	}
	owner, name, err := s.locate(queue)
	if err != nil {
		return History{}, err
	}
	h, found, err := s.store.MessageHistory(ctx, owner, name, messageID)
	if err != nil {
		return History{}, err
	}
	if !found {
		return History{}, ErrNoHistory
	}
	return render(h, s.cfg.Clock.Now()), nil
}

// MessageHistories returns a page of up to limit stories of the queue's
// messages, newest first, after the page whose NextToken is token ("" for
// the first).
func (s *Server) MessageHistories(ctx context.Context, queue string, limit int, token string) (HistoryPage, error) {
	if s.cfg.NoFailureHistory {
		return HistoryPage{}, ErrHistoryOff
	}
	owner, name, err := s.locate(queue)
	if err != nil {
		return HistoryPage{}, err
	}
	hs, next, err := s.store.MessageHistories(ctx, owner, name, token, limit)
	if err != nil {
		return HistoryPage{}, err
	}
	now := s.cfg.Clock.Now()
	page := HistoryPage{Messages: make([]History, len(hs)), NextToken: next}
	for i, h := range hs {
		page.Messages[i] = render(h, now)
	}
	return page, nil
}

// Bounds of a page of stories.
const (
	defaultHistoryLimit = 20
	maxHistoryLimit     = 100
)

// history answers GET /_ferry/history?queue=URL|ARN&message=ID, or
// &limit=N&nextToken=T for a page of the queue's stories.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	queue := q.Get("queue")
	if queue == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "queue: required (a queue URL or ARN)"})
		return
	}
	var (
		out any
		err error
	)
	if q.Has("message") {
		out, err = s.MessageHistory(r.Context(), queue, q.Get("message"))
	} else {
		limit := defaultHistoryLimit
		if q.Has("limit") {
			n, perr := strconv.Atoi(q.Get("limit"))
			if perr != nil || n < 1 || n > maxHistoryLimit {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit %q: want 1 to %d", q.Get("limit"), maxHistoryLimit)})
				return
			}
			limit = n
		}
		token := q.Get("nextToken")
		if token != "" {
			if _, perr := strconv.ParseUint(token, 10, 64); perr != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("nextToken %q is not one this endpoint handed out", token)})
				return
			}
		}
		out, err = s.MessageHistories(r.Context(), queue, limit, token)
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, out)
	case errors.Is(err, errBadQueueRef):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	case errors.Is(err, ErrHistoryOff), errors.Is(err, ErrNoHistory):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case errors.Is(err, engine.ErrQueueNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("queue %q does not exist", queue)})
	case engine.Temporary(err):
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
	default:
		s.cfg.Logger.Error("failure history", "queue", queue, "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}
