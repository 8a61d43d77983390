package httpfast

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

const (
	initialBuffer = 4 << 10
	// watchAfter is how long a handler runs before the connection is
	// watched for the client going away (net/http watches from the
	// start, with a read in the background of every request).
	watchAfter = 5 * time.Millisecond
	// maxPostHandlerRead is how much of a body the handler left unread
	// is read and dropped to keep the connection (net/http's figure).
	maxPostHandlerRead = 256 << 10
)

// conn is one connection the loop serves.
type conn struct {
	s      *Server
	rwc    net.Conn
	ctx    context.Context
	remote string
	idle   atomic.Bool // waiting for a request: Shutdown may close it

	buf  []byte // read buffer; unread bytes are buf[r:w]
	r, w int
	head request
	out  []byte // the answer being composed
	keys []string

	// The watch for the client going away, run by timer while a handler
	// runs long.
	timer    *time.Timer
	mu       sync.Mutex
	running  bool          // a handler runs and the timer may start a watch
	body     *body         // the running request's body, nil without one
	cancel   func()        // ends the running request's context
	watching chan struct{} // closed when the watch's read ends
	extra    []byte        // what the watch read: the next request's first byte
	gone     bool          // the watch saw the client go
}

func newConn(s *Server, rwc net.Conn, ctx context.Context) *conn {
	c := &conn{s: s, rwc: rwc, ctx: ctx, remote: rwc.RemoteAddr().String(), buf: make([]byte, initialBuffer)}
	c.idle.Store(true)
	return c
}

// maxHeaderBytes is the longest head the loop serves: net/http's own
// bound (beyond MaxHeaderBytes, 4096 bytes of slack) is added where used.
func (c *conn) maxHeaderBytes() int {
	if n := c.s.srv.MaxHeaderBytes; n > 0 {
		return n
	}
	return http.DefaultMaxHeaderBytes
}

func (c *conn) serve() {
	handedOff := false
	defer func() {
		if !handedOff {
			c.rwc.Close()
		}
		if c.timer != nil {
			c.timer.Stop()
		}
		c.s.untrack(c)
	}()
	srv := c.s.srv
	hdrTimeout := srv.ReadHeaderTimeout
	if hdrTimeout == 0 {
		hdrTimeout = srv.ReadTimeout
	}
	// As net/http: a connection's first request is timed from its
	// accepting, the next ones from their first bytes, after an idle wait.
	first, t0 := true, time.Now()
	for {
		// Wait for the first bytes of a request, under the idle timeout.
		if c.r == c.w {
			c.r, c.w = 0, 0
			c.idle.Store(true)
			if c.s.shutting.Load() {
				return
			}
			wait := srv.IdleTimeout
			if wait == 0 {
				wait = srv.ReadTimeout
			}
			if first {
				wait = hdrTimeout
			}
			if wait > 0 {
				c.rwc.SetReadDeadline(time.Now().Add(wait))
			} else {
				c.rwc.SetReadDeadline(time.Time{})
			}
			n, _ := c.rwc.Read(c.buf)
			if n == 0 {
				return
			}
			c.w = n
		}
		c.idle.Store(false)
		if !first {
			t0 = time.Now()
		}
		first = false
		var hdrDeadline, wholeDeadline time.Time
		if hdrTimeout > 0 {
			hdrDeadline = t0.Add(hdrTimeout)
		}
		if srv.ReadTimeout > 0 {
			wholeDeadline = t0.Add(srv.ReadTimeout)
		}
		c.rwc.SetReadDeadline(hdrDeadline)
		for {
			res := parse(c.buf[c.r:c.w], &c.head)
			if res == parsed {
				break
			}
			if res == handOff || c.w-c.r > c.maxHeaderBytes()+4096 {
				c.handOff()
				handedOff = true
				return
			}
			if c.w == len(c.buf) {
				if c.r > 0 {
					c.w = copy(c.buf, c.buf[c.r:c.w])
					c.r = 0
				} else {
					c.buf = append(c.buf, make([]byte, len(c.buf))...)
				}
			}
			n, err := c.rwc.Read(c.buf[c.w:])
			c.w += n
			if n == 0 && err != nil {
				// As net/http: a head cut short by the client or the
				// deadline is not answered.
				return
			}
		}
		if c.head.headLen > c.maxHeaderBytes()+4096 {
			c.handOff() // net/http answers 431
			handedOff = true
			return
		}
		req, ok := c.request()
		if !ok {
			c.handOff()
			handedOff = true
			return
		}
		if !wholeDeadline.Equal(hdrDeadline) {
			c.rwc.SetReadDeadline(wholeDeadline)
		}
		if !c.run(req) {
			return
		}
	}
}

// handOff gives the connection, from the current request on, to net/http.
func (c *conn) handOff() {
	c.rwc.SetReadDeadline(time.Time{})
	c.s.handOffConn(c.rwc, c.buf[c.r:c.w])
}

var methods = map[string]string{}

func init() {
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodTrace} {
		methods[m] = m
	}
}

