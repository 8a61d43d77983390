// Package ceiling is a measuring fixture, not a broker: an HTTP server that
// answers the calls of Ferry's benchmarks with valid AWS answers and holds
// nothing. It reads each request whole and answers it from precomputed
// parts, with the digests the SDK checks computed from the request (the MD5
// of every body sent) and the headers Ferry sends. Driven by a client, it
// shows what that client, Go's net/http and loopback TCP cost on their own
// on this machine: no broker driven the same way can go faster, so each
// broker's figure reads best as a fraction of the ceiling's.
//
// It answers, over SQS's JSON protocol: SendMessage, SendMessageBatch,
// ReceiveMessage (always the same 10 messages, whatever was sent),
// DeleteMessage, DeleteMessageBatch, CreateQueue, GetQueueUrl,
// GetQueueAttributes (the queue's ARN, and zero messages), DeleteQueue and
// ListQueues (none); over SNS's query protocol: CreateTopic, Subscribe,
// Publish, PublishBatch, Unsubscribe and DeleteTopic. Anything else gets
// AWS's error for an operation the service does not support. Every answer
// carries Header, so that a client can tell it drives the ceiling.
package ceiling

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/httpfast"
)

// Header is set to "1" on every answer of the ceiling. The fixture says
// what it is, rather than a client being told so, so that no client can
// be told to skip its checks against a real broker.
const Header = "X-Ferry-Ceiling"

// Account and Region are those of every ARN and queue URL it answers with.
const (
	Account = "000000000000"
	Region  = "us-east-1"
)

// bodySize is the size of the bodies it hands out: the benchmarks' own.
const bodySize = 256

// Handler answers the calls; it is safe for concurrent use.
type Handler struct {
	receiveMessage []byte // the answer of every ReceiveMessage
	publish        []byte // the answer of every Publish
	// Header values as Ferry writes them. One request id for all: the
	// ceiling's ids need only look like AWS's.
	requestID, jsonType, xmlType, yes []string
	buffers                           sync.Pool
}

// New returns a Handler with its answers computed.
func New() *Handler {
	h := &Handler{
		requestID: []string{messageID(0)},
		jsonType:  []string{"application/x-amz-json-1.0"},
		xmlType:   []string{"text/xml"},
		yes:       []string{"1"},
		buffers:   sync.Pool{New: func() any { return new(bytes.Buffer) }},
	}
	body := "ferry ceiling " + strings.Repeat(".", bodySize-len("ferry ceiling "))
	sum := md5.Sum([]byte(body))
	type message struct{ MessageId, ReceiptHandle, MD5OfBody, Body string }
	var recv struct{ Messages []message }
	for i := range 10 {
		// Receipt handles as long as Ferry's: 40 bytes, base64url.
		handle := fmt.Sprintf("%040d", i)
		recv.Messages = append(recv.Messages, message{messageID(i), handle, hex.EncodeToString(sum[:]), body})
	}
	var err error
	if h.receiveMessage, err = json.Marshal(recv); err != nil {
		panic(err) // strings only: cannot fail
	}
	h.publish = fmt.Appendf(nil, `<PublishResponse xmlns="%s"><PublishResult><MessageId>%s</MessageId></PublishResult>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></PublishResponse>`, snsNamespace, messageID(0), h.requestID[0])
	return h
}

func messageID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

const snsNamespace = "http://sns.amazonaws.com/doc/2010-03-31/"

// ServeHTTP answers one call.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()[Header] = h.yes
	if r.Method == http.MethodGet && r.URL.Path == "/_ferry/health" {
		// Where Ferry answers, so that a script waits for either alike.
		w.Header()["Content-Type"] = []string{"application/json"}
		_, _ = w.Write([]byte(`{"status":"running","store":"none"}`))
		return
	}
	in := h.buffers.Get().(*bytes.Buffer)
	in.Reset()
	defer h.buffers.Put(in)
	if _, err := in.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := h.buffers.Get().(*bytes.Buffer)
	out.Reset()
	defer h.buffers.Put(out)
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		h.sqs(w, r, strings.TrimPrefix(target, "AmazonSQS."), in.Bytes(), out)
		return
	}
	h.sns(w, in.Bytes(), out)
}

