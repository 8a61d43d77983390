package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
)

// fakeBackend serves two queues of one account, "work" and its
// dead-letter queue "work-dlq"; Invoke answers from invoke.
type fakeBackend struct {
	queues  map[string][]engine.Queue
	invoke  func(account, action string, in any) (any, error)
	peeker  engine.Peeker
	deleted []string
	visible atomic.Int64 // what Stats reports of every queue
}

const testAccount = "000000000000"

func newFakeBackend() *fakeBackend {
	b := &fakeBackend{queues: map[string][]engine.Queue{testAccount: {
		{Account: testAccount, Name: "work", Settings: engine.QueueSettings{Redrive: &engine.Redrive{TargetAccount: testAccount, TargetName: "work-dlq", MaxReceiveCount: 3}},
			Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:work-dlq","maxReceiveCount":3}`}},
		{Account: testAccount, Name: "work-dlq"},
	}}}
	b.visible.Store(2)
	return b
}

func (b *fakeBackend) Invoke(_ context.Context, account, _, action string, in, out any) error {
	if b.invoke == nil {
		return nil
	}
	v, err := b.invoke(account, action, in)
	if err != nil || out == nil || v == nil {
		return err
	}
	raw, _ := json.Marshal(v)
	return json.Unmarshal(raw, out)
}

func (b *fakeBackend) StartMoveTask(ctx context.Context, account string, in any, _ []string, out any) error {
	return b.Invoke(ctx, account, "sqs", "StartMessageMoveTask", in, out)
}

func (b *fakeBackend) Accounts(context.Context) ([]string, error) {
	return []string{"111111111111"}, nil
}

func (b *fakeBackend) CheckKey(key, secret string) (string, bool) {
	if key == "AKID" && secret == "s3cret" {
		return "111111111111", true
	}
	return "", false
}

func (b *fakeBackend) Queues(_ context.Context, account string) ([]engine.Queue, error) {
	return b.queues[account], nil
}

func (b *fakeBackend) Stats(context.Context, string, string) (engine.Stats, error) {
	return engine.Stats{Visible: b.visible.Load()}, nil
}

func (b *fakeBackend) QueueURL(account, name string) string {
	return "http://q/" + account + "/" + name
}
func (b *fakeBackend) QueueARN(account, name string) string {
	return "arn:aws:sqs:us-east-1:" + account + ":" + name
}

func (b *fakeBackend) Datapoints(string, string, string, time.Time, time.Time) []metrics.Datapoint {
	return nil
}

func (b *fakeBackend) Peeker() engine.Peeker { return b.peeker }

func (b *fakeBackend) DeleteRefs(_ context.Context, _, _ string, refs []string) (int, error) {
	b.deleted = append(b.deleted, refs...)
	return len(refs), nil
}

func (b *fakeBackend) SystemAttributes(*engine.Message) map[string]string { return nil }
func (b *fakeBackend) History(engine.MessageHistory) any                  { return nil }
func (b *fakeBackend) SubscriptionCounters(string) (SubscriptionCounters, bool) {
	return SubscriptionCounters{}, false
}

// browser is a client of a console under test.
type browser struct {
	t      *testing.T
	c      *Console
	cookie string
	csrf   string
}

func (br *browser) do(method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	br.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://ferry.test"+path, rd)
	if br.cookie != "" {
		r.AddCookie(&http.Cookie{Name: CookieName, Value: br.cookie})
	}
	if method != "GET" {
		r.Header.Set(CSRFHeader, br.csrf)
	}
	for k, v := range header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	br.c.ServeHTTP(w, r)
	for _, ck := range w.Result().Cookies() {
		if ck.Name == CookieName {
			br.cookie = ck.Value
		}
	}
	var v struct {
		CSRFToken string `json:"csrfToken"`
	}
	if json.Unmarshal(w.Body.Bytes(), &v) == nil && v.CSRFToken != "" {
		br.csrf = v.CSRFToken
	}
	return w
}

func code(w *httptest.ResponseRecorder) string {
	var e struct{ Code string }
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	return e.Code
}

func newTest(t *testing.T, o Options) (*browser, *fakeBackend, *clock.Fake) {
	b := newFakeBackend()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	o.Backend, o.Clock, o.WallClock, o.Account, o.Region = b, clk, clk, testAccount, "us-east-1"
	return &browser{t: t, c: New(o)}, b, clk
}

func TestLogin(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       Options
		body       string
		status     int
		code       string
		account    string
		allowsMany bool
	}{
		{"auth off", Options{}, `{}`, 200, "", testAccount, true},
		{"key", Options{AuthRequired: true, HasKeys: true}, `{"accessKeyId":"AKID","secretAccessKey":"s3cret"}`, 200, "", "111111111111", false},
		{"wrong secret", Options{AuthRequired: true, HasKeys: true}, `{"accessKeyId":"AKID","secretAccessKey":"s3creT"}`, 401, "LoginFailed", "", false},
		{"unknown key", Options{AuthRequired: true, HasKeys: true}, `{"accessKeyId":"AKIX","secretAccessKey":"s3cret"}`, 401, "LoginFailed", "", false},
		{"admin token", Options{AuthRequired: true, AdminToken: "tok"}, `{"adminToken":"tok"}`, 200, "", testAccount, true},
		{"wrong admin token", Options{AuthRequired: true, AdminToken: "tok"}, `{"adminToken":"to"}`, 401, "LoginFailed", "", false},
		{"admin token unset", Options{AuthRequired: true, HasKeys: true}, `{"adminToken":"x"}`, 401, "LoginFailed", "", false},
		{"nobody can", Options{AuthRequired: true}, `{"accessKeyId":"AKID","secretAccessKey":"s3cret"}`, 401, "LoginFailed", "", false},
		{"nothing", Options{AuthRequired: true, HasKeys: true}, `{}`, 400, "BadRequest", "", false},
		{"bad JSON", Options{AuthRequired: true, HasKeys: true}, `{"accessKeyId":`, 400, "BadRequest", "", false},
		{"unknown field", Options{AuthRequired: true, HasKeys: true}, `{"user":"x"}`, 400, "BadRequest", "", false},
		{"two objects", Options{AuthRequired: true, HasKeys: true}, `{} {}`, 400, "BadRequest", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, _, _ := newTest(t, tc.opts)
			if w := br.do("GET", "/console/api/session", "", nil); w.Code != 200 || br.cookie == "" || br.csrf == "" {
				t.Fatalf("session: %d %s", w.Code, w.Body)
			}
			before := br.cookie
			w := br.do("POST", "/console/api/login", tc.body, nil)
			if w.Code != tc.status || code(w) != tc.code {
				t.Fatalf("login: %d %s", w.Code, w.Body)
			}
			if tc.name == "nobody can" && !strings.Contains(w.Body.String(), "nobody can log in") {
				t.Errorf("login error does not say nobody can: %s", w.Body)
			}
			ov := br.do("GET", "/console/api/overview", "", nil)
			if tc.status != 200 {
				if ov.Code != 401 && tc.opts.AuthRequired {
					t.Fatalf("overview after a failed login: %d", ov.Code)
				}
				return
			}
			if br.cookie == before {
				t.Error("the session id was not renewed at login")
			}
			var s sessionView
			json.Unmarshal(w.Body.Bytes(), &s)
			if !s.LoggedIn || s.Account != tc.account || (len(s.Accounts) > 0) != tc.allowsMany {
				t.Fatalf("session: %+v", s)
			}
			if ov.Code != 200 {
				t.Fatalf("overview: %d %s", ov.Code, ov.Body)
			}
			other := br.do("GET", "/console/api/overview?account=222222222222", "", nil)
			if want := map[bool]int{true: 200, false: 403}[tc.allowsMany]; other.Code != want {
				t.Fatalf("another account: %d, want %d", other.Code, want)
			}
		})
	}
}

