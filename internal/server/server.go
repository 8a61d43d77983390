// Package server wires Ferry together: the engine, the services, the HTTP
// listener, health and shutdown. It is the one place that knows all parts;
// the daemon is a library so that tests start a real server on
// 127.0.0.1:0 and drive it with the AWS SDKs.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/cloudwatch"
	"github.com/ferrymq/ferry/internal/console"
	"github.com/ferrymq/ferry/internal/egress"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/httpfast"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
	"github.com/ferrymq/ferry/internal/sns"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sqs"
	"github.com/ferrymq/ferry/internal/topology"
)

// Config is everything a Ferry server needs to start.
type Config struct {
	// Listen is the TCP address, e.g. "127.0.0.1:4566" or "127.0.0.1:0".
	Listen string
	// Store keeps everything the services keep; required. Start takes it
	// over: the server closes it in Shutdown, or when Start fails. Its
	// move tasks may be held until Start sets the hook that counts their
	// moves (engine.Store.OnMovedByTask).
	Store engine.Store
	// StoreName names the store in the startup log line (its directory,
	// "memory").
	StoreName string
	// DataDir holds the server's own files: the SNS signing key, in
	// DataDir/sns. Empty keeps them in memory, lost at a stop (as with a
	// store in memory).
	DataDir string
	// Account and Region name queues in URLs and ARNs.
	Account string
	Region  string
	// QueueURLBase, when set, is the scheme://host[:port] of queue URLs;
	// otherwise each response uses the Host the client sent.
	QueueURLBase string
	// SMTPAddr (host:port) and SMTPFrom send SNS email notifications;
	// without SMTPAddr they are only recorded (GET /_ferry/sns/deliveries).
	SMTPAddr, SMTPFrom string
	// CABundle is a PEM file of extra roots that SNS trusts when it
	// delivers to https endpoints.
	CABundle string
	// Clock is the time of every service and of the store (which must be
	// opened on the same clock): clock.Real when nil.
	Clock  clock.Clock
	Logger *slog.Logger
	// ClockControl serves /_ferry/clock, which freezes, moves and resumes
	// Clock; it needs Clock to be a *clock.Controlled (clock.go).
	ClockControl bool

	// ReadTimeout bounds how long a request's headers and body may take to
	// arrive (0: DefaultReadTimeout; negative: no bound). A long poll's wait
	// does not count: it begins once the body has arrived.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has carried no request
	// for this long (0: DefaultIdleTimeout; negative: never).
	IdleTimeout time.Duration
	// MaxConnections caps the connections served at once (0:
	// DefaultMaxConnections; negative: no cap). Connections over the cap are
	// answered 503 ServiceUnavailable and closed.
	MaxConnections int
	// HTTPServer is what serves HTTP/1.x on a plain-TCP API listener:
	// HTTPServerFast ("" too), or HTTPServerNet for Go's net/http alone.
	// TLS (and so HTTP/2) is always net/http's.
	HTTPServer string

	// SNSDeliveryLog receives SNS delivery status lines (topics with
	// <P>SuccessFeedbackRoleArn and the like): a file path, or "-" for
	// stdout; "" keeps them only at GET /_ferry/sns/delivery-logs.
	SNSDeliveryLog string

	// AuthVerify requires a valid SigV4 signature, by a key of
	// Credentials, on every API request. Credentials, when set, also name
	// the account of their keys when nothing is verified. With it, Ferry's
	// admin endpoints need AdminToken (and are closed without one), and SNS
	// HTTP/S deliveries may reach only public addresses and
	// SNSAllowedEndpoints.
	AuthVerify  bool
	Credentials *sigv4.Credentials
	// TLSCert and TLSKey are PEM files of the server's certificate (its
	// chain) and key: with both, every listener serves HTTPS, HTTP/2 and
	// HTTP/1.1, and the links Ferry hands out use https.
	TLSCert, TLSKey string
	// AllowedHosts are Host names accepted besides the defaults (localhost,
	// the listen addresses, this machine's name, ...; see hostSet): a name,
	// an address, "*.domain" for its subdomains, or "*" for any.
	AllowedHosts []string
	// AdminToken, when set, is the bearer token Ferry's admin endpoints
	// (listed in endpoints) require.
	AdminToken string
	// AdminListen, when set, is a second address serving Ferry's own
	// endpoints; the API's listener then serves only the APIs, health and
	// the SNS signing certificate.
	AdminListen string
	// NoConsole turns the console (package console: /console/) off.
	NoConsole bool
	// ConsoleListen, when set, is an address serving the console alone;
	// otherwise the console is served on AdminListen when set, else on
	// Listen.
	ConsoleListen string
	// Version names Ferry's build in the console.
	Version string
	// SNSAllowedEndpoints admits SNS deliveries, with AuthVerify, to addresses
	// that are not public: CIDR prefixes, addresses or host names.
	SNSAllowedEndpoints []string

	// FaultInjection turns on fault rules (/_ferry/faults): SQS actions
	// and SNS deliveries that fail on purpose. FaultSeed, when set, seeds
	// their decisions; otherwise a random seed, shown in the listing.
	FaultInjection bool
	FaultSeed      *uint64
	// NoFailureHistory turns the failure history off: receives record
	// nothing in their messages' history, and GET /_ferry/history answers
	// 404 (history.go).
	NoFailureHistory bool

	// SamplerLease and AlarmLease are, on a store other nodes share, how
	// long the leases on metric sampling and alarm evaluation last
	// unrenewed: how soon another node carries on when the holder dies
	// (0: metrics.DefaultSamplerLease, cloudwatch.DefaultAlarmLease).
	SamplerLease, AlarmLease time.Duration

	// Init, when set, is applied once the store is open and before the
	// listener answers anything (topology.Apply): a refusal stops Start.
	Init *topology.Topology
}

