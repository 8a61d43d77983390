package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

func TestUnreachableClassifies(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Severity: "ERROR", Code: code} }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connect", &pgconn.ConnectError{}, true},
		{"connect refused, wrapped", fmt.Errorf("postgres: send to q: %w", &pgconn.ConnectError{}), true},
		{"connection exception", pg("08006"), true},
		{"connection does not exist", pg("08003"), true},
		{"admin shutdown", pg("57P01"), true},
		{"crash shutdown", pg("57P02"), true},
		{"cannot connect now", pg("57P03"), true},
		{"too many connections", pg("53300"), true},
		{"read-only standby", pg("25006"), true},
		{"unique violation", pg("23505"), false},
		{"serialization failure", pg("40001"), false},
		{"query canceled", pg("57014"), false},
		{"disk full", pg("53100"), false},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{"EOF", io.EOF, true},
		{"conn closed", pgconn.ErrConnClosed, true},
		{"already classified", fmt.Errorf("x: %w", engine.ErrUnavailable), true},
		{"no rows", pgx.ErrNoRows, false},
		{"queue not found", engine.ErrQueueNotFound, false},
		{"canceled", context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unreachable(tc.err); got != tc.want {
				t.Errorf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestOutageCheck(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name        string
		ctx         context.Context
		err         error
		unavailable bool
		down        bool // the outage is on afterwards
	}{
		{"success", live, nil, false, false},
		{"refused", live, refused, true, true},
		{"refused after the caller left", ended, refused, false, false},
		{"no connection in time", live, context.DeadlineExceeded, true, true},
		{"the caller's deadline", ended, context.DeadlineExceeded, false, false},
		{"a refusal by the database", live, &pgconn.PgError{Code: "23505"}, false, false},
		{"not found", live, pgx.ErrNoRows, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &outage{log: slog.New(slog.DiscardHandler)}
			err := o.check(tc.ctx, o.begin(), tc.err)
			if got := errors.Is(err, engine.ErrUnavailable); got != tc.unavailable {
				t.Errorf("check(%v) = %v: unavailable %v, want %v", tc.err, err, got, tc.unavailable)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("check(%v) = %v, which lost the cause", tc.err, err)
			}
			if got := o.reason() != ""; got != tc.down {
				t.Errorf("after check(%v) the outage is on: %v, want %v", tc.err, got, tc.down)
			}
		})
	}
}

// An outage is logged once when it begins and once when it ends, however
// calls begun before either change end.
func TestOutageChangesOnce(t *testing.T) {
	logs := &logLines{}
	o := &outage{log: slog.New(logs)}
	ctx := context.Background()
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	want := func(step string, down bool, lost, found int) {
		t.Helper()
		if got := o.reason() != ""; got != down {
			t.Errorf("%s: down = %v, want %v", step, got, down)
		}
		if n := logs.count(lostLine); n != lost {
			t.Errorf("%s: %d outages logged, want %d", step, n, lost)
		}
		if n := logs.count(foundLine); n != found {
			t.Errorf("%s: %d recoveries logged, want %d", step, n, found)
		}
	}
	inFlight := o.begin()
	o.check(ctx, o.begin(), refused)
	want("the first failure", true, 1, 0)
	o.check(ctx, inFlight, nil)
	want("a call begun before the outage succeeds", true, 1, 0)
	during := o.begin()
	o.check(ctx, during, refused)
	want("another failure", true, 1, 0)
	o.check(ctx, o.begin(), nil)
	want("a call begun during the outage succeeds", false, 1, 1)
	o.check(ctx, during, refused)
	want("a call begun during the outage fails after it", false, 1, 1)
	o.check(ctx, o.begin(), refused)
	want("a new outage", true, 2, 1)
}

// logLines counts the messages logged, for tests of how often something is
// said.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

func (l *logLines) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

const (
	lostLine  = "postgres: the database cannot be reached"
	foundLine = "postgres: the database can be reached again"
)