// sqs answers an SQS call of the JSON protocol.
func (h *Handler) sqs(w http.ResponseWriter, r *http.Request, op string, in []byte, out *bytes.Buffer) {
	var answer []byte
	var err error
	switch op {
	case "SendMessage":
		answer, err = sendMessage(out, in)
	case "SendMessageBatch":
		answer, err = sendMessageBatch(out, in)
	case "ReceiveMessage":
		answer = h.receiveMessage
	case "DeleteMessageBatch":
		answer = batchAnswer(out, in, []byte(`"}`))
	case "DeleteMessage", "DeleteQueue", "ListQueues":
		answer = []byte(`{}`)
	case "CreateQueue", "GetQueueUrl":
		var req struct{ QueueName string }
		if err = json.Unmarshal(in, &req); err == nil {
			u := url.URL{Scheme: "http", Host: r.Host, Path: "/" + Account + "/" + req.QueueName}
			if r.TLS != nil {
				u.Scheme = "https"
			}
			answer, err = json.Marshal(map[string]string{"QueueUrl": u.String()})
		}
	case "GetQueueAttributes":
		answer, err = queueAttributes(in)
	default:
		err = errUnsupported
	}
	hdr := w.Header()
	hdr["X-Amzn-Requestid"] = h.requestID
	hdr["Content-Type"] = h.jsonType
	if err != nil {
		code, query := "com.amazonaws.sqs#UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation;Sender"
		if !errors.Is(err, errUnsupported) {
			code, query = "com.amazonaws.sqs#InvalidParameterValue", "InvalidParameterValue;Sender"
		}
		msg, _ := json.Marshal(fmt.Sprintf("the ceiling: %s: %v", op, err))
		hdr["X-Amzn-Query-Error"] = []string{query}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"__type":%q,"message":%s}`, code, msg)
		return
	}
	hdr["Content-Length"] = []string{strconv.Itoa(len(answer))}
	_, _ = w.Write(answer)
}

var errUnsupported = errors.New("not answered by the ceiling")

// sendMessage answers a SendMessage with its body's digest.
func sendMessage(out *bytes.Buffer, in []byte) ([]byte, error) {
	var body []byte
	for s, err := range jsonStrings(in, `"MessageBody":"`) {
		if err != nil {
			return nil, err
		}
		body = s
		break
	}
	if body == nil {
		return nil, errors.New("no MessageBody")
	}
	out.WriteString(`{"MD5OfMessageBody":"`)
	writeMD5(out, body)
	out.WriteString(`","MessageId":"` + messageID(0) + `"}`)
	return out.Bytes(), nil
}

// sendMessageBatch answers each entry of a SendMessageBatch with its
// body's digest. Every entry has one Id and one MessageBody, so the n-th
// of each belong together, whatever the order of an entry's members.
func sendMessageBatch(out *bytes.Buffer, in []byte) ([]byte, error) {
	var bodies [][]byte
	for s, err := range jsonStrings(in, `"MessageBody":"`) {
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, s)
	}
	out.WriteString(`{"Successful":[`)
	n := 0
	for i, id := range entryIDs(in, `"Id":"`) {
		if i >= len(bodies) {
			return nil, errors.New("an entry without a MessageBody")
		}
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"Id":"`)
		out.Write(id)
		out.WriteString(`","MessageId":"` + messageID(0) + `","MD5OfMessageBody":"`)
		writeMD5(out, bodies[i])
		out.WriteString(`"}`)
		n++
	}
	if n != len(bodies) {
		return nil, errors.New("a MessageBody without an Id")
	}
	out.WriteString(`],"Failed":[]}`)
	return out.Bytes(), nil
}

