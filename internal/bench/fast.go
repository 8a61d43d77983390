package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// Clients of Config.Client.
const (
	// ClientSDK drives the broker through aws-sdk-go-v2: what applications
	// pay, signatures, retries' machinery and all.
	ClientSDK = "sdk"
	// ClientFast speaks SQS's JSON protocol itself over one keep-alive
	// HTTP/1.1 connection per worker, unsigned, from prebuilt requests, so
	// that the broker rather than the client is what runs out of CPU. It
	// still checks every message as the SDK scenarios do.
	ClientFast = "fast"
)

// Clients lists the values of Config.Client.
func Clients() []string { return []string{ClientSDK, ClientFast} }

// fastOp is an SQS operation of the fast client.
type fastOp int

const (
	opSend fastOp = iota
	opSendBatch
	opReceive
	opDeleteBatch
	numOps
)

var fastTargets = [numOps]string{"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessageBatch"}

// fastWait is the WaitTimeSeconds of every receive of the fast scenarios,
// as of the SDK ones.
const fastWait = 20

// fastQueue is the prebuilt parts of the requests to one queue: all but
// the bodies and receipt handles spliced in per call.
type fastQueue struct {
	url     string
	send    []byte // {"QueueUrl":…,"MessageBody":"
	batch   []byte // {"QueueUrl":…,"Entries":[
	receive []byte // the whole ReceiveMessage request
	delete  []byte // {"QueueUrl":…,"Entries":[
}

func newFastQueue(queueURL string) *fastQueue {
	u, _ := json.Marshal(queueURL) // a string always marshals
	head := `{"QueueUrl":` + string(u)
	return &fastQueue{
		url:     queueURL,
		send:    []byte(head + `,"MessageBody":"`),
		batch:   []byte(head + `,"Entries":[`),
		receive: []byte(head + `,"MaxNumberOfMessages":10,"WaitTimeSeconds":` + strconv.Itoa(fastWait) + `}`),
		delete:  []byte(head + `,"Entries":[`),
	}
}

// appendSendBatch appends a SendMessageBatch request of bodies.
func (q *fastQueue) appendSendBatch(b []byte, bodies [][]byte) []byte {
	return appendEntries(b, q.batch, len(bodies), "MessageBody", func(b []byte, i int) []byte { return appendJSONText(b, bodies[i]) })
}

// appendSend appends a SendMessage request of body.
func (q *fastQueue) appendSend(b, body []byte) []byte {
	b = append(b, q.send...)
	b = appendJSONText(b, body)
	return append(b, `"}`...)
}

// appendDelete appends a DeleteMessageBatch request of the receipt handles
// of msgs, as the answer wrote them: valid string contents.
func (q *fastQueue) appendDelete(b []byte, msgs []fastMsg) []byte {
	return appendEntries(b, q.delete, len(msgs), "ReceiptHandle", func(b []byte, i int) []byte { return append(b, msgs[i].receipt...) })
}

// appendEntries appends a batch request: head, then n entries, each Id its
// index and member the string contents that value appends.
func appendEntries(b, head []byte, n int, member string, value func(b []byte, i int) []byte) []byte {
	b = append(b, head...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Id":"`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","`...)
		b = append(b, member...)
		b = append(b, `":"`...)
		b = value(b, i)
		b = append(b, `"}`...)
	}
	return append(b, "]}"...)
}

// appendJSONText appends s as the contents of a JSON string. The bodies of
// the scenarios are plain ASCII and go as they are.
func appendJSONText(b, s []byte) []byte {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(string(s))
			return append(b, q[1:len(q)-1]...)
		}
	}
	return append(b, s...)
}

// md5Hex is the hex MD5 of b, as AWS writes it.
func md5Hex(b []byte) [32]byte {
	sum := md5.Sum(b)
	var h [32]byte
	hex.Encode(h[:], sum[:])
	return h
}

// fastConn is one worker's keep-alive connection to its node, with the
// buffers its requests and answers reuse. It is not safe for concurrent
// use: a worker sends one request at a time and reads its answer.
type fastConn struct {
	nodes    []url.URL
	requests *atomic.Int64 // the run's count of requests (Result.Requests)
	conn     net.Conn
	r        *bufio.Reader
	heads    [numOps][]byte // each request's head up to its Content-Length value
	req      []byte         // the request being sent
	ans      []byte         // the last answer's body

	body    []byte // the request body being built
	msg     [][]byte
	sums    [][32]byte
	msgs    []fastMsg
	entries []entryAnswer
}

func (e *env) fastConn() *fastConn {
	return &fastConn{nodes: e.cfg.nodes, requests: &e.traffic.requests}
}