// A database that goes away is answered ErrUnavailable by every call, said
// once in the log and by Unreachable; once it is back the same store
// serves again without being reopened, a long poll that waited through the
// outage is woken by a send after it, and nothing acknowledged is lost.
func TestDatabaseLostAndBack(t *testing.T) {
	srv := pgtest.StartServer(t)
	logs := &logLines{}
	clk := clock.NewFake(enginetest.Start)
	s, err := Open(context.Background(), Options{URL: srv.URL, Clock: clk, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	createQueue(t, s, "q")
	createQueue(t, s, "empty-later")
	send := func(body string) error {
		_, err := s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: body}})
		return err
	}
	if err := send("before"); err != nil {
		t.Fatal(err)
	}
	if why := s.Unreachable(ctx); why != "" {
		t.Fatalf("Unreachable() = %q while the database is up", why)
	}
	polled := startLongPoll(t, s, clk, "empty-later")

	srv.Kill()
	calls := []struct {
		name string
		call func() error
	}{
		{"send", func() error { return send("during") }},
		{"receive", func() error {
			_, err := s.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 1})
			return err
		}},
		{"stats", func() error { _, err := s.Stats(ctx, enginetest.Account, "q"); return err }},
		{"put record", func() error { return s.PutRecord(ctx, "k", "a", []byte("v")) }},
		{"get record", func() error { _, _, err := s.GetRecord(ctx, "k", "a"); return err }},
		{"create queue", func() error {
			_, _, err := s.CreateQueue(ctx, engine.Queue{Account: enginetest.Account, Name: "r", ARN: enginetest.ARN("r"), Settings: enginetest.Settings()})
			return err
		}},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("%s while the database is down = %v, want ErrUnavailable", c.name, err)
		}
	}
	if why := s.Unreachable(ctx); why == "" {
		t.Error("Unreachable() = \"\" while the database is down")
	}
	if n := logs.count(lostLine); n != 1 {
		t.Errorf("the outage was logged %d times, want once", n)
	}

	srv.Restart()
	testwait.Eventually(t, "a send to succeed once the database is back", func() bool { return send("after") == nil })
	testwait.Eventually(t, "the store to be reachable", func() bool { return s.Unreachable(ctx) == "" })
	if n := logs.count(foundLine); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
	if n := logs.count(lostLine); n != 1 {
		t.Errorf("the outage was logged %d times, want once", n)
	}

	// The long poll of the other queue is woken by a send through the
	// listening connection, which came back by itself.
	if _, err := s.Send(ctx, enginetest.Account, "empty-later", []engine.NewMessage{{Body: "wake"}}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Receive(t, "the long poll that waited through the outage", polled); len(got) != 1 || got[0].Body != "wake" {
		t.Fatalf("the long poll received %+v", got)
	}
	got, err := s.Receive(ctx, enginetest.Account, "q", engine.ReceiveRequest{Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]bool{}
	for _, m := range got {
		bodies[m.Body] = true
	}
	if !bodies["before"] || !bodies["after"] || bodies["during"] {
		t.Errorf("after the outage the queue holds %v, want before and after (and not the refused send)", bodies)
	}

	// The server turns read-only, as a primary that came back as a
	// standby after a failover: writes are refused with 25006, which is
	// ErrUnavailable, and each connection that met it is dropped, so that
	// once the server takes writes again the pool's new connections do.
	admin, err := pgx.Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, sql := range []string{
		"ALTER DATABASE ferry SET default_transaction_read_only = on",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'ferry' AND pid <> pg_backend_pid()",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	testwait.Eventually(t, "a send refused by a read-only server", func() bool {
		err := send("read-only")
		var pe *pgconn.PgError
		return errors.Is(err, engine.ErrUnavailable) && errors.As(err, &pe) && pe.Code == "25006"
	})
	if _, err := admin.Exec(ctx, "ALTER DATABASE ferry RESET default_transaction_read_only"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "a send once the server takes writes again", func() bool { return send("writable") == nil })
}

// A pool that hands out no connection in time answers ErrUnavailable
// rather than waiting for as long as the caller would.
func TestNoConnectionInTime(t *testing.T) {
	ts := freshSchema(t)
	s, err := Open(context.Background(), Options{URL: ts.url, Schema: ts.name, MaxConns: 1, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	createQueue(t, s, "q")
	s.acquire.after.Store(int64(100 * time.Millisecond))
	hold, err := s.pool.Begin(ctx) // the only connection
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: "a"}})
	if !errors.Is(err, engine.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("send with no connection free = %v, want ErrUnavailable from a deadline", err)
	}
	if why := s.Unreachable(ctx); why == "" {
		t.Error("Unreachable() = \"\" while no connection is free")
	}
	// The store's own loops (leases, count folds) share the one
	// connection: once it is free again, one of them may hold it for a
	// moment, which the shortened bound would take for an outage.
	s.acquire.after.Store(int64(defaultUnreachableAfter))
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if why := s.Unreachable(ctx); why != "" {
		t.Errorf("Unreachable() = %q once a connection is free", why)
	}
	if _, err := s.Send(ctx, enginetest.Account, "q", []engine.NewMessage{{Body: "b"}}); err != nil {
		t.Errorf("send once a connection is free: %v", err)
	}
}
