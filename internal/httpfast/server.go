// Package httpfast serves HTTP/1.x keep-alive traffic on plain TCP with a
// loop leaner than net/http's: one goroutine per connection, a reusable
// read buffer, the request head parsed in place, each answer written with
// one system call, and no background read while a handler runs unless it
// runs long enough for a client's going away to matter.
//
// It serves the common subset (HTTP/1.1 and 1.0 requests with a
// Content-Length or no body). A connection whose request falls outside
// it (chunked or Expect: 100-continue bodies, Upgrade, a malformed or
// oversized head, another protocol) is handed, with the bytes already
// read, to the net/http server it was built from, which serves it for
// the rest of its life: what net/http does for odd clients stays what
// it does.
package httpfast

import (
	"context"
	"errors"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves with the configuration of an http.Server: its Handler,
// ReadHeaderTimeout, ReadTimeout, IdleTimeout, MaxHeaderBytes,
// BaseContext, ConnContext and ErrorLog. The http.Server serves the
// connections handed off and must not be served or shut down otherwise.
type Server struct {
	srv     *http.Server
	handOff *handOffListener

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	fallback chan error // the net/http server's Serve result
	shutting atomic.Bool
	dates    dateCache
}

// New returns a Server that follows srv's configuration and hands the
// connections it does not serve to srv.
func New(srv *http.Server) *Server {
	return &Server{srv: srv, conns: make(map[*conn]struct{})}
}

// Serve accepts connections on ln until Shutdown or Close, and returns
// http.ErrServerClosed then, as http.Server.Serve does.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("httpfast: Serve called twice")
	}
	if s.shutting.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.handOff = newHandOffListener(ln.Addr())
	s.fallback = make(chan error, 1)
	go func() { s.fallback <- s.srv.Serve(s.handOff) }()
	s.mu.Unlock()

	base := context.Background()
	if s.srv.BaseContext != nil {
		if base = s.srv.BaseContext(ln); base == nil {
			panic("httpfast: BaseContext returned a nil context")
		}
	}
	base = context.WithValue(base, http.ServerContextKey, s.srv)
	var delay time.Duration // how long to sleep on accept failure
	for {
		rw, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				// As net/http: a temporary failure (too many open files)
				// is retried, backing off.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logf("httpfast: Accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		ctx := context.WithValue(base, http.LocalAddrContextKey, rw.LocalAddr())
		if s.srv.ConnContext != nil {
			if ctx = s.srv.ConnContext(ctx, rw); ctx == nil {
				panic("httpfast: ConnContext returned nil")
			}
		}
		c := newConn(s, rw, ctx)
		if !s.track(c) {
			rw.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests in flight to be answered (their connections then close), or
// for ctx to end, as http.Server.Shutdown does; the net/http server is
// shut down alike.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting.Store(true)
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.mu.Unlock()
	if serr := s.srv.Shutdown(ctx); serr != nil {
		return serr
	}
	// As net/http: poll, closing the connections that are idle, at a
	// growing interval.
	interval := time.Millisecond
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		if s.closeIdle() {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			jitter := time.Duration(rand.Int64N(int64(interval/10) + 1))
			timer.Reset(interval + jitter)
			interval = min(2*interval, 500*time.Millisecond)
		}
	}
}

// closeIdle closes the idle connections and reports whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.idle.Load() {
			c.rwc.Close()
		}
	}
	return len(s.conns) == 0
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.shutting.Store(true)
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.rwc.Close()
	}
	s.mu.Unlock()
	return errors.Join(err, s.srv.Close())
}

func (s *Server) logf(format string, args ...any) {
	if s.srv.ErrorLog != nil {
		s.srv.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...) // as net/http without an ErrorLog
}

// handOffConn gives c, with the bytes already read, to net/http.
func (s *Server) handOffConn(c net.Conn, read []byte) {
	rc := &replayConn{Conn: c, pending: append([]byte(nil), read...)}
	if !s.handOff.give(rc) {
		c.Close()
	}
}

// recoverHandler logs a handler's panic as net/http does.
func (s *Server) recoverHandler(remote string, err any) {
	if err == http.ErrAbortHandler {
		return
	}
	const size = 64 << 10
	buf := make([]byte, size)
	buf = buf[:runtime.Stack(buf, false)]
	s.logf("http: panic serving %v: %v\n%s", remote, err, buf)
}