func writeMD5(out *bytes.Buffer, b []byte) {
	sum := md5.Sum(b)
	var x [2 * md5.Size]byte
	hex.Encode(x[:], sum[:])
	out.Write(x[:])
}

// batchAnswer writes into out a batch answer with every entry successful:
// for each "Id" of the request, {"Id":"<id> and then entryTail.
func batchAnswer(out *bytes.Buffer, request, entryTail []byte) []byte {
	out.WriteString(`{"Successful":[`)
	for i, id := range entryIDs(request, `"Id":"`) {
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"Id":"`)
		out.Write(id)
		out.Write(entryTail)
	}
	out.WriteString(`],"Failed":[]}`)
	return out.Bytes()
}

// entryIDs yields the raw values of key (`"Id":"`) in a JSON request as
// the SDK encodes it: no whitespace, a quote inside a string escaped, so
// that the key occurs only as a key, and an Id (letters, digits, - and _)
// runs to the next quote with nothing to unescape. Written back between
// quotes, a raw value is the same JSON string.
func entryIDs(request []byte, key string) func(func(int, []byte) bool) {
	return func(yield func(int, []byte) bool) {
		for n := 0; ; n++ {
			at := bytes.Index(request, []byte(key))
			if at < 0 {
				return
			}
			request = request[at+len(key):]
			end := bytes.IndexByte(request, '"')
			if end < 0 || !yield(n, request[:end]) {
				return
			}
			request = request[end:]
		}
	}
}

// jsonStrings yields the decoded string values that follow key (which
// ends with the value's opening quote) in a JSON document, in order.
func jsonStrings(doc []byte, key string) func(func([]byte, error) bool) {
	return func(yield func([]byte, error) bool) {
		for {
			at := bytes.Index(doc, []byte(key))
			if at < 0 {
				return
			}
			quoted := doc[at+len(key)-1:] // from the opening quote
			doc = doc[at+len(key):]
			end, escaped := 0, false
			for end < len(doc) && doc[end] != '"' {
				if doc[end] == '\\' {
					escaped = true
					end++
				}
				end++
			}
			if end >= len(doc) {
				yield(nil, errors.New("an unterminated string"))
				return
			}
			s := doc[:end]
			if escaped {
				var v string
				if err := json.Unmarshal(quoted[:end+2], &v); err != nil {
					yield(nil, fmt.Errorf("a string: %w", err))
					return
				}
				s = []byte(v)
			}
			if !yield(s, nil) {
				return
			}
			doc = doc[end+1:]
		}
	}
}

// queueAttributes answers GetQueueAttributes: the queue's ARN, from its
// URL, and no messages, visible, in flight or delayed.
func queueAttributes(in []byte) ([]byte, error) {
	var req struct {
		QueueUrl       string
		AttributeNames []string
	}
	if err := json.Unmarshal(in, &req); err != nil {
		return nil, err
	}
	name := req.QueueUrl[strings.LastIndexByte(req.QueueUrl, '/')+1:]
	all := map[string]string{
		"QueueArn":                              "arn:aws:sqs:" + Region + ":" + Account + ":" + name,
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
	}
	attrs := map[string]string{}
	for k, v := range all {
		if slices.Contains(req.AttributeNames, "All") || slices.Contains(req.AttributeNames, k) {
			attrs[k] = v
		}
	}
	return json.Marshal(map[string]map[string]string{"Attributes": attrs})
}

