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
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferrymq/ferry/internal/engine"
)

// Every statement of the store runs through db, which tells a database that
// cannot be reached from one that answered: the former's errors match
// engine.ErrUnavailable (the cause stays in the chain), which the services
// answer with a 503 that SDKs retry. The statements themselves wrap errors
// as before and need not know.

// defaultUnreachableAfter bounds the wait for a connection: for a new one
// to connect (unless the URL sets connect_timeout), and for the pool to
// hand one out. A database that does not answer within it is unreachable,
// so that a request fails rather than hangs.
const defaultUnreachableAfter = 10 * time.Second

// unreachable reports whether err says that the database cannot be reached,
// rather than that it refused the statement.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, engine.ErrUnavailable) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return unreachableState(pe.Code)
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed)
}

// unreachableState reports whether a SQLSTATE says the server cannot serve
// this connection: a connection exception (class 08), a shutdown or a
// server still starting (57P01-57P03), too many connections (53300), or a
// read-only server, which is what a primary that failed over has become
// (25006).
func unreachableState(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "53300", "25006":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// outage tracks whether the database is unreachable, so that an outage is
// logged once when calls start failing and once when they succeed again,
// not once per call, and so that the health endpoint can say why. Only a
// call begun after the last change of state changes it again: a call in
// flight when the database went away may still succeed, and one begun
// during the outage may fail after it ended; neither is news.
type outage struct {
	log  *slog.Logger
	down atomic.Bool // read on every call: the common case takes no lock
	// changes counts the outages begun and ended; a call takes it when it
	// begins (begin).
	changes atomic.Uint64

	mu    sync.Mutex
	why   string
	since time.Time
}

// begin is what a call takes when it begins, for check.
func (o *outage) begin() uint64 { return o.changes.Load() }

// failed records a call begun at start that found the database
// unreachable.
func (o *outage) failed(start uint64, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down.Load() {
		o.why = err.Error()
		return
	}
	if start != o.changes.Load() {
		return // begun before the last outage ended
	}
	o.why, o.since = err.Error(), time.Now()
	o.changes.Add(1)
	o.down.Store(true)
	o.log.Error("postgres: the database cannot be reached; calls are answered ServiceUnavailable until it can", "err", err)
}

// answered records a call begun at start that the database answered.
func (o *outage) answered(start uint64) {
	if !o.down.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down.Load() || start != o.changes.Load() {
		return // begun before the outage began
	}
	o.changes.Add(1)
	o.down.Store(false)
	o.log.Info("postgres: the database can be reached again", "after", time.Since(o.since).Round(time.Millisecond))
}

// reason is why the database is unreachable; "" when the last call reached
// it.
func (o *outage) reason() string {
	if !o.down.Load() {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.why
}

// check classifies the outcome of a call begun at start (begin) and made
// with ctx. An error of a call whose context ended is the caller's doing
// and says nothing of the database.
func (o *outage) check(ctx context.Context, start uint64, err error) error {
	switch {
	case err == nil:
		o.answered(start)
		return nil
	case ctx.Err() != nil:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		// With the caller's context still running, the deadline was the
		// pool's: no connection in time.
		o.failed(start, err)
		return fmt.Errorf("%w: no connection in time: %w", engine.ErrUnavailable, err)
	case unreachable(err):
		o.failed(start, err)
		if errors.Is(err, engine.ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) || errors.Is(err, pgx.ErrNoRows) {
		o.answered(start)
	}
	return err
}

// configure bounds connecting (unless the URL does) and acquiring, and
// drops a connection to a server that turned read-only, so that the pool's
// next connection finds the new primary.
func configure(cfg *pgxpool.Config, trace pgx.QueryTracer) *acquireBound {
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultUnreachableAfter
	}
	onPgError := cc.OnPgError
	cc.OnPgError = func(c *pgconn.PgConn, pe *pgconn.PgError) bool {
		if pe.Code == "25006" {
			return false
		}
		return onPgError == nil || onPgError(c, pe)
	}
	b := &acquireBound{trace: trace}
	b.after.Store(int64(defaultUnreachableAfter))
	cc.Tracer = b
	return b
}

// acquireBound gives each pool acquire a deadline (the statement that
// follows runs on the caller's context). It is the pool's tracer because
// that is the hook pgxpool offers around an acquire.
type acquireBound struct {
	after atomic.Int64    // nanoseconds; tests shorten it
	trace pgx.QueryTracer // tests count statements; nil otherwise
}

type acquireCancel struct{}

func (b *acquireBound) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(b.after.Load()))
	return context.WithValue(ctx, acquireCancel{}, cancel)
}

