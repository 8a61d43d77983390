package httpfast

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// response buffers a handler's answer and writes it whole with one
// system call when the handler returns; a Flush writes through (the
// answer then goes out chunked, as net/http's does).
type response struct {
	c             *conn
	req           *http.Request
	header        http.Header
	status        int
	wroteHeader   bool
	body          []byte // the buffered body (c.out's tail once streaming)
	contentLength int64  // the handler's Content-Length, -1 without one
	written       int64
	streaming     bool // the head is written: what follows goes straight out
	chunked       bool
	closeAfter    bool
	err           error // a failed write: the connection closes
	wroteDeadline bool  // the handler set a write deadline, to be lifted after
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		caller := "unknown"
		if pc, _, _, ok := runtime.Caller(1); ok {
			caller = runtime.FuncForPC(pc).Name()
		}
		w.c.s.logf("http: superfluous response.WriteHeader call from %s", caller)
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 {
		// Informational answers are not sent: net/http writes them at
		// once, which no handler served here does.
		return
	}
	w.wroteHeader, w.status = true, code
	if cl := w.header.Get("Content-Length"); cl != "" {
		v, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.c.s.logf("http: invalid Content-Length of %q", cl)
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.streaming {
		w.body = append(w.body, p...)
		return len(p), nil
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	c := w.c
	if w.chunked {
		c.out = strconv.AppendInt(c.out, int64(len(p)), 16)
		c.out = append(c.out, "\r\n"...)
		c.out = append(c.out, p...)
		c.out = append(c.out, "\r\n"...)
	} else {
		c.out = append(c.out, p...)
	}
	if len(c.out) >= 4<<10 {
		w.send()
	}
	return len(p), w.err
}

func (w *response) WriteString(s string) (int, error) {
	if !w.streaming {
		if !w.wroteHeader {
			w.WriteHeader(http.StatusOK)
		}
		if len(s) > 0 && bodyAllowedForStatus(w.status) && w.err == nil &&
			(w.contentLength == -1 || w.written+int64(len(s)) <= w.contentLength) {
			w.written += int64(len(s))
			w.body = append(w.body, s...)
			return len(s), nil
		}
	}
	return w.Write([]byte(s))
}

// Flush writes what is buffered, and the head first if it is not yet out.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush for http.ResponseController.
func (w *response) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.streaming {
		w.streaming = true
		body := w.body
		w.body = nil
		w.c.out = w.head(w.c.out[:0], body, false)
		if len(body) > 0 && w.req.Method != http.MethodHead && bodyAllowedForStatus(w.status) {
			if w.chunked {
				w.c.out = strconv.AppendInt(w.c.out, int64(len(body)), 16)
				w.c.out = append(w.c.out, "\r\n"...)
				w.c.out = append(w.c.out, body...)
				w.c.out = append(w.c.out, "\r\n"...)
			} else {
				w.c.out = append(w.c.out, body...)
			}
		}
	}
	w.send()
	return w.err
}

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error { return w.c.rwc.SetReadDeadline(t) }

func (w *response) SetWriteDeadline(t time.Time) error {
	w.wroteDeadline = true
	return w.c.rwc.SetWriteDeadline(t)
}

// send writes c.out.
func (w *response) send() {
	c := w.c
	if len(c.out) == 0 || w.err != nil {
		c.out = c.out[:0]
		return
	}
	if _, err := c.rwc.Write(c.out); err != nil {
		w.err = err
	}
	c.out = c.out[:0]
}

// finish answers after the handler returns; false if the connection is
// to close.
func (w *response) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	c := w.c
	if w.streaming {
		if w.chunked {
			c.out = append(c.out, "0\r\n\r\n"...)
		}
		w.send()
		if w.req.Method != http.MethodHead && w.contentLength != -1 && bodyAllowedForStatus(w.status) && w.contentLength != w.written {
			w.closeAfter = true
		}
		return w.err == nil && !w.closeAfter
	}
	c.out = w.head(c.out[:0], w.body, true)
	if w.req.Method != http.MethodHead && bodyAllowedForStatus(w.status) {
		c.out = append(c.out, w.body...)
	}
	w.send()
	if w.req.Method != http.MethodHead && w.contentLength != -1 && bodyAllowedForStatus(w.status) && w.contentLength != w.written {
		w.closeAfter = true // too short an answer: the client would read the next as its rest
	}
	return w.err == nil && !w.closeAfter
}

func bodyAllowedForStatus(status int) bool {
	switch {
	case status >= 100 && status <= 199:
		return false
	case status == 204, status == 304:
		return false
	}
	return true
}