func TestCSRF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"token", nil, 200},
		{"token and same origin", map[string]string{"Origin": "http://ferry.test", "Sec-Fetch-Site": "same-origin"}, 200},
		{"no token", map[string]string{CSRFHeader: ""}, 403},
		{"wrong token", map[string]string{CSRFHeader: "x"}, 403},
		{"other origin", map[string]string{"Origin": "http://ferry.test:81"}, 403},
		{"null origin", map[string]string{"Origin": "null"}, 403},
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, b, _ := newTest(t, Options{})
			b.invoke = func(string, string, any) (any, error) { return nil, nil }
			br.do("GET", "/console/api/session", "", nil)
			w := br.do("POST", "/console/api/queues/work-dlq/purge", `{"confirm":"work-dlq"}`, tc.header)
			if w.Code != tc.status || (tc.status == 403 && code(w) != "CSRF") {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
}

func TestSessions(t *testing.T) {
	t.Run("idle expiry", func(t *testing.T) {
		br, _, clk := newTest(t, Options{})
		br.do("GET", "/console/api/session", "", nil)
		clk.Advance(SessionIdle - time.Second)
		if w := br.do("GET", "/console/api/overview", "", nil); w.Code != 200 {
			t.Fatalf("before expiry: %d", w.Code)
		}
		clk.Advance(SessionIdle + time.Second)
		if w := br.do("GET", "/console/api/overview", "", nil); w.Code != 401 || code(w) != "LoginRequired" {
			t.Fatalf("after expiry: %d %s", w.Code, w.Body)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		br, _, clk := newTest(t, Options{MaxSessions: 3})
		br.do("GET", "/console/api/session", "", nil)
		first := br.cookie
		for range 5 {
			clk.Advance(time.Second)
			(&browser{t: t, c: br.c}).do("GET", "/console/api/session", "", nil)
		}
		if n := br.c.sessions.len(); n != 3 {
			t.Fatalf("%d sessions kept, want 3", n)
		}
		br.cookie = first
		if w := br.do("GET", "/console/api/overview", "", nil); w.Code != 401 {
			t.Fatalf("the least recently used session survived: %d", w.Code)
		}
	})
	t.Run("logout", func(t *testing.T) {
		br, _, _ := newTest(t, Options{})
		br.do("GET", "/console/api/session", "", nil)
		if w := br.do("POST", "/console/api/logout", "", nil); w.Code != 204 {
			t.Fatalf("logout: %d", w.Code)
		}
		if w := br.do("GET", "/console/api/overview", "", nil); w.Code != 401 {
			t.Fatalf("after logout: %d", w.Code)
		}
	})
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		invokeErr                error
		status                   int
		code                     string
	}{
		{"AWS refusal", "POST", "/console/api/queues/work-dlq/purge", `{"confirm":"work-dlq"}`,
			&protocol.Error{Code: "AWS.SimpleQueueService.PurgeQueueInProgress", Status: 403, Message: "Only one PurgeQueue operation ..."}, 403, "AWS.SimpleQueueService.PurgeQueueInProgress"},
		{"AWS refusal without a query code", "POST", "/console/api/queues/work-dlq/cancel-move", `{"taskHandle":"h"}`,
			&protocol.Error{Shape: "ResourceNotFoundException", Status: 404, Message: "Task does not exist."}, 404, "ResourceNotFoundException"},
		{"store unavailable", "GET", "/console/api/queues/work-dlq", "", fmt.Errorf("x: %w", engine.ErrUnavailable), 503, "ServiceUnavailable"},
		{"unexpected", "GET", "/console/api/queues/work-dlq", "", errors.New("boom"), 500, "InternalError"},
		{"purge unconfirmed", "POST", "/console/api/queues/work-dlq/purge", `{"confirm":"work"}`, nil, 400, "BadRequest"},
		{"purge bad JSON", "POST", "/console/api/queues/work-dlq/purge", `[`, nil, 400, "BadRequest"},
		{"unknown queue", "GET", "/console/api/queues/none", "", nil, 404, "NotFound"},
		{"unknown call", "GET", "/console/api/nothing", "", nil, 404, "NotFound"},
		{"wrong method", "DELETE", "/console/api/overview", "", nil, 404, "NotFound"},
		{"bad limit", "GET", "/console/api/queues/work-dlq/messages?limit=500", "", nil, 400, "BadRequest"},
		{"bad cursor", "GET", "/console/api/queues/work-dlq/messages?after=abc", "", nil, 400, "BadRequest"},
		{"delete without refs", "POST", "/console/api/queues/work-dlq/delete", `{"refs":[]}`, nil, 400, "BadRequest"},
		{"redrive of no refs", "POST", "/console/api/queues/work-dlq/redrive", `{"refs":[]}`, nil, 400, "BadRequest"},
		{"resend without ref", "POST", "/console/api/queues/work-dlq/resend", `{}`, nil, 400, "BadRequest"},
		{"bad account", "GET", "/console/api/overview?account=abc", "", nil, 400, "BadRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, b, _ := newTest(t, Options{})
			b.invoke = func(string, string, any) (any, error) { return nil, tc.invokeErr }
			br.do("GET", "/console/api/session", "", nil)
			w := br.do(tc.method, tc.path, tc.body, nil)
			if w.Code != tc.status || code(w) != tc.code {
				t.Fatalf("%d %s, want %d %s", w.Code, w.Body, tc.status, tc.code)
			}
		})
	}
}

