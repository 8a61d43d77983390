package httpfast

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/testwait"
)

// serve starts the loop on srv's configuration and returns its address.
func serve(t *testing.T, srv *http.Server) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(srv)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// TestClientGoneEndsContext: a request whose client goes away while its
// handler waits has its context cancelled, as net/http's has.
func TestClientGoneEndsContext(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	_, addr := serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		close(started)
		<-r.Context().Done()
		ended <- r.Context().Err()
	})})
	c := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi")
	testwait.Receive(t, "the handler", started)
	c.Close()
	if err := testwait.Receive(t, "the handler's context to end", ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("context ended with %v", err)
	}
}

// TestPipelinedDuringLongHandler: a request sent while the previous one's
// handler runs long (its connection watched) is served after it, whole.
func TestPipelinedDuringLongHandler(t *testing.T) {
	release := make(chan struct{})
	s, addr := serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, r.URL.Path)
	})})
	c := dial(t, addr)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	testwait.Eventually(t, "the connection watched", func() bool { return watching(s) != nil })
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
	// The watch reads the next request's first byte, and no more.
	testwait.Eventually(t, "the watch's read of its first byte", func() bool { return watchRead(s) })
	close(release)
	br := bufio.NewReader(c)
	for _, want := range []string{"/slow", "/next"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want {
			t.Fatalf("answer %q, want %q", b, want)
		}
	}
}

// TestShutdownFinishesInFlight: Shutdown closes idle connections at
// once, lets the request in flight finish (answered Connection: close),
// and returns once it has.
func TestShutdownFinishesInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s, addr := serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		io.WriteString(w, "done")
	})})
	idle := dial(t, addr)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	idleBr := bufio.NewReader(idle)
	readAnswer(t, idleBr)
	busy := dial(t, addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	testwait.Receive(t, "the slow handler", started)
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if _, err := idleBr.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want it closed", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "done" || !resp.Close {
		t.Fatalf("in-flight answer %q, close %v", b, resp.Close)
	}
	if err := testwait.Receive(t, "Shutdown", shut); err != nil {
		t.Fatal(err)
	}
}

// TestTimeouts: a body slower than ReadTimeout fails the handler's read
// and the connection closes after the answer; a connection idle longer
// than IdleTimeout is closed.
func TestTimeouts(t *testing.T) {
	_, addr := serve(t, &http.Server{ReadTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				http.Error(w, "slow", http.StatusRequestTimeout)
				return
			}
			io.WriteString(w, "ok")
		})})
	slow := dial(t, addr)
	io.WriteString(slow, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
	all, err := io.ReadAll(slow)
	if err != nil || !strings.HasPrefix(string(all), "HTTP/1.1 408 ") || !strings.Contains(string(all), "Connection: close\r\n") {
		t.Fatalf("slow body: %q, %v", all, err)
	}
	idle := dial(t, addr)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	br := bufio.NewReader(idle)
	readAnswer(t, br)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want it closed", err)
	}
}

// readAnswer reads an answer whole and checks it is 200.
func readAnswer(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("answer %d, %v", resp.StatusCode, err)
	}
}

// watching is the watch of a connection of s, nil without one: closed
// once its read has ended.
func watching(s *Server) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.mu.Lock()
		w := c.watching
		c.mu.Unlock()
		if w != nil {
			return w
		}
	}
	return nil
}

// watchRead reports whether a watch of s has read what came next.
func watchRead(s *Server) bool {
	w := watching(s)
	if w == nil {
		return false
	}
	select {
	case <-w:
		return true
	default:
		return false
	}
}

// TestSilentConnectionClosed: a connection that never sends a request is
// closed after ReadHeaderTimeout, however long IdleTimeout is, as
// net/http closes it.
func TestSilentConnectionClosed(t *testing.T) {
	_, addr := serve(t, &http.Server{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: time.Hour,
		Handler: http.NotFoundHandler()})
	c := dial(t, addr)
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent connection: %v, want it closed", err)
	}
}
