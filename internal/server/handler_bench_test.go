package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// errCaptured ends an SDK call whose request capture has kept.
var errCaptured = errors.New("captured")

// capture is an HTTP transport that keeps the request an SDK call would
// send, body read, and sends nothing.
type capture struct {
	req  *http.Request
	body []byte
}

func (c *capture) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	c.req, c.body = r, body
	return nil, errCaptured
}

// sdkRequest is the request aws-sdk-go-v2 sends for call, headers and
// signature as on the wire, to be replayed.
func sdkRequest(b *testing.B, endpoint string, call func(*sqs.Client) error) (*http.Request, []byte) {
	b.Helper()
	c := &capture{}
	client := sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider(harnessKey, harnessSecret, ""),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Transport: c},
	})
	if err := call(client); !errors.Is(err, errCaptured) {
		b.Fatalf("capture: %v", err)
	}
	req := c.req.Clone(context.Background())
	req.RequestURI, req.RemoteAddr, req.Host = req.URL.RequestURI(), "127.0.0.1:40000", req.URL.Host
	return req, c.body
}

// replay is a captured request that can be served again and again, with
// the smallest response writer, so that what a benchmark measures is the
// server's handler (guard, codecs, service, store, metrics), not net/http
// nor the client.
type replay struct {
	req  *http.Request
	body bytes.Reader
	w    discardWriter
}

func newReplay(req *http.Request, body []byte) *replay {
	r := &replay{req: req, w: discardWriter{h: http.Header{}}}
	r.setBody(body)
	return r
}

func (r *replay) setBody(body []byte) {
	r.body.Reset(body)
	r.req.Body, r.req.ContentLength = io.NopCloser(&r.body), int64(len(body))
}

// serve answers the request once and returns the response body.
func (r *replay) serve(b *testing.B, h http.Handler, body []byte) []byte {
	r.body.Reset(body)
	clear(r.w.h)
	r.w.code, r.w.buf = 0, r.w.buf[:0]
	h.ServeHTTP(&r.w, r.req)
	if r.w.code != http.StatusOK {
		b.Fatalf("status %d: %s", r.w.code, r.w.buf)
	}
	return r.w.buf
}

// reportCPU reports allocations and, from when it is called to when
// what it returns is, the process's CPU time per op: on a busy machine
// that moves less than the wall time per op does.
func reportCPU(b *testing.B) func() {
	b.ReportAllocs()
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

type discardWriter struct {
	h    http.Header
	code int
	buf  []byte
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// BenchmarkHandler is Ferry's own cost per request, in memory, as
// aws-sdk-go-v2 sends it but without a network or a client: the server's
// whole handler (host guard, protocol, SQS, store, metrics). What net/http
// and the kernel add on top is in BenchmarkSendMessage's floor.
//
//	go test -run '^$' -bench Handler -benchmem ./internal/server/
func BenchmarkHandler(b *testing.B) {
	body := benchBody()
	entries := batchEntries(body)
	// replayed serves the one request call makes, again and again.
	replayed := func(b *testing.B, call func(c *sqs.Client, url string) error) {
		f := start(b, realClock)
		url := f.createQueue(b, "bench", nil)
		h := f.srv.Handler()
		req, payload := sdkRequest(b, f.srv.URL(), func(c *sqs.Client) error { return call(c, url) })
		r := newReplay(req, payload)
		defer reportCPU(b)()
		for b.Loop() {
			r.serve(b, h, payload)
		}
	}
	b.Run("SendMessage", func(b *testing.B) {
		replayed(b, func(c *sqs.Client, url string) error {
			_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
			return err
		})
	})
	b.Run("SendMessageBatch", func(b *testing.B) {
		replayed(b, func(c *sqs.Client, url string) error {
			_, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			return err
		})
	})
	// One op: a SendMessageBatch of 10, a ReceiveMessage of 10 and a
	// DeleteMessageBatch of what came: the whole life of ten messages.
	b.Run("SendReceiveDelete10", func(b *testing.B) {
		f := start(b, realClock)
		url := f.createQueue(b, "bench", nil)
		h := f.srv.Handler()
		send := func(c *sqs.Client) error {
			_, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			return err
		}
		receive := func(c *sqs.Client) error {
			_, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
			return err
		}
		sreq, spay := sdkRequest(b, f.srv.URL(), send)
		rreq, rpay := sdkRequest(b, f.srv.URL(), receive)
		dreq, _ := sdkRequest(b, f.srv.URL(), func(c *sqs.Client) error {
			_, err := c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url),
				Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String("h")}}})
			return err
		})
		s, rc, d := newReplay(sreq, spay), newReplay(rreq, rpay), newReplay(dreq, nil)
		var del []byte
		defer reportCPU(b)()
		for b.Loop() {
			s.serve(b, h, spay)
			del = deleteBody(del[:0], url, rc.serve(b, h, rpay))
			d.setBody(del)
			if out := d.serve(b, h, del); !bytes.Contains(out, []byte(`"Failed":[]`)) && bytes.Contains(out, []byte(`"Failed"`)) {
				b.Fatalf("delete: %s", out)
			}
		}
	})
}

// deleteBody appends to dst the JSON of a DeleteMessageBatch of every
// message of received, a ReceiveMessage answer of 10: a scan rather than
// a decoder, so that the benchmark's own share stays small.
func deleteBody(dst []byte, url string, received []byte) []byte {
	const key = `"ReceiptHandle":"`
	dst = append(dst, `{"QueueUrl":"`...)
	dst = append(dst, url...)
	dst = append(dst, `","Entries":[`...)
	n := 0
	for {
		i := bytes.Index(received, []byte(key))
		if i < 0 {
			break
		}
		received = received[i+len(key):]
		end := bytes.IndexByte(received, '"')
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"Id":"`...)
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, `","ReceiptHandle":"`...)
		dst = append(dst, received[:end]...)
		dst = append(dst, `"}`...)
		received = received[end:]
		n++
	}
	if n != 10 {
		panic(fmt.Sprintf("received %d messages", n))
	}
	return append(dst, "]}"...)
}