// head appends the status line and header of the answer to dst, as
// net/http's chunkWriter.writeHeader writes them. p is the body buffered
// so far; done tells that it is the whole body.
func (w *response) head(dst, p []byte, done bool) []byte {
	c := w.c
	req := w.req
	header := w.header
	isHEAD := req.Method == http.MethodHead
	keepAlives := !c.s.shutting.Load()
	var setLength, setType, setConnection, setTE string
	te := header.Get("Transfer-Encoding")
	hasTE := te != ""
	if done && !hasTE && bodyAllowedForStatus(w.status) && !has(header, "Content-Length") && (!isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		setLength = strconv.Itoa(len(p))
	}
	wants10KeepAlive := req.ProtoMinor == 0 && c.head.keepAlive10
	wantsClose := req.ProtoMinor == 1 && c.head.close
	if wants10KeepAlive && keepAlives {
		if header.Get("Content-Length") != "" && header.Get("Connection") == "keep-alive" {
			w.closeAfter = false
		}
	}
	hasCL := w.contentLength != -1
	if wants10KeepAlive && (isHEAD || hasCL || !bodyAllowedForStatus(w.status)) {
		if _, ok := header["Connection"]; !ok {
			setConnection = "keep-alive"
		}
	} else if req.ProtoMinor == 0 || wantsClose {
		w.closeAfter = true
	}
	if header.Get("Connection") == "close" || !keepAlives {
		w.closeAfter = true
	}
	// A body the handler left unread is read and dropped, if small, so
	// that the connection can carry the next request.
	if b, ok := req.Body.(*body); ok && !w.closeAfter {
		switch {
		case b.closedEarly:
			if b.remaining > 0 {
				w.closeAfter = true
			}
		case b.remaining >= maxPostHandlerRead:
			w.closeAfter = true
			header.Del("Connection")
			setConnection = "close"
		case b.remaining > 0 || b.err != nil:
			if _, err := io.Copy(io.Discard, readerFunc(b.read)); err != nil {
				w.closeAfter = true
			}
		}
	}
	if bodyAllowedForStatus(w.status) {
		_, haveType := header["Content-Type"]
		if header.Get("Content-Encoding") == "" && !haveType && !hasTE && len(p) > 0 {
			setType = http.DetectContentType(p)
		}
	} else {
		for _, k := range []string{"Content-Length", "Transfer-Encoding"} {
			header.Del(k)
		}
		if w.status == http.StatusNotModified {
			header.Del("Content-Type")
		}
	}
	if hasCL && hasTE && te != "identity" {
		w.c.s.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		header.Del("Content-Length")
		hasCL = false
	}
	switch {
	case isHEAD || !bodyAllowedForStatus(w.status):
		header.Del("Transfer-Encoding")
	case hasCL:
		header.Del("Transfer-Encoding")
	case req.ProtoMinor == 1:
		if hasTE && te == "identity" {
			w.closeAfter = true
			header.Del("Transfer-Encoding")
		} else {
			w.chunked = true
			setTE = "chunked"
			if hasTE && te == "chunked" {
				header.Del("Transfer-Encoding")
			}
		}
	default:
		w.closeAfter = true
		header.Del("Transfer-Encoding")
	}
	if w.chunked {
		header.Del("Content-Length")
	}
	if w.closeAfter && (!keepAlives || !hasToken([]byte(header.Get("Connection")), "close")) {
		header.Del("Connection")
		if req.ProtoMinor == 1 {
			setConnection = "close"
		}
	}

	if req.ProtoMinor == 1 {
		dst = append(dst, "HTTP/1.1 "...)
	} else {
		dst = append(dst, "HTTP/1.0 "...)
	}
	if text := http.StatusText(w.status); text != "" {
		dst = strconv.AppendInt(dst, int64(w.status), 10)
		dst = append(dst, ' ')
		dst = append(dst, text...)
		dst = append(dst, "\r\n"...)
	} else {
		dst = fmt.Appendf(dst, "%03d status code %d\r\n", w.status, w.status)
	}
	// The handler's fields, sorted by name, as Header.Write writes them.
	keys := c.keys[:0]
	for k := range header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validFieldName(k) {
			continue // net/http drops them too
		}
		for _, v := range header[k] {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = appendFieldValue(dst, v)
			dst = append(dst, "\r\n"...)
		}
	}
	c.keys = keys[:0]
	if !has(header, "Date") {
		dst = append(dst, "Date: "...)
		dst = c.s.dates.appendDate(dst)
		dst = append(dst, "\r\n"...)
	}
	if setLength != "" {
		dst = append(dst, "Content-Length: "...)
		dst = append(dst, setLength...)
		dst = append(dst, "\r\n"...)
	}
	for _, kv := range [...][2]string{{"Content-Type", setType}, {"Connection", setConnection}, {"Transfer-Encoding", setTE}} {
		if kv[1] != "" {
			dst = append(dst, kv[0]...)
			dst = append(dst, ": "...)
			dst = append(dst, kv[1]...)
			dst = append(dst, "\r\n"...)
		}
	}
	return append(dst, "\r\n"...)
}

// has reports whether the header has key, as net/http's Header.has.
func has(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}

func validFieldName(k string) bool {
	if k == "" {
		return false
	}
	for i := range len(k) {
		if !isToken(k[i]) {
			return false
		}
	}
	return true
}

// appendFieldValue appends v as Header.Write does: line breaks become
// spaces, and surrounding blanks go.
func appendFieldValue(dst []byte, v string) []byte {
	v = strings.Trim(v, " \t\r\n")
	for i := range len(v) {
		switch b := v[i]; b {
		case '\r', '\n':
			dst = append(dst, ' ')
		default:
			dst = append(dst, b)
		}
	}
	return dst
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
