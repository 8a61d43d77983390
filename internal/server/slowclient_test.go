package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/server"
)

// closedWithin bounds every wait of these tests for the server to act.
const closedWithin = 10 * time.Second

// dial opens a raw connection to f that closes with the test.
func (f *ferry) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", f.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// slowSend writes the headers of a SendMessage that announces length
// bytes of body, and the body's first byte.
func slowSend(t *testing.T, c net.Conn, length int, expectContinue bool) *bufio.Reader {
	t.Helper()
	head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-amz-json-1.0\r\n"+
		"X-Amz-Target: AmazonSQS.SendMessage\r\nContent-Length: %d\r\n", length)
	if expectContinue {
		head += "Expect: 100-continue\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if expectContinue {
		// Ferry asks for the body once its handler reads it: past any
		// storage it reserves up front.
		c.SetReadDeadline(time.Now().Add(closedWithin))
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("want 100 Continue: %v %v", resp, err)
		}
	}
	if _, err := io.WriteString(c, "{"); err != nil {
		t.Fatal(err)
	}
	return br
}

// readToEOF reads what the server sends until it closes the connection.
func readToEOF(t *testing.T, c net.Conn, r io.Reader) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(closedWithin))
	b, err := io.ReadAll(r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after %v; read %q", closedWithin, b)
	}
	return string(b)
}

// health sends GET /_ferry/health on c and reads the answer.
func health(t *testing.T, c net.Conn, br *bufio.Reader, close bool) *http.Response {
	t.Helper()
	req := "GET /_ferry/health HTTP/1.1\r\nHost: localhost\r\n"
	if close {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(closedWithin))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("health body: %v", err)
	}
	return resp
}

// TestSlowBodiesHoldLittleMemory: connections that announce 8 MB bodies
// and send a byte hold next to nothing each, and the broker keeps serving.
func TestSlowBodiesHoldLittleMemory(t *testing.T) {
	const n, announced = 50, 8_000_000
	f := start(t) // the default read timeout keeps them open while measured
	url := f.createQueue(t, "slow", nil)
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		slowSend(t, f.dial(t), announced, true)
	}
	runtime.GC()
	runtime.ReadMemStats(&during)
	grown := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %d KiB for %d slow bodies", grown>>10, n)
	if grown > n<<20 {
		t.Errorf("heap grew %d MiB for %d slow bodies of %d bytes announced", grown>>20, n, announced)
	}
	out, err := f.json.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("meanwhile")})
	if err != nil || aws.ToString(out.MessageId) == "" {
		t.Fatalf("SendMessage during slow bodies: %v", err)
	}
}

// TestReadTimeoutClosesSlowBodies: a body that has not arrived within the
// read timeout answers 400 RequestTimeout and its connection closes, while
// a long poll that waits longer than the timeout is left alone.
func TestReadTimeoutClosesSlowBodies(t *testing.T) {
	t.Parallel()
	f := start(t, func(c *server.Config) { c.ReadTimeout = 300 * time.Millisecond })
	ctx := ctxT(t)
	url := f.createQueue(t, "slow", nil)
	polled := make(chan []types.Message, 1)
	go func() {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			t.Errorf("long poll: %v", err)
			polled <- nil
			return
		}
		polled <- out.Messages
	}()
	f.waitPending(t, 1)

	// Each is closed a read timeout after it began, which is after the
	// long poll began.
	conns := make([]net.Conn, 5)
	readers := make([]*bufio.Reader, len(conns))
	for i := range conns {
		conns[i] = f.dial(t)
		readers[i] = slowSend(t, conns[i], 8_000_000, false)
	}
	for i, c := range conns {
		got := readToEOF(t, c, readers[i])
		if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, "RequestTimeout") {
			t.Errorf("slow body answered %q, want 400 RequestTimeout", got)
		}
	}

	if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("late")}); err != nil {
		t.Fatal(err)
	}
	if msgs := <-polled; len(msgs) != 1 || aws.ToString(msgs[0].Body) != "late" {
		t.Fatalf("long poll got %+v, want the message sent after the slow bodies closed", msgs)
	}
}

// TestIdleTimeoutClosesConnection: a keep-alive connection that carries no
// request for the idle timeout is closed.
func TestIdleTimeoutClosesConnection(t *testing.T) {
	t.Parallel()
	f := start(t, func(c *server.Config) { c.IdleTimeout = 200 * time.Millisecond })
	c := f.dial(t)
	br := bufio.NewReader(c)
	if resp := health(t, c, br, false); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("health: %d, close %v", resp.StatusCode, resp.Close)
	}
	if rest := readToEOF(t, c, br); rest != "" {
		t.Errorf("idle connection sent %q before closing", rest)
	}
}

// TestConnectionCap: over MaxConnections a connection is answered 503
// ServiceUnavailable in its protocol and closed; over that, a few more
// being answered, one is closed at once; a slot frees when a connection
// ends.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	f := start(t, func(c *server.Config) { c.MaxConnections = 2 })
	held := make([]net.Conn, 2)
	readers := make([]*bufio.Reader, 2)
	for i := range held {
		held[i] = f.dial(t)
		readers[i] = bufio.NewReader(held[i])
		if resp := health(t, held[i], readers[i], false); resp.StatusCode != 200 {
			t.Fatalf("connection %d under the cap: status %d", i, resp.StatusCode)
		}
	}

	// Two more are being answered (as many as the cap) while their headers
	// come; the kernel queues connections in order, so the next one is
	// past them all.
	refused := []net.Conn{f.dial(t), f.dial(t)}
	for _, c := range refused {
		if _, err := io.WriteString(c, "GET /_ferry/health HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	dropped := f.dial(t)
	if got := readToEOF(t, dropped, dropped); got != "" {
		t.Errorf("connection past the cap and the refusals got %q, want a close", got)
	}
	for _, c := range refused {
		if _, err := io.WriteString(c, "Host: localhost\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		got := readToEOF(t, c, c)
		if !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "<Code>ServiceUnavailable</Code>") ||
			!strings.Contains(got, "Connection: close") {
			t.Errorf("refused connection answered %q, want 503 ServiceUnavailable and a close", got)
		}
	}

	// An SDK sees AWS's error, which it would retry.
	client := sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(f.srv.URL()), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""),
		HTTPClient:  &http.Client{Transport: bench.PlainBodies{Next: &http.Transport{DisableKeepAlives: true}}},
	})
	_, err := client.SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: aws.String("q"), MessageBody: aws.String("x")})
	wantAPIError(t, err, "ServiceUnavailable", http.StatusServiceUnavailable)

	// Once a served connection ends, a new one is served.
	if resp := health(t, held[0], readers[0], true); resp.StatusCode != 200 {
		t.Fatalf("closing request: status %d", resp.StatusCode)
	}
	readToEOF(t, held[0], readers[0])
	c := f.dial(t)
	if resp := health(t, c, bufio.NewReader(c), false); resp.StatusCode != 200 {
		t.Errorf("after a slot freed: status %d, want 200", resp.StatusCode)
	}
}