// Defaults for an unset Config field.
const (
	DefaultListen  = "127.0.0.1:4566"
	DefaultAccount = "000000000000"
	DefaultRegion  = "us-east-1"
	// DefaultReadTimeout is time enough for the largest body (8 MiB) over a
	// link of 300 KB/s, and frees a slow client's connection within half a
	// minute.
	DefaultReadTimeout = 30 * time.Second
	// HTTPServerFast is the lean HTTP/1.1 loop (package httpfast), which
	// hands any request outside its subset to net/http.
	HTTPServerFast = "fast"
	// HTTPServerNet is Go's net/http alone.
	HTTPServerNet = "net"
	// DefaultIdleTimeout is longer than the 90 s that the Go SDK's and Go's
	// default transports keep an idle connection (the Java SDK keeps 60 s),
	// so that those clients close first and never send a request on a
	// connection Ferry is closing; it still ends connections nobody uses.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxConnections leaves room for thousands of SDK clients and
	// long polls; each idle connection costs Ferry some 20 KiB.
	DefaultMaxConnections = 4096
)

func (c *Config) fill() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Account == "" {
		c.Account = DefaultAccount
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Server is a running Ferry.
type Server struct {
	cfg     Config
	store   engine.Store
	sqs     *sqs.Port
	sns     *sns.Service
	cw      *cloudwatch.Service
	metrics *metrics.Store
	sampler *metrics.Sampler
	changes *console.Changes // nil with the console off
	http    *http.Server
	// fast serves the API listener with httpfast's loop, which hands the
	// connections it does not serve to http; nil when http serves it all.
	fast   *httpfast.Server
	ln     net.Listener
	served chan error
	routes *routes
	api    *protocol.Handler
	scheme string // "http" or "https"
	// admin serves Ferry's own endpoints on Config.AdminListen; nil
	// without one.
	admin       *http.Server
	adminLn     net.Listener
	adminServed chan error
	// console serves the console on Config.ConsoleListen; nil without
	// one.
	console       *http.Server
	consoleLn     net.Listener
	consoleServed chan error
	// resetMu serialises resets; resets follows other nodes' (reset.go).
	resetMu sync.Mutex
	resets  *resetNews
	// faults holds the fault rules; nil when fault injection is off.
	faults   *faults.Set
	drain    context.Context // cancelled when shutdown begins: long polls answer
	stopAll  context.CancelFunc
	once     sync.Once
	closeErr error
}

// Start binds the listener and starts serving from cfg.Store. The caller
// must call Shutdown.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Config.Store is required")
	}
	cfg.fill()
	if cfg.AuthVerify && cfg.Credentials.Len() == 0 {
		cfg.Store.Close()
		return nil, errors.New("server: verifying signatures needs credentials (--credentials)")
	}
	if cfg.HTTPServer != "" && cfg.HTTPServer != HTTPServerFast && cfg.HTTPServer != HTTPServerNet {
		cfg.Store.Close()
		return nil, fmt.Errorf("server: HTTP server %q: want %s or %s", cfg.HTTPServer, HTTPServerFast, HTTPServerNet)
	}
	if _, ok := cfg.Clock.(*clock.Controlled); cfg.ClockControl && !ok {
		cfg.Store.Close()
		return nil, errors.New("server: clock control needs the store and the server on a *clock.Controlled")
	}
	began := time.Now() // the wall clock: how long the start took
	eng := cfg.Store
	datapoints := metrics.New(metrics.Options{Clock: cfg.Clock, Account: cfg.Account})
	sqsCfg := sqs.Config{
		Account:        cfg.Account,
		Region:         cfg.Region,
		Backend:        eng,
		Clock:          cfg.Clock,
		Logger:         cfg.Logger,
		QueueURLBase:   cfg.QueueURLBase,
		Metrics:        datapoints,
		FailureHistory: !cfg.NoFailureHistory,
	}
	var faultSet *faults.Set
	var sqsSvc *protocol.Service // its actions are what rules may name
	if cfg.FaultInjection {
		faultSet = faults.New(faults.Options{Seed: cfg.FaultSeed, SQSError: sqsError, ParseQueueURL: sqs.ParseQueueURL,
			SQSAction: func(name string) bool { _, ok := sqsSvc.Actions[name]; return ok }})
		sqsCfg.Faults = faultSet
	}
	// Messages enter SQS queues through its port, whoever sends them.
	queues := sqs.NewPort(sqsCfg)
	// Before anything serves: tasks the store resumed may be held until
	// now, so that every move they make is counted.
	eng.OnMovedByTask(queues.MovedByTask)
	tlsCfg, err := loadTLS(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		eng.Close()
		return nil, err
	}
	// The allow-list is checked in every mode, so that a mistake shows
	// before auth is turned on; deliveries are guarded only with auth on.
	egressPolicy, err := egress.Parse(cfg.SNSAllowedEndpoints)
	if err != nil {
		eng.Close()
		return nil, err
	}
	if !cfg.AuthVerify {
		egressPolicy = nil
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	var adminLn net.Listener
	if cfg.AdminListen != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			ln.Close()
			eng.Close()
			return nil, fmt.Errorf("listen on %s: %w", cfg.AdminListen, err)
		}
	}
	var consoleLn net.Listener
	if cfg.ConsoleListen != "" && !cfg.NoConsole {
		if consoleLn, err = net.Listen("tcp", cfg.ConsoleListen); err != nil {
			ln.Close()
			if adminLn != nil {
				adminLn.Close()
			}
			eng.Close()
			return nil, fmt.Errorf("listen on %s: %w", cfg.ConsoleListen, err)
		}
	}
	closeListeners := func() {
		ln.Close()
		if adminLn != nil {
			adminLn.Close()
		}
		if consoleLn != nil {
			consoleLn.Close()
		}
	}
	hosts, err := newHostSet(cfg.AllowedHosts, cfg.Listen, ln.Addr().String(), cfg.QueueURLBase, cfg.AdminListen, addrOf(adminLn),
		cfg.ConsoleListen, addrOf(consoleLn))
	if err != nil {
		closeListeners()
		eng.Close()
		return nil, err
	}
	drain, stopAll := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, store: eng, sqs: queues, ln: ln, served: make(chan error, 1), drain: drain, stopAll: stopAll,
		scheme: "http", adminLn: adminLn, adminServed: make(chan error, 1), faults: faultSet,
		consoleLn: consoleLn, consoleServed: make(chan error, 1)}
	if tlsCfg != nil {
		s.scheme = "https"
	}

	// SNS links (SubscribeURL, SigningCertURL) must reach this server,
	// whose address is known only now that it listens.
	baseURL := cfg.QueueURLBase
	if baseURL == "" {
		baseURL = s.URL()
	}
	s.metrics = datapoints
	// Other nodes' record changes are watched from before the services
	// read their records; news that comes before they are up makes them
	// read everything again.
	watch := &recordWatch{}
	eng.WatchRecords(watch.changed)
	signerDir := ""
	if cfg.DataDir != "" {
		signerDir = filepath.Join(cfg.DataDir, "sns")
	}
	snsSvc, err := sns.New(ctx, sns.Config{
		Account:   cfg.Account,
		Region:    cfg.Region,
		Backend:   eng,
		SQS:       queues,
		Records:   eng,
		Sequences: eng,
		Cluster:   eng,
		Clock:     cfg.Clock,
		Logger:    cfg.Logger,
		Metrics:   s.metrics,
		Delivery: delivery.Options{
			BaseURL:   baseURL,
			SignerDir: signerDir,
			CABundle:  cfg.CABundle,
			SMTPAddr:  cfg.SMTPAddr,
			SMTPFrom:  cfg.SMTPFrom,
			StatusLog: cfg.SNSDeliveryLog,
			History:   !cfg.NoFailureHistory,
			Egress:    egressPolicy,
			Faults:    faultSet,
		},
	})
	if err != nil {
		closeListeners()
		eng.Close()
		return nil, fmt.Errorf("start sns: %w", err)
	}
	s.sns = snsSvc

	// Datapoints survive restarts of a durable store; a store that cannot
	// be read costs the history, not the broker. On a shared store the
	// node's own series start empty, and what is stored, every node's,
	// is read as the other nodes' (a restarted node is a new node):
	// loading it into its own series would save it again as its own.
	var persist engine.MetricStore
	switch {
	case eng.Shared():
		persist = eng
		if err := s.metrics.LoadPeers(ctx, eng); err != nil {
			cfg.Logger.Error("metrics: load datapoints", "err", err)
		}
	case eng.Durable():
		persist = eng
		if err := s.metrics.Load(ctx, eng); err != nil {
			cfg.Logger.Error("metrics: load datapoints", "err", err)
		}
	}
	// Every account's queues are reported but the hidden SNS delivery
	// queues'.
	hidden := []string{delivery.QueueAccount}
	requests := metrics.NewRequests()
	registry := prometheus.NewRegistry()
	var faultMetrics prometheus.Collector
	if faultSet != nil {
		faultMetrics = faultSet.Collector()
	}
	for _, c := range []prometheus.Collector{
		faultMetrics,
		metrics.NewCollector(s.metrics, eng, hidden, cfg.Logger),
		metrics.NewSNSCollector(s.metrics, cfg.Logger),
		eng.Collector(),
		requests.Collector(),
		// The process's own memory, goroutines and file descriptors
		// (go_*, process_*): what a soak or an operator watches for growth.
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.clockCollector(),
	} {
		if c == nil {
			continue
		}
		if err := registry.Register(c); err != nil {
			snsSvc.Close()
			closeListeners()
			eng.Close()
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	cwSvc, err := cloudwatch.New(ctx, cloudwatch.Config{
		Account:   cfg.Account,
		Region:    cfg.Region,
		Metrics:   s.metrics,
		Records:   eng,
		Notifier:  snsSvc,
		Clock:     cfg.Clock,
		Logger:    cfg.Logger,
		Cluster:   eng,
		LeaseTime: cfg.AlarmLease,
	})
	if err != nil {
		snsSvc.Close()
		closeListeners()
		eng.Close()
		return nil, fmt.Errorf("start cloudwatch: %w", err)
	}
	s.cw = cwSvc
	s.startResetNews(ctx)
	watch.deliver(s.recordChanged)
	s.sampler = metrics.NewSampler(metrics.SamplerOptions{
		Store: s.metrics, Backend: eng, Hidden: hidden, Clock: cfg.Clock, Logger: cfg.Logger, Persist: persist,
		Cluster: eng, LeaseTime: cfg.SamplerLease,
	})

	sqsCfg.Activity = s.sampler
	sqsSvc = sqs.NewService(sqsCfg)
	observe := requests.Observe
	if !cfg.NoConsole {
		// The console's event streams look again once a request is
		// answered, rather than at their next periodic check.
		s.changes = console.NewChanges()
		observe = func(service, action string, status int, took time.Duration) {
			requests.Observe(service, action, status, took)
			s.changes.Changed()
		}
	}
	api := &protocol.Handler{
		Logger:   cfg.Logger,
		Observe:  observe,
		Services: []*protocol.Service{sqsSvc, snsSvc.Protocol(), cwSvc.Protocol()},
		Auth:     protocol.Auth{Verify: cfg.AuthVerify, DefaultAccount: cfg.Account, DefaultRegion: cfg.Region},
	}
	if cfg.Credentials != nil {
		// Clients sign with the wall clock: a controlled clock moved by days
		// would refuse every signature as skewed, so the check of the skew
		// reads the wall clock under it (a fake clock in tests).
		api.Auth.Verifier = &sigv4.Verifier{Keys: cfg.Credentials, Regions: region.Valid, Clock: clock.WallOf(cfg.Clock)}
	}
	// stopServices undoes what started above, when Start fails now.
	stopServices := func() {
		s.resets.close()
		s.sampler.Close(ctx)
		cwSvc.Close()
		snsSvc.Close()
		closeListeners()
		eng.Close()
	}
	if err := api.Check(); err != nil {
		stopServices()
		return nil, fmt.Errorf("describe actions: %w", err)
	}
	s.api = api
	// The file is applied before anything serves, so that a client that
	// finds Ferry up (health included) finds its queues too.
	if err := s.applyInit(ctx); err != nil {
		stopServices()
		return nil, err
	}
	g := &guard{hosts: hosts, adminToken: cfg.AdminToken, authOn: cfg.AuthVerify, api: api}
	s.routes = &routes{api: http.NewServeMux(), guard: g, log: cfg.Logger}
	if adminLn != nil {
		s.routes.admin = http.NewServeMux()
	}
	if consoleLn != nil {
		s.routes.console = http.NewServeMux()
	}
	mux := s.routes
	mux.HandleFunc("GET /_ferry/health", s.health)
	// LocalStack's health path, which existing wait-for-ready scripts poll.
	mux.HandleFunc("GET /_localstack/health", s.health)
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}))
	snsSvc.Register(mux)
	mux.HandleFunc("POST /_ferry/reset", s.ferryReset)
	mux.HandleFunc("POST /_ferry/faults", s.addFault)
	mux.HandleFunc("GET /_ferry/faults", s.listFaults)
	mux.HandleFunc("DELETE /_ferry/faults", s.clearFaults)
	mux.HandleFunc("DELETE /_ferry/faults/{id}", s.removeFault)
	mux.HandleFunc("GET /_ferry/history", s.history)
	mux.HandleFunc("GET /_ferry/export", s.ferryExport)
	mux.HandleFunc("/moto-api/reset", s.motoReset)
	mux.HandleFunc("POST /_localstack/state/reset", s.localstackReset)
	mux.HandleFunc("POST /_localstack/state/{service}/reset", s.localstackReset)
	s.registerClock(mux)
	if !cfg.NoConsole {
		mux.Handle("/console/", s.newConsole())
	}
	mux.Handle("/", api)

	s.http = &http.Server{
		Handler:           refusing(g.check(s.routes.api), api),
		ReadHeaderTimeout: 30 * time.Second,
		// net/http's ReadTimeout runs from a request's first byte to the end
		// of its body, and is lifted once the body has been read: an action
		// that waits (a long poll) is not cut short, whereas a WriteTimeout
		// would end 20-second polls. A body that misses it answers
		// RequestTimeout and the connection closes.
		ReadTimeout: cfg.ReadTimeout,
		IdleTimeout: cfg.IdleTimeout,
		// Request contexts derive from drain, so that a shutdown ends every
		// long poll at once with an empty answer.
		BaseContext: func(net.Listener) context.Context { return drain },
		ConnContext: connContext,
		ErrorLog:    slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	serveLn := ln
	if cfg.MaxConnections > 0 {
		serveLn = newConnLimit(ln, cfg.MaxConnections, cfg.Logger)
	}
	s.http.TLSConfig = tlsCfg.Clone()
	if tlsCfg == nil && cfg.HTTPServer != HTTPServerNet {
		s.fast = httpfast.New(s.http)
		go func() { s.served <- s.fast.Serve(serveLn) }()
	} else {
		go func() { s.served <- serve(s.http, serveLn) }()
	}
	if adminLn != nil {
		s.admin = s.besideAPI(g.check(s.routes.admin), tlsCfg)
		go func() { s.adminServed <- serve(s.admin, adminLn) }()
	}
	if consoleLn != nil {
		s.console = s.besideAPI(g.check(s.routes.console), tlsCfg)
		go func() { s.consoleServed <- serve(s.console, consoleLn) }()
	}
	cfg.Logger.Info("ferry listening", "addr", ln.Addr().String(), "admin_addr", addrOf(adminLn), "console", s.ConsoleURL(), "tls", tlsCfg != nil, "store", cfg.StoreName,
		"account", cfg.Account, "region", cfg.Region, "read_timeout", cfg.ReadTimeout, "idle_timeout", cfg.IdleTimeout,
		"max_connections", cfg.MaxConnections, "auth", authMode(cfg), "credentials", cfg.Credentials.Len(), "startup", time.Since(began))
	return s, nil
}

