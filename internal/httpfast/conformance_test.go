package httpfast

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// echo answers with what it read of the request, shaped by the query:
// status, ct (a Content-Type, or "none" to let it be sniffed), cl (set
// Content-Length), close (answer Connection: close), skip (leave the body
// unread), html (write an HTML body), panic.
func echo(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("panic") != "" {
		panic("asked to")
	}
	var body []byte
	if q.Get("skip") == "" {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s host=%q uri=%q len=%d close=%v te=%v remote=%v\n", r.Method, r.URL, r.Proto, r.Host,
		r.RequestURI, r.ContentLength, r.Close, r.TransferEncoding, r.RemoteAddr != "")
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, r.Header[k])
	}
	fmt.Fprintf(&b, "body=%q\n", body)
	if q.Get("html") != "" {
		b.Reset()
		b.WriteString("<html><body>hi</body></html>")
	}
	h := w.Header()
	switch ct := q.Get("ct"); ct {
	case "":
		h.Set("Content-Type", "text/plain")
	case "none":
	default:
		h.Set("Content-Type", ct)
	}
	if q.Get("cl") != "" {
		h.Set("Content-Length", strconv.Itoa(b.Len()))
	}
	if q.Get("close") != "" {
		h.Set("Connection", "close")
	}
	h.Set("X-Multi", "a")
	h.Add("X-Multi", "b")
	status := http.StatusOK
	if s := q.Get("status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	w.WriteHeader(status)
	if q.Get("flush") != "" {
		// Streamed as the console's events are: each part flushed.
		half := b.Len() / 2
		w.Write(b.Bytes()[:half])
		w.(http.Flusher).Flush()
		w.Write(b.Bytes()[half:])
		w.(http.Flusher).Flush()
		w.Write([]byte("end"))
		return
	}
	w.Write(b.Bytes())
}

// conformanceCases are raw requests, each sent on a fresh connection.
var conformanceCases = []struct{ name, raw string }{
	{"get", "GET /a/b?x=1&y=%20z HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n"},
	{"post", "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 11\r\n\r\nhello world"},
	{"post in pieces", "POST /?cl=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"},
	{"lowercase names", "POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 2\r\nx-amz-target: AmazonSQS.SendMessage\r\nx-weird_name: 1\r\n\r\nok"},
	{"repeated field", "GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nAccept: b\r\nX-Blank:\r\nX-Spaces:   v  \t\r\n\r\n"},
	{"http/1.0", "GET / HTTP/1.0\r\n\r\n"},
	{"http/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /second HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
	{"http/1.0 keep-alive, no length", "GET /?ct=none&html=1 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET /second HTTP/1.0\r\n\r\n"},
	{"http/1.0 keep-alive, handler closes", "GET /?close=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /second HTTP/1.0\r\n\r\n"},
	{"pipelined", "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nxGET /3 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"connection close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"connection close in a list", "GET / HTTP/1.1\r\nHost: h\r\nConnection: TE, Close\r\n\r\n"},
	{"handler closes", "GET /?close=1 HTTP/1.1\r\nHost: h\r\n\r\nGET /never HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"head", "HEAD / HTTP/1.1\r\nHost: h\r\n\r\nHEAD /?cl=1 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"status 204", "GET /?status=204 HTTP/1.1\r\nHost: h\r\n\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"status 304", "GET /?status=304&cl=1 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"status 404", "GET /?status=404 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"status unknown", "GET /?status=599 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"sniffed type", "GET /?ct=none&html=1 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"empty type kept", "GET /?ct=none HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"pragma", "GET / HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\n\r\n"},
	{"body left unread", "POST /?skip=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nabcdeGET /next HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"post without length", "POST / HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"panic", "GET /?panic=1 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"flushed", "GET /?flush=1 HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"flushed, http/1.0", "GET /?flush=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
	{"flushed head", "HEAD /?flush=1 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"flushed with length", "GET /?flush=1&cl=1 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"ipv6 host", "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"},
	// Handed to net/http.
	{"chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"expect", "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc"},
	{"expect unknown", "POST / HTTP/1.1\r\nHost: h\r\nExpect: teapot\r\nContent-Length: 3\r\n\r\nabc"},
	{"upgrade", "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"},
	{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
	{"no host", "GET / HTTP/1.1\r\n\r\n"},
	{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"},
	{"bad host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"},
	{"bare lf", "GET / HTTP/1.1\nHost: h\n\n"},
	{"bad request line", "GARBAGE\r\n\r\n"},
	{"http/2.0 line", "GET / HTTP/2.0\r\nHost: h\r\n\r\n"},
	{"http/0.9 style", "GET /\r\n\r\n"},
	{"absolute form", "GET http://example.com/x?y=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"},
	{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"two lengths", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"},
	{"signed length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx"},
	{"space before colon", "GET / HTTP/1.1\r\nHost: h\r\nX-A : b\r\n\r\n"},
	{"continuation", "GET / HTTP/1.1\r\nHost: h\r\nX-A: b\r\n c\r\n\r\n"},
	{"control byte", "GET / HTTP/1.1\r\nHost: h\r\nX-A: b\x01c\r\n\r\n"},
	{"served then malformed", "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\n\r\n"},
	{"served then chunked", "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\nGET /3 HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"oversized head", "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + strings.Repeat("a", 1<<20+5000) + "\r\n\r\n"},
	{"cut short body", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"},
}

// TestConformance sends the same raw requests to net/http and to the
// loop and compares the answers byte for byte (Date aside).
func TestConformance(t *testing.T) {
	netURL := startBoth(t, http.HandlerFunc(echo))
	for _, tc := range conformanceCases {
		t.Run(tc.name, func(t *testing.T) {
			want := exchange(t, netURL.net, tc.raw)
			got := exchange(t, netURL.fast, tc.raw)
			if got != want {
				t.Errorf("answers differ\nnet/http:\n%s\nfast:\n%s", clip(want), clip(got))
			}
		})
	}
}

type addrs struct{ net, fast string }

// startBoth serves h with net/http and with the loop, each configured
// alike, and returns their addresses.
func startBoth(t *testing.T, h http.Handler) addrs {
	t.Helper()
	newSrv := func() *http.Server {
		return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
			ErrorLog: nil}
	}
	lnNet, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnFast, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := newSrv()
	fast := New(newSrv())
	plainDone, fastDone := make(chan error, 1), make(chan error, 1)
	go func() { plainDone <- plain.Serve(lnNet) }()
	go func() { fastDone <- fast.Serve(lnFast) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := plain.Shutdown(ctx); err != nil {
			t.Errorf("net/http shutdown: %v", err)
		}
		if err := fast.Shutdown(ctx); err != nil {
			t.Errorf("fast shutdown: %v", err)
		}
		for _, done := range []chan error{plainDone, fastDone} {
			if err := <-done; !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		}
	})
	return addrs{lnNet.Addr().String(), lnFast.Addr().String()}
}

var dateField = regexp.MustCompile(`(?m)^Date: [^\r]*\r$`)

// exchange writes raw on a new connection, half-closes it, and reads
// the answers until the server closes it.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		// Written in two parts, so that a head split across reads is read.
		half := len(raw) / 2
		c.Write([]byte(raw[:half]))
		time.Sleep(time.Millisecond)
		c.Write([]byte(raw[half:]))
		c.(*net.TCPConn).CloseWrite()
	}()
	out, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("read: %v", err)
	}
	return dateField.ReplaceAllString(string(out), "Date: (date)\r")
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && strings.Contains(err.Error(), "reset")
}

// clip shortens what a failure prints.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
