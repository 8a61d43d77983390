package server_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// floor is a measuring fixture of the server benchmarks, not a broker: an
// HTTP server that does no broker work at all. It reads each request body
// whole and answers it with a precomputed, valid AWS response, with the
// headers Ferry sends and digests that pass the SDK's checksum checks. A
// benchmark against it measures what any broker would pay on this machine
// with the same client: aws-sdk-go-v2, Go's net/http on both ends and
// loopback TCP. Ferry's own cost is its figure less the floor's.
//
// It answers only what the benchmarks send, every message carrying the
// one body it was started with (a send of any other body fails the SDK's
// MD5 check, so a misused floor cannot pass for a fast one):
//   - SendMessage: the body's MD5.
//   - SendMessageBatch: an entry with the body's MD5 for each Id of the
//     request.
//   - ReceiveMessage: always the same 10 messages of that body.
//   - DeleteMessageBatch: each Id of the request successful.
//   - SNS Publish (query protocol): a message id.
//
// Anything else is answered 400.
type floor struct {
	url string
	// Precomputed answers and the parts of the batch answers.
	sendMessage, receiveMessage, publish []byte
	sendBatchEntry                       []byte // after an entry's Id
	// Header values as Ferry writes them. One request id for all: the
	// floor's ids need only look like AWS's.
	requestID, jsonType, xmlType []string
	buffers                      sync.Pool
}

// startFloor serves a floor on 127.0.0.1:0 until tb ends.
func startFloor(tb testing.TB, body string) *floor {
	tb.Helper()
	f, err := newFloor(body)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("floor: %v", err)
	}
	f.url = "http://" + ln.Addr().String()
	// As Ferry's server is configured, less what only Ferry needs.
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("floor shutdown: %v", err)
		}
	})
	return f
}

func newFloor(body string) (*floor, error) {
	sum := md5.Sum([]byte(body))
	md5Hex := hex.EncodeToString(sum[:])
	f := &floor{
		requestID: []string{floorMessageID(0), ""},
		jsonType:  []string{"application/x-amz-json-1.0"},
		xmlType:   []string{"text/xml"},
		buffers:   sync.Pool{New: func() any { return new(bytes.Buffer) }},
	}
	var err error
	f.sendMessage, err = json.Marshal(map[string]string{"MD5OfMessageBody": md5Hex, "MessageId": floorMessageID(0)})
	if err != nil {
		return nil, fmt.Errorf("floor SendMessage answer: %w", err)
	}
	// The rest of an entry of a SendMessageBatch answer: {"Id":"<id>" comes first.
	f.sendBatchEntry = fmt.Appendf(nil, `","MessageId":%q,"MD5OfMessageBody":%q}`, floorMessageID(0), md5Hex)

	type message struct{ MessageId, ReceiptHandle, MD5OfBody, Body string }
	var recv struct{ Messages []message }
	for i := range 10 {
		// Receipt handles as long as Ferry's: 40 bytes, base64url.
		handle := make([]byte, 40)
		handle[0], handle[39] = 1, byte(i)
		recv.Messages = append(recv.Messages, message{floorMessageID(i), base64.RawURLEncoding.EncodeToString(handle), md5Hex, body})
	}
	if f.receiveMessage, err = json.Marshal(recv); err != nil {
		return nil, fmt.Errorf("floor ReceiveMessage answer: %w", err)
	}
	f.publish = fmt.Appendf(nil, `<?xml version="1.0"?><PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">`+
		`<PublishResult><MessageId>%s</MessageId></PublishResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></PublishResponse>`,
		floorMessageID(0), f.requestID[0])
	return f, nil
}

func floorMessageID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in := f.buffers.Get().(*bytes.Buffer)
	in.Reset()
	defer f.buffers.Put(in)
	if _, err := in.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	contentType := f.jsonType
	var answer []byte
	switch r.Header.Get("X-Amz-Target") {
	case "AmazonSQS.SendMessage":
		answer = f.sendMessage
	case "AmazonSQS.ReceiveMessage":
		answer = f.receiveMessage
	case "AmazonSQS.SendMessageBatch":
		out := f.buffers.Get().(*bytes.Buffer)
		defer f.buffers.Put(out)
		answer = batchAnswer(out, in.Bytes(), f.sendBatchEntry)
	case "AmazonSQS.DeleteMessageBatch":
		out := f.buffers.Get().(*bytes.Buffer)
		defer f.buffers.Put(out)
		answer = batchAnswer(out, in.Bytes(), []byte(`"}`))
	case "":
		if bytes.Equal(formValue(in.Bytes(), "Action"), []byte("Publish")) {
			contentType, answer = f.xmlType, f.publish
		}
	}
	if answer == nil {
		http.Error(w, "the floor does not answer this request", http.StatusBadRequest)
		return
	}
	hdr := w.Header()
	hdr["X-Amzn-Requestid"] = f.requestID
	hdr["Content-Type"] = contentType
	hdr["Content-Length"] = []string{strconv.Itoa(len(answer))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
}