// authMode names the authentication mode for the log.
func authMode(cfg Config) string {
	if cfg.AuthVerify {
		return "verify"
	}
	return "off"
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server's base URL, e.g. http://127.0.0.1:4566, or https://
// with TLS.
func (s *Server) URL() string { return s.scheme + "://" + s.Addr() }

// AdminURL is the base URL of Ferry's own endpoints: the admin listener's
// when there is one, else URL.
func (s *Server) AdminURL() string {
	if s.adminLn == nil {
		return s.URL()
	}
	return s.scheme + "://" + s.adminLn.Addr().String()
}

// ConsoleURL is the console's address, "" when it is off.
func (s *Server) ConsoleURL() string {
	switch {
	case s.cfg.NoConsole:
		return ""
	case s.consoleLn != nil:
		return s.scheme + "://" + s.consoleLn.Addr().String() + "/console/"
	}
	return s.AdminURL() + "/console/"
}

// Routes lists the patterns the server has registered, for the test that
// checks each is classified.
func (s *Server) Routes() []string { return s.routes.Registered() }

// Engine exposes the store, for tests that inspect state directly.
func (s *Server) Engine() engine.Store { return s.store }

// Metrics exposes the per-queue metric store.
func (s *Server) Metrics() *metrics.Store { return s.metrics }

// Sampler exposes the metrics sampler (its Ticks, for tests).
func (s *Server) Sampler() *metrics.Sampler { return s.sampler }

// SNS exposes the SNS service (its counters and recorded deliveries).
func (s *Server) SNS() *sns.Service { return s.sns }

// CloudWatch exposes the CloudWatch service (its ticks and lease, for
// tests).
func (s *Server) CloudWatch() *cloudwatch.Service { return s.cw }

// recordChanged tells every service that keeps records in memory that
// another node changed one (engine.Cluster.WatchRecords). It runs on the
// store's goroutine: each service only queues the news.
func (s *Server) recordChanged(kind, key string) {
	s.sns.RecordChanged(kind, key)
	s.cw.RecordChanged(kind, key)
	s.resets.news.Add(kind, key)
}

// recordWatch holds news of other nodes' record changes until the
// services are up to take it.
type recordWatch struct {
	mu     sync.Mutex
	fn     func(kind, key string)
	missed bool // news came before fn
}

func (w *recordWatch) changed(kind, key string) {
	w.mu.Lock()
	fn := w.fn
	if fn == nil {
		w.missed = true
	}
	w.mu.Unlock()
	if fn != nil {
		fn(kind, key)
	}
}

// deliver hands the news to fn from now on; news that came before makes
// fn read everything again.
func (w *recordWatch) deliver(fn func(kind, key string)) {
	w.mu.Lock()
	w.fn = fn
	missed := w.missed
	w.mu.Unlock()
	if missed {
		fn("", "")
	}
}

// health answers in LocalStack's shape ("status", "services"), plus the
// store's condition. A full disk keeps HTTP 200 and the services
// "running": they still serve reads, and a restart (what an orchestrator
// does on a failing probe) frees no space; "status" says "degraded" and
// "store" why, for monitoring to alert on. An unreachable database is
// answered alike, HTTP 200, for the same reason (a node cannot even start
// without it), but with the services in "error": they answer every call
// ServiceUnavailable until the database is back. A store that serves but
// less well (vacuum held back on PostgreSQL) is "degraded" with the
// services "running".
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if why := s.store.Unreachable(r.Context()); why != "" {
		reason, _ := json.Marshal("unreachable: " + why)
		io.WriteString(w, `{"status":"degraded","services":{"sqs":"error","sns":"error","cloudwatch":"error"},"store":`+string(reason)+`}`)
		return
	}
	if why := s.store.Refusing(); why != "" {
		reason, _ := json.Marshal("read-only: " + why)
		io.WriteString(w, `{"status":"degraded","services":{"sqs":"running","sns":"running","cloudwatch":"running"},"store":`+string(reason)+`}`)
		return
	}
	if why := s.store.Degraded(); why != "" {
		reason, _ := json.Marshal(why)
		io.WriteString(w, `{"status":"degraded","services":{"sqs":"running","sns":"running","cloudwatch":"running"},"store":`+string(reason)+`}`)
		return
	}
	io.WriteString(w, `{"status":"running","services":{"sqs":"running","sns":"running","cloudwatch":"running"},"store":"ok"}`)
}

