// Package postgres is a Ferry store on PostgreSQL 15 or newer (pgx v5), for
// stateless Ferry nodes that share one database. It creates and migrates its
// own schema. Every timestamp comes from the node's clock.Clock and travels
// into SQL as a parameter (nanoseconds since the Unix epoch), never from
// now(), so that a test clock drives visibility, delays and retention.
//
// What is built: queues, standard and FIFO messages (send with FIFO
// deduplication, receive with redrive to a dead-letter queue and FIFO
// receive attempts, delete, visibility, purge, stats), long polls woken
// through LISTEN/NOTIFY and timers on the clock, records and metric
// points, and move tasks run by the node that holds their lease.
package postgres

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/handle"
)

// DefaultSchema is the schema Ferry keeps its tables in unless told otherwise.
const DefaultSchema = "ferry"

// maxLongPoll is the longest long poll SQS allows. A receive or visibility
// change that makes a message visible sooner than this tells the other
// nodes' waiters; later deadlines are found by each waiter's own receive.
const maxLongPoll = 20 * time.Second

// Options configure Open.
type Options struct {
	// URL is a PostgreSQL connection string (URL or key=value form).
	URL string
	// Schema holds Ferry's tables; empty means DefaultSchema. It is
	// created if missing.
	Schema string
	// MaxConns caps the connection pool; zero is pgxpool's default (the
	// larger of 4 and the number of CPUs). One more connection listens
	// for notifications.
	MaxConns int32
	Clock    clock.Clock
	Logger   *slog.Logger
	// HoldMoveTasks keeps this node from running move tasks until the
	// first OnMovedByTask, so that its hook is told of every move.
	HoldMoveTasks bool
	// Waits turns SQS's 60-second waits off for the calls through this
	// node; the zero value keeps them. Deletes and purges are recorded
	// either way, for the nodes that keep them.
	Waits engine.Waits

	leases       leaseTimes    // tests shorten them
	janitorEvery time.Duration // zero: defaultJanitorEvery
	foldEvery    time.Duration // zero: defaultFoldEvery, negative: never
	rotation     rotationOptions
	// statsEvery paces the look for tables grown past their statistics;
	// zero: defaultStatsEvery, negative: never (a test looks itself).
	statsEvery time.Duration
	// trace sees every statement of the pool (tests count them).
	trace pgx.QueryTracer
}

// Store is the PostgreSQL store. Its methods are safe for concurrent use.
type Store struct {
	pool    *db
	out     *outage       // whether the database can be reached
	acquire *acquireBound // how long a call waits for a connection
	clock   clock.Clock
	log     *slog.Logger
	waits   engine.Waits
	schema  string
	channel string // the schema's notification channel
	// node names this node (while it runs) in leases, in the
	// notifications it sends and in its metric points.
	node   string
	signer *handle.Signer
	hub    *hub
	views  *views
	tasks  *runner
	// rotation is how the message tables are rotated (rotation.go).
	rotation rotationOptions
	// waiting are this node's long-poll registrations (waiters.go).
	waiting registrations
	// vacuum is the last sample of what holds vacuum back (rotation.go).
	vacuum vacuumWatch

	mu      sync.Mutex
	closing bool
	active  sync.WaitGroup // calls in progress, which Close waits for
	done    chan struct{}  // closed by Close: ends long polls

	stopBackground context.CancelFunc
	background     sync.WaitGroup // the janitor, the rotator and the statistics' watch
}

// Open connects, migrates the schema, loads the shared secrets and starts
// listening for notifications.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse the URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	noJIT(cfg.ConnConfig)
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	acquire := configure(cfg, opts.trace)
	ms, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	out := &outage{log: opts.Logger}
	s := &Store{
		pool:    &db{Pool: pool, out: out},
		out:     out,
		acquire: acquire,
		clock:   opts.Clock,
		log:     opts.Logger,
		waits:   opts.Waits,
		schema:  opts.Schema,
		channel: "ferry:" + opts.Schema,
		node:    newNodeName(),
		views:   newViews(),
		done:    make(chan struct{}),

		rotation: opts.rotation.withDefaults(),
	}
	if err := s.open(ctx, ms, cfg.ConnConfig); err != nil {
		pool.Close()
		return nil, err
	}
	s.tasks = startRunner(s, opts.HoldMoveTasks, opts.leases)
	var bg context.Context
	bg, s.stopBackground = context.WithCancel(context.Background())
	s.background.Add(2)
	go s.leased(bg, "janitor", cmp.Or(opts.janitorEvery, defaultJanitorEvery), s.sweep)
	go s.rotator(bg)
	if opts.foldEvery >= 0 {
		s.background.Add(1)
		go s.leased(bg, "counts", cmp.Or(opts.foldEvery, defaultFoldEvery), s.foldCounts)
	}
	if opts.statsEvery >= 0 {
		s.background.Add(1)
		go s.leased(bg, "statistics", cmp.Or(opts.statsEvery, defaultStatsEvery), func(ctx context.Context) error {
			_, err := s.analyzeGrown(ctx)
			return err
		})
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, ms []migration, cc *pgx.ConnConfig) error {
	if err := migrate(ctx, s.pool.Pool, s.schema, ms); err != nil {
		return err
	}
	key, err := s.secret(ctx, "receipt-handle-key", randomSecret)
	if err != nil {
		return err
	}
	s.signer = handle.NewSigner(key)
	var commit string
	if err := s.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&commit); err == nil && commit == "off" {
		s.log.Warn("postgres: synchronous_commit is off: a crash of the database loses the sends and deletes acknowledged last")
	}
	s.hub, err = startHub(ctx, cc, s.channel, s.node, s.views, s.clock, s.log)
	return err
}

// noJIT turns JIT compilation off for the connections unless the URL sets
// it: the store's statements are short, and a plan whose estimate crosses
// jit_above_cost (a join over a table whose statistics are stale) would
// compile for tens of milliseconds at every execution to save far less.
func noJIT(cc *pgx.ConnConfig) {
	if _, set := cc.RuntimeParams["jit"]; set || strings.Contains(cc.RuntimeParams["options"], "jit") {
		return
	}
	cc.RuntimeParams["jit"] = "off"
}

// enter starts a call; every call that returns leaves.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return engine.ErrClosed
	}
	s.active.Add(1)
	return nil
}

func (s *Store) leave() { s.active.Done() }

// Close ends long polls, waits for the calls in progress, gives this
// node's move tasks up for another node to take over at once, and closes
// the connections. A second Close does nothing.
func (s *Store) Close() error {
	if s.halt() {
		s.shutdown(true)
	}
	return nil
}

// halt refuses calls from now on, ends the long polls and tells the
// background work to stop, without waiting for anything; false if the
// store was stopped already. The tests crash a store between halt and
// shutdown.
func (s *Store) halt() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.closing = true
	close(s.done)
	s.stopBackground()
	s.tasks.cancel()
	return true
}

// shutdown waits for what halt stopped and closes the connections; release
// gives the move-task leases up.
func (s *Store) shutdown(release bool) {
	s.background.Wait()
	s.tasks.stop(release)
	s.active.Wait()
	s.unregister()
	s.hub.stop()
	s.pool.Close()
}

// now is the clock's time in the store's unit.
func (s *Store) now() int64 { return s.clock.Now().UnixNano() }

// toNS and fromNS convert times; the zero time is 0.
func toNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// querier is what the statements run on: the pool, or a transaction.
type querier interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