func (c *fastConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// dial connects to the node of ctx's client (see env.client).
func (c *fastConn) dial(ctx context.Context) error {
	i, _ := ctx.Value(nodeKey{}).(int)
	node := c.nodes[i%len(c.nodes)]
	addr := node.Host
	if node.Port() == "" {
		addr = net.JoinHostPort(node.Hostname(), "80")
	}
	conn, err := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	c.conn = conn
	if c.r == nil {
		c.r = bufio.NewReaderSize(conn, 16<<10)
	} else {
		c.r.Reset(conn)
	}
	for op, target := range fastTargets {
		c.heads[op] = []byte("POST / HTTP/1.1\r\nHost: " + node.Host +
			"\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS." + target + "\r\nContent-Length: ")
	}
	return nil
}

// longAgo is a deadline in the past: it ends the connection's read or
// write at once.
var longAgo = time.Unix(1, 0)

// call sends body as a request of op and returns the answer's body, valid
// until the next call. An answer other than 200 is an error (apiError). A
// connection that failed is closed and the next call dials again; the
// failed request is not repeated (a send repeated might be a duplicate).
func (c *fastConn) call(ctx context.Context, op fastOp, body []byte) ([]byte, error) {
	if c.conn == nil {
		if err := c.dial(ctx); err != nil {
			return nil, err
		}
	}
	c.req = append(c.req[:0], c.heads[op]...)
	c.req = strconv.AppendInt(c.req, int64(len(body)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, body...)

	c.requests.Add(1)
	conn := c.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(longAgo) })
	status, closing, err := c.exchange()
	stop()
	if err != nil {
		c.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if closing {
		c.close()
	}
	if status != http.StatusOK {
		return nil, parseError(status, c.ans)
	}
	return c.ans, nil
}

// exchange writes the request and reads the answer into c.ans.
func (c *fastConn) exchange() (status int, closing bool, err error) {
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, false, fmt.Errorf("write: %w", err)
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, false, fmt.Errorf("read answer: %w", err)
	}
	defer resp.Body.Close()
	c.ans = c.ans[:0]
	if n := resp.ContentLength; n >= 0 {
		if int64(cap(c.ans)) < n {
			c.ans = make([]byte, 0, n)
		}
		c.ans = c.ans[:n]
		_, err = io.ReadFull(resp.Body, c.ans)
	} else {
		c.ans, err = readAll(resp.Body, c.ans)
	}
	if err != nil {
		return 0, false, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, resp.Close, nil
}

// readAll appends r's bytes to b until EOF.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// bodies renders stamps into the connection's message buffers and their
// MD5s, for a send of them.
func (c *fastConn) bodies(stamps []Stamp) [][]byte {
	for len(c.msg) < len(stamps) {
		c.msg = append(c.msg, make([]byte, 0, BodySize))
		c.sums = append(c.sums, [32]byte{})
	}
	for i, st := range stamps {
		c.msg[i] = st.AppendBody(c.msg[i][:0])
		c.sums[i] = md5Hex(c.msg[i])
	}
	return c.msg[:len(stamps)]
}

// fastClient is the client of --client fast.
type fastClient struct{ e *env }

func (f fastClient) queue(url string) clientQueue { return fastClientQueue{f.e, newFastQueue(url)} }

// fastClientQueue is a queue of the fast client: its prebuilt requests.
type fastClientQueue struct {
	e *env
	q *fastQueue
}

func (f fastClientQueue) url() string { return f.q.url }

// sender gives each worker a keep-alive connection of its own.
func (f fastClientQueue) sender() sender { return &fastSender{f.e.fastConn(), f.q} }

func (f fastClientQueue) receive(c *crew, workers int, lat *Latencies, handle func([]Stamp, time.Time)) {
	receiveWith(f.e, c, receiveLoop{workers: workers, lat: lat},
		func() inbox[fastMsg] { return fastInbox{f.e, f.e.fastConn(), f.q} },
		func(msgs []fastMsg, at time.Time) { handle(f.e.fastArrive(c.ledger, msgs), at) })
}

// fastSender sends on one keep-alive connection and checks the MD5 the
// broker computed of each message against that of the body sent.
type fastSender struct {
	c *fastConn
	q *fastQueue
}

func (s *fastSender) close() { s.c.close() }

func (s *fastSender) send(ctx context.Context, st Stamp) error {
	c := s.c
	c.body = s.q.appendSend(c.body[:0], c.bodies([]Stamp{st})[0])
	ans, err := c.call(ctx, opSend, c.body)
	if err != nil {
		return err
	}
	return checkSend(ans, c.sums[0])
}

// checkSend checks a SendMessage answer against the MD5 of what was sent.
func checkSend(ans []byte, sent [32]byte) error {
	got, err := parseSend(ans)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, sent[:]) {
		return fmt.Errorf("MD5OfMessageBody %q, but the body sent has %s", got, sent[:])
	}
	return nil
}