// Shutdown stops accepting requests, ends long polls with empty answers,
// waits for in-flight requests (until ctx ends), stops SNS deliveries, then
// closes the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		s.stopAll()
		var api stoppable = s.http
		if s.fast != nil {
			api = s.fast
		}
		err := stopListener(ctx, api, s.served)
		if s.admin != nil {
			err = errors.Join(err, stopListener(ctx, s.admin, s.adminServed))
		}
		if s.console != nil {
			err = errors.Join(err, stopListener(ctx, s.console, s.consoleServed))
		}
		s.resets.close()
		// Alarms publish to SNS, and SNS delivery workers use the engine:
		// they stop first, in that order.
		if cerr := s.cw.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close cloudwatch: %w", cerr))
		}
		if cerr := s.sns.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close sns: %w", cerr))
		}
		// The sampler saves the datapoints into the store: before it closes.
		if cerr := s.sampler.Close(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("save metrics: %w", cerr))
		}
		if cerr := s.store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
		s.closeErr = err
		s.cfg.Logger.Info("ferry stopped")
	})
	return s.closeErr
}

// besideAPI is the server of a listener beside the API's: timeouts as
// the API's, TLS of its own (each server adds its protocols to its own
// configuration), no cap on connections.
func (s *Server) besideAPI(h http.Handler, tlsCfg *tls.Config) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.http.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		TLSConfig:         tlsCfg.Clone(),
		ErrorLog:          s.http.ErrorLog,
	}
}

// stoppable is a server of one listener: *http.Server or
// *httpfast.Server.
type stoppable interface {
	Shutdown(context.Context) error
	Close() error
}

// stopListener shuts srv down, at once when ctx ends first, and waits
// for its serve loop, whose end it reads from served.
func stopListener(ctx context.Context, srv stoppable, served chan error) error {
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		srv.Close()
	}
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// Run starts a server and serves until ctx is cancelled, then shuts down
// within grace.
func Run(ctx context.Context, cfg Config, grace time.Duration) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-s.served:
		s.served <- err // Shutdown reads it again
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return s.Shutdown(sctx)
}
