package httpfast

import (
	"net"
	"sync"
)

// handOffListener feeds connections the loop gives up on to the
// net/http server, through Accept.
type handOffListener struct {
	addr   net.Addr
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newHandOffListener(addr net.Addr) *handOffListener {
	return &handOffListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handOffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// give hands c to the net/http server; false if it has stopped.
func (l *handOffListener) give(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *handOffListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *handOffListener) Addr() net.Addr { return l.addr }

// replayConn is a connection whose first bytes, already read by the
// loop, are read again before the socket's.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// NetConn is the connection underneath, for a ConnContext that looks at
// what the listener accepted.
func (c *replayConn) NetConn() net.Conn { return c.Conn }

// CloseWrite lets net/http half-close the connection before it closes it.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
