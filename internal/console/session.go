package console

import (
	"container/list"
	"crypto/subtle"
	"net/http"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

// session is one browser's: its CSRF token and what it may see.
type session struct {
	id   string
	csrf string
	// account is the session's own; allAccounts lets it pick any
	// (admin: logged in with the admin token, or auth is off).
	account     string
	allAccounts bool
	admin       bool
	// in is set once logged in (at once when no login is required).
	in bool

	used time.Time     // guarded by sessions.mu
	elem *list.Element // in sessions.lru
}

func (s *session) loggedIn() bool { return s.in }

// checkCSRF compares token with the session's in constant time.
func (s *session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}

// sessions are kept in memory: a restart logs everyone out. At most max
// are kept, the least recently used dropped first, and one unused for
// idle expires.
type sessions struct {
	clock clock.Clock
	max   int
	idle  time.Duration

	mu   sync.Mutex
	byID map[string]*session
	lru  *list.List // front: most recently used
}

func newSessions(clk clock.Clock, max int, idle time.Duration) *sessions {
	return &sessions{clock: clk, max: max, idle: idle, byID: map[string]*session{}, lru: list.New()}
}

// get finds a live session by id and marks it used.
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[id]
	if s == nil {
		return nil
	}
	now := ss.clock.Now()
	if now.Sub(s.used) > ss.idle {
		ss.removeLocked(s)
		return nil
	}
	s.used = now
	ss.lru.MoveToFront(s.elem)
	return s
}

// add keeps a new session made from proto, with fresh id and token.
func (ss *sessions) add(proto session) *session {
	s := &proto
	s.id, s.csrf = randomToken(32), randomToken(32)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s.used = ss.clock.Now()
	for ss.lru.Len() >= ss.max {
		ss.removeLocked(ss.lru.Back().Value.(*session))
	}
	s.elem = ss.lru.PushFront(s)
	ss.byID[s.id] = s
	return s
}

func (ss *sessions) remove(s *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byID[s.id] == s {
		ss.removeLocked(s)
	}
}

func (ss *sessions) removeLocked(s *session) {
	delete(ss.byID, s.id)
	ss.lru.Remove(s.elem)
}

func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byID)
}

// sessionOf is the request's live session, or nil.
func (c *Console) sessionOf(r *http.Request) *session {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil
	}
	return c.sessions.get(ck.Value)
}

func setCookie(w http.ResponseWriter, r *http.Request, s *session) {
	ck := &http.Cookie{Name: CookieName, Path: "/console/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil}
	if s == nil {
		ck.MaxAge = -1
	} else {
		ck.Value = s.id
	}
	http.SetCookie(w, ck)
}

// sessionView is the session as GET /console/api/session shows it.
type sessionView struct {
	AuthRequired bool     `json:"authRequired"`
	LoggedIn     bool     `json:"loggedIn"`
	Account      string   `json:"account"`
	Accounts     []string `json:"accounts,omitempty"`
	Admin        bool     `json:"admin"`
	CSRFToken    string   `json:"csrfToken"`
	Region       string   `json:"region"`
	Version      string   `json:"version"`
}

func (c *Console) view(r *http.Request, s *session) sessionView {
	v := sessionView{AuthRequired: c.opts.AuthRequired, LoggedIn: s.in, Account: s.account, Admin: s.admin,
		CSRFToken: s.csrf, Region: c.opts.Region, Version: c.opts.Version}
	if s.in && s.allAccounts {
		accounts, err := c.b.Accounts(r.Context())
		if err != nil {
			c.log.Warn("console: list accounts", "err", err)
		}
		v.Accounts = withAccount(accounts, s.account)
	}
	return v
}

// withAccount is accounts with a added, sorted, when missing.
func withAccount(accounts []string, a string) []string {
	for i, x := range accounts {
		if x == a {
			return accounts
		}
		if x > a {
			return append(accounts[:i:i], append([]string{a}, accounts[i:]...)...)
		}
	}
	return append(accounts, a)
}

// newSession is a session as it starts: logged in when no login is
// required.
func (c *Console) newSession() session {
	if c.opts.AuthRequired {
		return session{}
	}
	return session{account: c.opts.Account, allAccounts: true, in: true}
}

// getSession answers the session, making one (and its cookie) when the
// request has none, so that the page has a CSRF token for its login.
func (c *Console) getSession(w http.ResponseWriter, r *http.Request) {
	s := c.sessionOf(r)
	if s == nil {
		s = c.sessions.add(c.newSession())
		setCookie(w, r, s)
	}
	writeJSON(w, http.StatusOK, c.view(r, s))
}

type loginRequest struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
	AdminToken      string `json:"adminToken"`
}

// login replaces the request's session with a logged-in one (a new id,
// so that an id planted before the login is worth nothing after it).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	old := c.sessionOf(r)
	if old == nil || !old.checkCSRF(r.Header.Get(CSRFHeader)) {
		writeError(w, http.StatusForbidden, "CSRF", "log in from the console's page: it asks GET /console/api/session for a "+CSRFHeader+" token first")
		return
	}
	var in loginRequest
	if err := decode(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	addr := clientAddr(r)
	if !c.logins.allowed(addr) {
		writeError(w, http.StatusTooManyRequests, "TooManyRequests", "too many failed logins from this address: try again in a minute")
		return
	}
	refuse := func(why string) {
		c.logins.failed(addr)
		writeError(w, http.StatusUnauthorized, "LoginFailed", why)
	}
	var next session
	switch {
	case !c.opts.AuthRequired:
		next = c.newSession()
	case c.opts.AdminToken == "" && !c.opts.HasKeys:
		writeError(w, http.StatusUnauthorized, "LoginFailed",
			"nobody can log in: Ferry verifies requests but has no credentials (--credentials) and no admin token (--admin-token)")
		return
	case in.AdminToken != "":
		if c.opts.AdminToken == "" || subtle.ConstantTimeCompare([]byte(in.AdminToken), []byte(c.opts.AdminToken)) != 1 {
			refuse("wrong admin token")
			return
		}
		next = session{account: c.opts.Account, allAccounts: true, admin: true, in: true}
	case in.AccessKeyID != "":
		account, ok := c.b.CheckKey(in.AccessKeyID, in.SecretAccessKey)
		if !ok {
			refuse("unknown access key, or wrong secret")
			return
		}
		next = session{account: account, in: true}
	default:
		writeError(w, http.StatusBadRequest, "BadRequest", "log in with accessKeyId and secretAccessKey, or adminToken")
		return
	}
	c.logins.succeeded(addr)
	c.sessions.remove(old)
	s := c.sessions.add(next)
	setCookie(w, r, s)
	writeJSON(w, http.StatusOK, c.view(r, s))
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	s := c.sessionOf(r)
	if s != nil {
		if !s.checkCSRF(r.Header.Get(CSRFHeader)) {
			writeError(w, http.StatusForbidden, "CSRF", "the request lacks the session's "+CSRFHeader+" token")
			return
		}
		c.sessions.remove(s)
	}
	setCookie(w, r, nil)
	w.WriteHeader(http.StatusNoContent)
}