func TestOverviewRedriveGraph(t *testing.T) {
	br, b, _ := newTest(t, Options{})
	b.invoke = func(_, action string, _ any) (any, error) {
		if action == "DescribeAlarms" {
			return map[string]any{"MetricAlarms": []map[string]any{{"AlarmName": "a", "StateValue": "ALARM"}}}, nil
		}
		return nil, nil
	}
	br.do("GET", "/console/api/session", "", nil)
	w := br.do("GET", "/console/api/overview", "", nil)
	var ov overviewView
	if err := json.Unmarshal(w.Body.Bytes(), &ov); err != nil || w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	work, dlq := ov.Queues[0], ov.Queues[1]
	if work.DeadLetterQueue || work.Redrive == nil || work.Redrive.Target != "work-dlq" || work.Redrive.TargetARN == "" ||
		!dlq.DeadLetterQueue || len(dlq.Sources) != 1 || dlq.Sources[0] != "work" || dlq.Redrive != nil {
		t.Fatalf("graph: %+v", ov.Queues)
	}
	if len(work.Sent) != sparkMinutes || len(work.Depth) != sparkMinutes || work.Depth[0] != nil {
		t.Fatalf("sparklines: %v %v", work.Sent, work.Depth)
	}
	if ov.Alarms["ALARM"] != 1 || ov.Alarms["OK"] != 0 {
		t.Fatalf("alarms: %v", ov.Alarms)
	}
}