// request builds the http.Request of c.head and consumes its head from
// the buffer; false if net/http must serve it.
func (c *conn) request() (*http.Request, bool) {
	h := &c.head
	target := string(h.target)
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, false
	}
	method, ok := methods[string(h.method)]
	if !ok {
		method = string(h.method)
	}
	header := make(http.Header, len(h.headers))
	for _, f := range h.headers {
		key := canonicalKey(f.name)
		header[key] = append(header[key], internValue(f.value))
	}
	if pragma, ok := header["Pragma"]; ok && len(pragma) > 0 && pragma[0] == "no-cache" {
		if _, ok := header["Cache-Control"]; !ok {
			header["Cache-Control"] = []string{"no-cache"}
		}
	}
	proto := "HTTP/1.1"
	if h.minor == 0 {
		proto = "HTTP/1.0"
	}
	tmpl := http.Request{
		Method:     method,
		URL:        u,
		Proto:      proto,
		ProtoMajor: 1,
		ProtoMinor: h.minor,
		Header:     header,
		Body:       http.NoBody,
		Close:      h.close,
		Host:       internValue(h.host),
		RemoteAddr: c.remote,
		RequestURI: target,
	}
	c.r += h.headLen
	var b *body
	if h.contentLength > 0 {
		b = &body{c: c, remaining: h.contentLength}
		tmpl.Body = b
		tmpl.ContentLength = h.contentLength
	}
	ctx, cancel := context.WithCancel(c.ctx)
	req := tmpl.WithContext(ctx)
	c.mu.Lock()
	c.body, c.cancel, c.running, c.gone = b, cancel, true, false
	c.mu.Unlock()
	return req, true
}

// run serves one request and answers it; false if the connection is
// to close.
func (c *conn) run(req *http.Request) (keep bool) {
	w := &response{c: c, req: req, header: make(http.Header), contentLength: -1, status: 0}
	if c.timer == nil {
		c.timer = time.AfterFunc(watchAfter, c.watch)
	} else {
		c.timer.Reset(watchAfter)
	}
	panicked := true
	func() {
		defer func() {
			if panicked {
				c.s.recoverHandler(c.remote, recover())
			}
		}()
		handler := c.s.srv.Handler
		if handler == nil {
			handler = http.DefaultServeMux
		}
		handler.ServeHTTP(w, req)
		panicked = false
	}()
	c.timer.Stop()
	if b, ok := req.Body.(*body); ok {
		// As net/http's: the body is the handler's no more.
		b.closed = true
	}
	c.mu.Lock()
	c.running = false
	watching := c.watching
	c.watching = nil
	c.mu.Unlock()
	c.cancel()
	if watching != nil {
		// End the watch's read and take back what it read.
		c.rwc.SetReadDeadline(aLongTimeAgo)
		<-watching
		c.rwc.SetReadDeadline(time.Time{})
	}
	if panicked {
		return false
	}
	if w.wroteDeadline {
		c.rwc.SetWriteDeadline(time.Time{})
	}
	keep = w.finish()
	if c.gone {
		return false
	}
	if len(c.extra) > 0 {
		// The byte the watch read follows what is buffered.
		if c.w == len(c.buf) {
			c.buf = append(c.buf, 0)
		}
		c.buf[c.w] = c.extra[0]
		c.w++
		c.extra = c.extra[:0]
	}
	return keep
}

var aLongTimeAgo = time.Unix(1, 0)

// watch starts, while a handler runs long, a read that tells whether the
// client has gone: the request's context then ends, as net/http's does.
// A read that returns a byte holds it for the next request.
func (c *conn) watch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running || c.watching != nil || (c.body != nil && c.body.remaining > 0) {
		// Only once the body is read: before, reading is the handler's.
		// The body's end starts the watch then.
		if c.running && c.body != nil {
			c.body.watchAtEOF = true
		}
		return
	}
	done := make(chan struct{})
	c.watching = done
	cancel := c.cancel
	// The request's timeout ends with its body. Set here, under mu, so
	// that run's ending of the read comes after it.
	c.rwc.SetReadDeadline(time.Time{})
	go func() {
		defer close(done)
		var b [1]byte
		n, err := c.rwc.Read(b[:])
		if n == 1 {
			c.extra = append(c.extra[:0], b[0])
			return
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return // ended by run
		}
		c.gone = true
		cancel()
	}()
}

// body reads a request's body of known length, from the buffer first.
type body struct {
	c           *conn
	remaining   int64
	err         error
	closed      bool // by the handler (closedEarly too), or once it returned
	closedEarly bool
	watchAtEOF  bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.read(p)
}

// read is Read for the loop itself, which drops what a handler left.
func (b *body) read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.remaining == 0 {
		return 0, io.EOF
	}
	c := b.c
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	var n int
	if c.r < c.w {
		n = copy(p, c.buf[c.r:c.w])
		c.r += n
	} else {
		var err error
		n, err = c.rwc.Read(p)
		if n == 0 && err != nil {
			if err == io.EOF {
				// As net/http: the body ends early once, then reads as
				// ended, and the connection is not closed for it.
				b.err = io.EOF
				return 0, io.ErrUnexpectedEOF
			}
			b.err = err
			return 0, err
		}
	}
	c.mu.Lock()
	b.remaining -= int64(n)
	atEOF := b.remaining == 0
	start := atEOF && b.watchAtEOF
	c.mu.Unlock()
	if start {
		c.watch()
	}
	if atEOF {
		return n, io.EOF
	}
	return n, nil
}

func (b *body) Close() error {
	b.closed, b.closedEarly = true, true
	return nil
}
