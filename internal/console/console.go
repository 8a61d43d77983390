// Package console serves Ferry's dead-letter console: a few static pages
// at /console/ and their JSON API at /console/api/, for people who look
// into queues (dead-letter queues above all), their messages, topics and
// alarms, and act on them. Every act goes through the operations the APIs
// use (SQS, SNS and CloudWatch actions run in-process, the engine's
// Peeker and move tasks), so that metrics and ListMessageMoveTasks agree
// with what the console did. The package knows nothing of the server: it
// reaches Ferry through Backend.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// Backend is what the console needs of Ferry. Accounts are account ids of
// the home region; queues are named within them.
type Backend interface {
	// Invoke runs an SQS, SNS or CloudWatch action ("sqs", "sns",
	// "monitoring") as account would over the wire (protocol.Handler.Invoke).
	Invoke(ctx context.Context, account, service, action string, in, out any) error
	// StartMoveTask runs StartMessageMoveTask as account, limited to refs
	// when there are some (engine.MoveTask.Refs); out as Invoke's.
	StartMoveTask(ctx context.Context, account string, in any, refs []string, out any) error
	// Accounts lists the accounts an admin may look at, sorted.
	Accounts(ctx context.Context) ([]string, error)
	// CheckKey finds the account of an access key whose secret this is.
	CheckKey(accessKey, secret string) (account string, ok bool)
	// Queues lists account's queues, sorted by name; Stats counts one.
	Queues(ctx context.Context, account string) ([]engine.Queue, error)
	Stats(ctx context.Context, account, name string) (engine.Stats, error)
	// QueueURL and QueueARN name account's queue as the APIs do.
	QueueURL(account, name string) string
	QueueARN(account, name string) string
	// Datapoints are an SQS metric's one-minute datapoints of a queue.
	Datapoints(account, metric, queue string, from, to time.Time) []metrics.Datapoint
	// Peeker is the store's read path into queues (engine.Peeker).
	Peeker() engine.Peeker
	// DeleteRefs deletes messages by ref, counted as DeleteMessage counts.
	DeleteRefs(ctx context.Context, account, name string, refs []string) (int, error)
	// SystemAttributes are a message's, as a receive of All shows them.
	SystemAttributes(m *engine.Message) map[string]string
	// History renders a message's story as GET /_ferry/history does.
	History(h engine.MessageHistory) any
	// SubscriptionCounters are a subscription's delivery counts.
	SubscriptionCounters(arn string) (SubscriptionCounters, bool)
}

// SubscriptionCounters are what the console shows of a subscription's
// deliveries since the server started.
type SubscriptionCounters struct {
	Delivered, Failed, Retried, DeadLettered int64
	// RecentFailures are the latest failed attempts, newest first.
	RecentFailures []DeliveryFailure
}

// DeliveryFailure is one failed delivery attempt.
type DeliveryFailure struct {
	At       time.Time
	Status   int
	Error    string
	Endpoint string
}

// Options configure the console.
type Options struct {
	Backend Backend
	// Clock is the services' time (the overview's now, its sparklines),
	// which --clock-control may move.
	Clock clock.Clock
	// WallClock times sessions' idle expiry and the login throttle: a
	// browser's and an attacker's time, which moving Ferry's clock 14
	// days on must not log everyone out for or let anyone wait out
	// (nil: clock.Real).
	WallClock clock.Clock
	Logger    *slog.Logger
	// Account is the server's own, the default of sessions that may see
	// every account.
	Account string
	Region  string
	Version string
	// AuthRequired: a session must log in, with an access key and its
	// secret (sessions of that key's account) or with AdminToken (every
	// account).
	AuthRequired bool
	AdminToken   string
	// HasKeys: some access key exists to log in with.
	HasKeys bool
	// Done, when closed, ends the event streams: the server is shutting
	// down.
	Done <-chan struct{}
	// MaxSessions bounds the sessions kept (0: DefaultMaxSessions); the
	// least recently used goes first.
	MaxSessions int
	// Changes, when set, is told of every API request once answered
	// (the server calls its Changed): the event streams then show a
	// change at once. The console's own changes tell it too. Without it,
	// changes made through the API wait for EventCheck.
	Changes *Changes
	// EventCheck is how often an event stream looks for changes no
	// action announces (0: DefaultEventCheck).
	EventCheck time.Duration
}

// Limits of sessions.
const (
	DefaultMaxSessions = 1000
	SessionIdle        = 12 * time.Hour
	// CookieName is the session cookie's name.
	CookieName = "ferry_console"
	// CSRFHeader carries a session's CSRF token on every request that is
	// not a GET or HEAD.
	CSRFHeader = "X-Ferry-Console-CSRF"
)

// Console is the console's HTTP handler.
type Console struct {
	opts     Options
	b        Backend
	clock    clock.Clock
	log      *slog.Logger
	sessions *sessions
	logins   *loginGuard
	mux      *http.ServeMux
	// cursorKey signs the message cursors handed out, so that only those
	// reach the store.
	cursorKey []byte
}