// sendBatch sends to standard queues only: a stamp's group would need
// FIFO entries, which the fast client does not build.
func (s *fastSender) sendBatch(ctx context.Context, stamps []Stamp, lat *Latencies) ([]*string, []batchFailure, error) {
	for _, st := range stamps {
		if st.Group != "" {
			return nil, nil, errors.New("the fast client sends no FIFO messages")
		}
	}
	c := s.c
	c.body = s.q.appendSendBatch(c.body[:0], c.bodies(stamps))
	t0 := time.Now()
	ans, err := c.call(ctx, opSendBatch, c.body)
	if err == nil {
		c.entries, err = parseBatch(ans, c.entries)
	}
	if err != nil {
		return nil, nil, err
	}
	if lat != nil {
		lat.Add(time.Since(t0))
	}
	ok, failed := sendEntries(c.entries, c.sums[:len(stamps)])
	return ok, failed, nil
}

// sendEntries sorts the entries of a SendMessageBatch answer into those
// the broker took and those it failed, for batchAnswer; a success whose
// MD5OfMessageBody is not that of the body sent under its Id is a failure.
func sendEntries(entries []entryAnswer, sums [][32]byte) (ok []*string, failed []batchFailure) {
	str := func(b []byte) *string { s := string(b); return &s }
	for _, a := range entries {
		id := str(a.id)
		if a.failed {
			failed = append(failed, batchFailure{id, str(a.code), str(a.message)})
			continue
		}
		i, err := strconv.Atoi(*id)
		if err == nil && i >= 0 && i < len(sums) && !bytes.Equal(a.md5, sums[i][:]) {
			failed = append(failed, batchFailure{id, str([]byte("MD5OfMessageBody")),
				str(fmt.Appendf(nil, "%q, but the body sent has %s", a.md5, sums[i][:]))})
			continue
		}
		ok = append(ok, id) // an unknown Id is batchAnswer's to count
	}
	return ok, failed
}

// fastInbox receives on a keep-alive connection of its own.
type fastInbox struct {
	e *env
	c *fastConn
	q *fastQueue
}

// receive returns messages in the connection's buffer, valid until its
// next call.
func (in fastInbox) receive(ctx context.Context) ([]fastMsg, error) {
	ans, err := in.c.call(ctx, opReceive, in.q.receive)
	if err != nil {
		return nil, err
	}
	if in.c.msgs, err = parseReceive(ans, in.c.msgs); err != nil {
		return nil, err
	}
	return in.c.msgs, nil
}

func (in fastInbox) remove(ctx context.Context, msgs []fastMsg) {
	in.e.fastDelete(ctx, in.c, in.q, msgs)
}
func (in fastInbox) close() { in.c.close() }

// fastDelete deletes msgs in one DeleteMessageBatch; each failed entry,
// and an answer that does not account for every entry once, is an error.
func (e *env) fastDelete(ctx context.Context, c *fastConn, q *fastQueue, msgs []fastMsg) {
	c.body = q.appendDelete(c.body[:0], msgs)
	ans, err := c.call(ctx, opDeleteBatch, c.body)
	if err == nil {
		c.entries, err = parseBatch(ans, c.entries)
	}
	if err != nil {
		if ctx.Err() == nil {
			e.fail(fmt.Errorf("DeleteMessageBatch: %w", err))
		}
		return
	}
	for _, err := range deleteProblems(c.entries, len(msgs)) {
		e.fail(err)
	}
}

// deleteProblems lists what is wrong with a DeleteMessageBatch answer of
// entries to a request of n entries: failed entries, and Ids answered
// twice, unknown or left out.
func deleteProblems(entries []entryAnswer, n int) []error {
	var errs []error
	answered := make([]bool, n)
	for _, a := range entries {
		i, err := strconv.Atoi(string(a.id))
		if err != nil || i < 0 || i >= n || answered[i] {
			errs = append(errs, fmt.Errorf("DeleteMessageBatch: answer for unknown or repeated entry %q", a.id))
			continue
		}
		answered[i] = true
		if a.failed {
			errs = append(errs, fmt.Errorf("DeleteMessageBatch entry: %s: %s", a.code, a.message))
		}
	}
	for i, a := range answered {
		if !a {
			errs = append(errs, fmt.Errorf("DeleteMessageBatch: entry %d missing from the answer", i))
		}
	}
	return errs
}

// fastArrive checks each received body against its MD5OfBody, books it in
// l and returns the stamps of those that arrived for the first time. A
// body whose MD5 is wrong is an error, and still booked: its loss is not
// the question.
func (e *env) fastArrive(l *Ledger, msgs []fastMsg) []Stamp {
	var first []Stamp
	for _, m := range msgs {
		if sum := md5Hex(m.body); !bytes.Equal(m.md5, sum[:]) {
			e.fail(fmt.Errorf("ReceiveMessage: MD5OfBody %q, but the body has %s", m.md5, sum[:]))
		}
		st, ok := ParseBody(e.run, string(m.body))
		if !ok {
			l.Stray()
			continue
		}
		if l.Seen(st.Seq, 0) == First {
			first = append(first, st)
		}
	}
	return first
}