// sns answers an SNS call of the query protocol.
func (h *Handler) sns(w http.ResponseWriter, in []byte, out *bytes.Buffer) {
	action := string(formValue(in, "Action"))
	hdr := w.Header()
	hdr["X-Amzn-Requestid"] = h.requestID
	hdr["Content-Type"] = h.xmlType
	if action == "Publish" {
		hdr["Content-Length"] = []string{strconv.Itoa(len(h.publish))}
		_, _ = w.Write(h.publish)
		return
	}
	result := func(inner string) {
		fmt.Fprintf(out, `<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
			action, snsNamespace, action, inner, action, h.requestID[0], action)
	}
	switch action {
	case "CreateTopic":
		result("<TopicArn>" + escape(topicArn(formString(in, "Name"))) + "</TopicArn>")
	case "Subscribe":
		result("<SubscriptionArn>" + escape(formString(in, "TopicArn")+":"+messageID(0)) + "</SubscriptionArn>")
	case "PublishBatch":
		var b strings.Builder
		b.WriteString("<Successful>")
		for _, id := range batchIDs(in, "PublishBatchRequestEntries.member.") {
			b.WriteString("<member><Id>" + escape(id) + "</Id><MessageId>" + messageID(0) + "</MessageId></member>")
		}
		b.WriteString("</Successful><Failed/>")
		result(b.String())
	case "Unsubscribe", "DeleteTopic":
		fmt.Fprintf(out, `<%sResponse xmlns="%s"><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
			action, snsNamespace, h.requestID[0], action)
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>InvalidAction</Code>`+
			`<Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
			snsNamespace, escape("the ceiling does not answer action "+action), h.requestID[0])
		return
	}
	hdr["Content-Length"] = []string{strconv.Itoa(out.Len())}
	_, _ = w.Write(out.Bytes())
}

func topicArn(name string) string { return "arn:aws:sns:" + Region + ":" + Account + ":" + name }

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// formValue is the raw value of key in a form-encoded body, nil if absent.
func formValue(form []byte, key string) []byte {
	for len(form) > 0 {
		pair := form
		if amp := bytes.IndexByte(form, '&'); amp >= 0 {
			pair, form = form[:amp], form[amp+1:]
		} else {
			form = nil
		}
		if k, v, ok := bytes.Cut(pair, []byte("=")); ok && string(k) == key {
			return v
		}
	}
	return nil
}

// formString is the decoded value of key in a form-encoded body.
func formString(form []byte, key string) string {
	v, err := url.QueryUnescape(string(formValue(form, key)))
	if err != nil {
		return ""
	}
	return v
}

// batchIDs is the Ids of a query batch's entries: prefix N.Id for every N.
func batchIDs(form []byte, prefix string) []string {
	values, err := url.ParseQuery(string(form))
	if err != nil {
		return nil
	}
	var ids []string
	for k, v := range values {
		if n, ok := strings.CutPrefix(k, prefix); ok && strings.HasSuffix(n, ".Id") && len(v) > 0 {
			ids = append(ids, v[0])
		}
	}
	slices.Sort(ids)
	return ids
}

// Server is a ceiling listening on a TCP address.
type Server struct {
	srv  *http.Server
	fast *httpfast.Server // nil when net/http serves
	url  string
}

// Start serves a ceiling on addr (host:port; port 0 picks one) with
// net/http.
func Start(addr string) (*Server, error) { return StartOn(addr, false) }

// StartOn serves a ceiling on addr, with Ferry's lean HTTP/1.1 loop
// (httpfast) when fast, else with net/http.
func StartOn(addr string, fast bool) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	// As Ferry's server is configured, less what only Ferry needs.
	s := &Server{srv: &http.Server{Handler: New(), ReadHeaderTimeout: 30 * time.Second}, url: "http://" + ln.Addr().String()}
	if fast {
		s.fast = httpfast.New(s.srv)
		go func() { _ = s.fast.Serve(ln) }()
		return s, nil
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the ceiling's base URL.
func (s *Server) URL() string { return s.url }

// Shutdown stops the ceiling, waiting for calls in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.fast != nil {
		if err := s.fast.Shutdown(ctx); err != nil {
			s.fast.Close()
			return fmt.Errorf("ceiling: %w", err)
		}
		return nil
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
		return fmt.Errorf("ceiling: %w", err)
	}
	return nil
}