func TestStatic(t *testing.T) {
	for _, tc := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/console/", 200, "text/html"},
		{"/console/assets/index.html", 200, "text/html"},
		{"/console/assets/none.js", 404, "application/json"},
		{"/console/assets/../console.go", 307, ""}, // to the clean path, which is no asset
		{"/console/other", 404, "application/json"},
	} {
		br, _, _ := newTest(t, Options{})
		w := br.do("GET", tc.path, "", nil)
		if w.Code != tc.status || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %s", tc.path, w.Code, w.Header().Get("Content-Type"))
		}
		if tc.status == 200 && (w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("Cache-Control") != "no-cache") {
			t.Errorf("%s: headers %v", tc.path, w.Header())
		}
	}
}

func TestCursor(t *testing.T) {
	c := New(Options{Backend: newFakeBackend()})
	other := New(Options{Backend: newFakeBackend()})
	signed := c.signCursor("store-cursor:42")
	for _, tc := range []struct {
		cursor string
		ok     bool
		want   string
	}{
		{signed, true, "store-cursor:42"},
		{other.signCursor("store-cursor:42"), false, ""},
		{signed[:len(signed)-1], false, ""},
		{"c3RvcmU", false, ""},
		{"!!.!!", false, ""},
	} {
		got, ok := c.openCursor(tc.cursor)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("openCursor(%q) = %q, %v", tc.cursor, got, ok)
		}
	}
	if c.signCursor("") != "" {
		t.Error("an empty cursor signed")
	}
}

func TestSummaryBody(t *testing.T) {
	long := strings.Repeat("é", summaryBody+1)
	for _, tc := range []struct {
		body      string
		whole     bool
		wantRunes int
		truncated bool
	}{
		{"short", false, 5, false},
		{long, false, summaryBody, true},
		{long, true, summaryBody + 1, false},
	} {
		s := summarizeMessage(&engine.PeekedMessage{Message: engine.Message{Body: tc.body}, State: engine.StateVisible}, tc.whole)
		if n := len([]rune(s.Body)); n != tc.wantRunes || s.Truncated != tc.truncated || s.BodySize != len(tc.body) {
			t.Errorf("%d runes, truncated %v, size %d", n, s.Truncated, s.BodySize)
		}
	}
}

func TestLoginThrottle(t *testing.T) {
	br, _, clk := newTest(t, Options{AuthRequired: true, HasKeys: true})
	br.do("GET", "/console/api/session", "", nil)
	wrong := `{"accessKeyId":"AKID","secretAccessKey":"nope"}`
	for i := range maxLoginFailures {
		if w := br.do("POST", "/console/api/login", wrong, nil); w.Code != 401 {
			t.Fatalf("failure %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	right := `{"accessKeyId":"AKID","secretAccessKey":"s3cret"}`
	if w := br.do("POST", "/console/api/login", right, nil); w.Code != 429 || code(w) != "TooManyRequests" {
		t.Fatalf("after %d failures: %d %s", maxLoginFailures, w.Code, w.Body)
	}
	clk.Advance(loginWindow)
	if w := br.do("POST", "/console/api/login", right, nil); w.Code != 200 {
		t.Fatalf("a window later: %d %s", w.Code, w.Body)
	}
}

func TestLoginGuardBound(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	g := newLoginGuard(clk)
	for i := range maxTrackedAddrs + 5 {
		g.failed(fmt.Sprint("10.0.", i/256, ".", i%256))
		clk.Advance(time.Millisecond)
	}
	if n := len(g.byAddr); n > maxTrackedAddrs {
		t.Fatalf("%d addresses kept", n)
	}
	if _, ok := g.byAddr["10.0.0.0"]; ok {
		t.Error("the oldest address was kept")
	}
}