func (*acquireBound) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if cancel, ok := ctx.Value(acquireCancel{}).(context.CancelFunc); ok {
		cancel()
	}
}

func (b *acquireBound) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if b.trace != nil {
		return b.trace.TraceQueryStart(ctx, c, d)
	}
	return ctx
}

func (b *acquireBound) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if b.trace != nil {
		b.trace.TraceQueryEnd(ctx, c, d)
	}
}

// db is the pool, with every outcome classified by check. Its
// transactions, rows and batches are wrapped alike, so that an error
// surfacing from any of them is classified.
type db struct {
	*pgxpool.Pool
	out *outage
}

func (d *db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	start := d.out.begin()
	tag, err := d.Pool.Exec(ctx, sql, args...)
	return tag, d.out.check(ctx, start, err)
}

func (d *db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	start := d.out.begin()
	r, err := d.Pool.Query(ctx, sql, args...)
	return d.out.rows(ctx, start, r, err)
}

func (d *db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	start := d.out.begin()
	return row{row: d.Pool.QueryRow(ctx, sql, args...), ctx: ctx, start: start, out: d.out}
}

func (d *db) Begin(ctx context.Context) (pgx.Tx, error) {
	start := d.out.begin()
	t, err := d.Pool.Begin(ctx)
	if err != nil {
		return nil, d.out.check(ctx, start, err)
	}
	return &tx{Tx: t, out: d.out}, nil
}

// Ping checks that the database answers.
func (d *db) Ping(ctx context.Context) error {
	start := d.out.begin()
	return d.out.check(ctx, start, d.Pool.Ping(ctx))
}

type tx struct {
	pgx.Tx
	out *outage
}

func (t *tx) Begin(ctx context.Context) (pgx.Tx, error) {
	start := t.out.begin()
	sp, err := t.Tx.Begin(ctx)
	if err != nil {
		return nil, t.out.check(ctx, start, err)
	}
	return &tx{Tx: sp, out: t.out}, nil
}

func (t *tx) Commit(ctx context.Context) error {
	start := t.out.begin()
	return t.out.check(ctx, start, t.Tx.Commit(ctx))
}

func (t *tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	start := t.out.begin()
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, t.out.check(ctx, start, err)
}

func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	start := t.out.begin()
	r, err := t.Tx.Query(ctx, sql, args...)
	return t.out.rows(ctx, start, r, err)
}

func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	start := t.out.begin()
	return row{row: t.Tx.QueryRow(ctx, sql, args...), ctx: ctx, start: start, out: t.out}
}

func (t *tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	start := t.out.begin()
	return &batch{BatchResults: t.Tx.SendBatch(ctx, b), ctx: ctx, start: start, out: t.out}
}

type rows struct {
	pgx.Rows
	ctx   context.Context
	start uint64
	out   *outage
}

// rows wraps what a query returned. A query that returned no error may
// still fail: its rows' Err tells, so only that counts as an answer.
func (o *outage) rows(ctx context.Context, start uint64, r pgx.Rows, err error) (pgx.Rows, error) {
	if err != nil {
		err = o.check(ctx, start, err)
	}
	return &rows{Rows: r, ctx: ctx, start: start, out: o}, err
}

func (r *rows) Err() error { return r.out.check(r.ctx, r.start, r.Rows.Err()) }

type row struct {
	row   pgx.Row
	ctx   context.Context
	start uint64
	out   *outage
}

func (r row) Scan(dest ...any) error { return r.out.check(r.ctx, r.start, r.row.Scan(dest...)) }

type batch struct {
	pgx.BatchResults
	ctx   context.Context
	start uint64
	out   *outage
}

func (b *batch) Exec() (pgconn.CommandTag, error) {
	tag, err := b.BatchResults.Exec()
	return tag, b.out.check(b.ctx, b.start, err)
}

func (b *batch) Query() (pgx.Rows, error) {
	r, err := b.BatchResults.Query()
	return b.out.rows(b.ctx, b.start, r, err)
}

func (b *batch) QueryRow() pgx.Row {
	return row{row: b.BatchResults.QueryRow(), ctx: b.ctx, start: b.start, out: b.out}
}

func (b *batch) Close() error { return b.out.check(b.ctx, b.start, b.BatchResults.Close()) }
