package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/ferrymq/ferry/internal/protocol"
)

// connLimit is a listener that serves at most max connections at once.
// Beyond them, up to min(max, maxRefusing) more are answered 503
// ServiceUnavailable in the protocol they asked in, with Connection: close
// (the SDKs retry it with backoff); a connection beyond those is closed as
// soon as it is accepted. Either way Accept never waits for a slot, so the
// kernel's backlog never fills with connections nobody answers.
type connLimit struct {
	net.Listener
	max, maxRefusing int64
	logger           *slog.Logger

	open, refusing atomic.Int64
	full           atomic.Bool // refusing since the last connection served
}

// maxRefusing bounds the connections being refused at once: each costs a
// goroutine and the read of its headers.
const maxRefusing = 64

func newConnLimit(ln net.Listener, max int, logger *slog.Logger) *connLimit {
	return &connLimit{Listener: ln, max: int64(max), maxRefusing: int64(min(max, maxRefusing)), logger: logger}
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			if l.full.CompareAndSwap(true, false) {
				l.logger.Info("accepting connections again", "max_connections", l.max)
			}
			return &countedConn{Conn: c, count: &l.open}, nil
		}
		l.open.Add(-1)
		if l.full.CompareAndSwap(false, true) {
			l.logger.Warn("too many open connections: refusing new ones", "max_connections", l.max)
		}
		if l.refusing.Add(1) <= l.maxRefusing {
			return &countedConn{Conn: c, count: &l.refusing, refused: true}, nil
		}
		l.refusing.Add(-1)
		c.Close()
	}
}

// countedConn gives its slot back when it closes.
type countedConn struct {
	net.Conn
	count   *atomic.Int64
	refused bool
	once    sync.Once
}

// Close frees the slot before it closes the socket, so that a client that
// has seen the connection end finds the slot free.
func (c *countedConn) Close() error {
	c.once.Do(func() { c.count.Add(-1) })
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close the connection before it closes
// it, so that an answer followed by a close is not lost to a reset.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type refusedKey struct{}

// connContext marks the requests of a refused connection (under TLS, or
// handed from httpfast's loop to net/http, of the connection underneath).
func connContext(ctx context.Context, c net.Conn) context.Context {
	for {
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = nc.NetConn()
	}
	if cc, ok := c.(*countedConn); ok && cc.refused {
		return context.WithValue(ctx, refusedKey{}, true)
	}
	return ctx
}

// refusing answers every request of a refused connection with
// ServiceUnavailable, shaped by api, and closes the connection after it.
func refusing(next http.Handler, api *protocol.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(refusedKey{}) != nil {
			w.Header().Set("Connection", "close")
			api.Refuse(w, r, protocol.ErrServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}