// New returns the console; mount it at /console/.
func New(o Options) *Console {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.WallClock == nil {
		o.WallClock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Changes == nil {
		o.Changes = NewChanges()
	}
	if o.EventCheck <= 0 {
		o.EventCheck = DefaultEventCheck
	}
	c := &Console{opts: o, b: o.Backend, clock: o.Clock, log: o.Logger,
		sessions: newSessions(o.WallClock, o.MaxSessions, SessionIdle), logins: newLoginGuard(o.WallClock), mux: http.NewServeMux(),
		cursorKey: randomBytes(32)}
	c.routes()
	return c
}

func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET /console/{$}", c.serveIndex)
	m.HandleFunc("GET /console/assets/", c.serveAsset)
	m.HandleFunc("GET /console/api/session", c.getSession)
	m.HandleFunc("POST /console/api/login", c.login)
	m.HandleFunc("POST /console/api/logout", c.logout)
	api := map[string]func(w http.ResponseWriter, r *http.Request, a *access){
		"GET /console/api/overview":                     c.overview,
		"GET /console/api/events":                       c.events,
		"GET /console/api/queues/{name}":                c.queueDetail,
		"GET /console/api/queues/{name}/messages":       c.messages,
		"GET /console/api/queues/{name}/messages/{ref}": c.message,
		"POST /console/api/queues/{name}/delete":        c.deleteMessages,
		"POST /console/api/queues/{name}/purge":         c.purge,
		"POST /console/api/queues/{name}/redrive":       c.redrive,
		"POST /console/api/queues/{name}/cancel-move":   c.cancelMove,
		"POST /console/api/queues/{name}/resend":        c.resend,
		"GET /console/api/topics":                       c.topics,
		"GET /console/api/alarms":                       c.alarms,
	}
	for pattern, h := range api {
		m.Handle(pattern, c.authed(h))
	}
	m.HandleFunc("/console/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %s is not a console API call", r.Method, r.URL.Path))
	})
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s is not a console page", r.URL.Path))
	})
	m.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
}

// ServeHTTP answers the console's paths.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every non-GET must come from the console's own pages.
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "CSRF", "the request does not come from the console's own page")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// sameOrigin reports whether a browser's request comes from a page of the
// host it is sent to; a request without Origin and Sec-Fetch-Site (no
// browser's) passes, the CSRF token guards it.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

// access is what a request may see: the session and the account picked.
type access struct {
	s       *session
	account string
}

// authed checks the session, the CSRF token of a non-GET, and the
// account asked for, then calls h.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *access)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := c.sessionOf(r)
		if s == nil || !s.loggedIn() {
			writeError(w, http.StatusUnauthorized, "LoginRequired", "log in to the console first")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !s.checkCSRF(r.Header.Get(CSRFHeader)) {
			writeError(w, http.StatusForbidden, "CSRF", "the request lacks the session's "+CSRFHeader+" token")
			return
		}
		account := s.account
		if q := r.URL.Query(); q.Has("account") && q.Get("account") != account {
			if !s.allAccounts {
				writeError(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("this session may not see account %q", q.Get("account")))
				return
			}
			account = q.Get("account")
			if !sigv4.IsAccountID(account) {
				writeError(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("account %q: want 12 digits", account))
				return
			}
		}
		h(w, r, &access{s: s, account: account})
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			c.opts.Changes.Changed() // other pages show what this one did
		}
	})
}

// apiError is an error the API answers with a status and a code.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "BadRequest", fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, "NotFound", fmt.Sprintf(format, args...)}
}

// fail answers err: an action's refusal with AWS's code and status, the
// console's own with theirs, a missing queue 404, a store's passing
// condition 503, and anything else 500, logged.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var pe *protocol.Error
	switch {
	case errors.As(err, &ae):
		writeError(w, ae.status, ae.code, ae.message)
	case errors.As(err, &pe):
		status, code := pe.Status, pe.Code
		if status == 0 {
			status = http.StatusBadRequest
		}
		if code == "" {
			code = pe.Shape
		}
		writeError(w, status, code, pe.Message)
	case errors.Is(err, engine.ErrQueueNotFound):
		writeError(w, http.StatusNotFound, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
	case engine.Temporary(err):
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())
	case errors.Is(err, context.Canceled):
		// The client left.
	default:
		c.log.Error("console", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"error": message, "code": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// maxBody bounds a request body: a resent message (256 KiB) and its
// attributes, with room for JSON's escapes.
const maxBody = 2 << 20

// decode reads r's JSON body into v: one object, no unknown fields.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: %v", err)
	}
	if dec.More() {
		return badRequest("body: one JSON object expected")
	}
	return nil
}

// timeString is t in RFC 3339 with milliseconds, UTC.
func timeString(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// optTime is t as timeString, or nil when zero.
func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timeString(t)
	return &s
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("console: no randomness: %v", err)) // crypto/rand never fails on supported systems
	}
	return b
}

func randomToken(n int) string { return base64.RawURLEncoding.EncodeToString(randomBytes(n)) }

// signCursor wraps a store's cursor so that openCursor knows it as one
// this console handed out.
func (c *Console) signCursor(next string) string {
	if next == "" {
		return ""
	}
	mac := hmac.New(sha256.New, c.cursorKey)
	mac.Write([]byte(next))
	return base64.RawURLEncoding.EncodeToString([]byte(next)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:12])
}

func (c *Console) openCursor(cursor string) (string, bool) {
	raw, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return "", false
	}
	next, err1 := base64.RawURLEncoding.DecodeString(raw)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return "", false
	}
	mac := hmac.New(sha256.New, c.cursorKey)
	mac.Write(next)
	return string(next), subtle.ConstantTimeCompare(got, mac.Sum(nil)[:12]) == 1
}