// batchAnswer writes into out a batch answer with every entry successful:
// for each "Id" of the request, {"Id":"<id> and then entryTail.
func batchAnswer(out *bytes.Buffer, request, entryTail []byte) []byte {
	out.Reset()
	out.WriteString(`{"Successful":[`)
	for i, id := range requestIDs(request) {
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

// requestIDs yields the entry Ids of a JSON batch request as the SDK
// encodes it: no whitespace, and a quote inside a string escaped, so
// `"Id":"` occurs only as a key and an Id (letters, digits, - and _)
// runs to the next quote, with nothing to unescape.
func requestIDs(request []byte) func(func(int, []byte) bool) {
	key := []byte(`"Id":"`)
	return func(yield func(int, []byte) bool) {
		for n := 0; ; n++ {
			at := bytes.Index(request, key)
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

// TestFloor checks that the SDK takes the floor's answers as it takes
// Ferry's, digests and batch entries included, and refuses what the floor
// does not answer, so that the floor benchmarks measure successful calls.
func TestFloor(t *testing.T) {
	t.Parallel()
	body := `a body with "quotes" & <xml>`
	fl := startFloor(t, body)
	client := jsonClient(fl.url)
	topics := snsClient(fl.url)
	queue := aws.String(fl.url + "/000000000000/bench")
	ctx := ctxT(t)
	ids := []string{"a", "b-2", "c_3"}

	tests := []struct {
		name string
		call func() (any, error)
		want any    // what the call got
		fail string // or: the error it fails with contains this
	}{
		{"SendMessage", func() (any, error) {
			out, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String(body)})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.MD5OfMessageBody), nil
		}, fmt.Sprintf("%x", md5.Sum([]byte(body))), ""},
		{"SendMessage of another body", func() (any, error) {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String("other")})
			return nil, err
		}, nil, "invalid checksum"},
		{"SendMessageBatch", func() (any, error) {
			var entries []types.SendMessageBatchRequestEntry
			for _, id := range ids {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(body)})
			}
			out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: queue, Entries: entries})
			if err != nil {
				return nil, err
			}
			return answeredIDs(out.Successful, func(e types.SendMessageBatchResultEntry) *string { return e.Id }, len(out.Failed)), nil
		}, fmt.Sprint(ids, 0), ""},
		{"SendMessageBatch of another body", func() (any, error) {
			_, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: queue,
				Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String("other")}}})
			return nil, err
		}, nil, "invalid checksum"},
		{"ReceiveMessage", func() (any, error) {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue, MaxNumberOfMessages: 10})
			if err != nil {
				return nil, err
			}
			handles := map[string]bool{}
			for _, m := range out.Messages {
				if aws.ToString(m.Body) != body {
					return nil, fmt.Errorf("body %q", aws.ToString(m.Body))
				}
				handles[aws.ToString(m.ReceiptHandle)] = true
			}
			return len(handles), nil
		}, 10, ""},
		{"DeleteMessageBatch", func() (any, error) {
			var entries []types.DeleteMessageBatchRequestEntry
			for _, id := range ids {
				entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String("h")})
			}
			out, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: queue, Entries: entries})
			if err != nil {
				return nil, err
			}
			return answeredIDs(out.Successful, func(e types.DeleteMessageBatchResultEntry) *string { return e.Id }, len(out.Failed)), nil
		}, fmt.Sprint(ids, 0), ""},
		{"Publish", func() (any, error) {
			out, err := topics.Publish(ctx, &snssdk.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:bench"), Message: aws.String(body)})
			if err != nil {
				return nil, err
			}
			return aws.ToString(out.MessageId), nil
		}, floorMessageID(0), ""},
		{"an action the floor does not answer", func() (any, error) {
			_, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("bench")})
			return nil, err
		}, nil, "StatusCode: 400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.call()
			switch {
			case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
				t.Errorf("got %v, error %v, want an error with %q", got, err, tc.fail)
			case tc.fail == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.fail == "" && got != tc.want:
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// answeredIDs is what a batch answer says: the Ids of its successful
// entries, and how many failed.
func answeredIDs[E any](ok []E, id func(E) *string, failed int) string {
	got := make([]string, len(ok))
	for i, e := range ok {
		got[i] = aws.ToString(id(e))
	}
	return fmt.Sprint(got, failed)
}
