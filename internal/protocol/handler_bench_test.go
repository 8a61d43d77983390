package protocol

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// rewindBody is a request body that each iteration rewinds, so that the
// benchmark's own allocations stay out of the figures.
type rewindBody struct{ *bytes.Reader }

func (rewindBody) Close() error { return nil }

// BenchmarkServeHTTP is the handler's cost per request without a network
// or a client: the hot SQS requests on the JSON wire, and a batch on the
// query wire, answered by actions that do nothing.
func BenchmarkServeHTTP(b *testing.B) {
	body := strings.Repeat("x", 256)
	var batch strings.Builder
	batch.WriteString(`{"QueueUrl":"http://localhost:4566/000000000000/bench","Entries":[`)
	form := url.Values{"Action": {"SendMessageBatch"}, "Version": {"2012-11-05"}, "QueueUrl": {"http://localhost:4566/000000000000/bench"}}
	for i := range 10 {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"Id":"%d","MessageBody":"%s"}`, i, body)
		form.Set(fmt.Sprintf("SendMessageBatchRequestEntry.%d.Id", i+1), fmt.Sprint(i))
		form.Set(fmt.Sprintf("SendMessageBatchRequestEntry.%d.MessageBody", i+1), body)
	}
	batch.WriteString("]}")
	tests := []struct {
		name string
		req  request
	}{
		{"json/SendMessageBatch", jsonReq("SendMessageBatch", batch.String())},
		{"json/ReceiveMessage", jsonReq("ReceiveMessage", `{"QueueUrl":"http://localhost:4566/000000000000/bench","MaxNumberOfMessages":10,"WaitTimeSeconds":1}`)},
		{"query/SendMessageBatch", formReq(form.Encode())},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			h, _, _ := newTestHandler(b)
			req := httptest.NewRequest(http.MethodPost, "/", nil)
			for k, v := range tt.req.with("Authorization", authSQS).header {
				req.Header.Set(k, v)
			}
			benchServe(b, h, req, []byte(tt.req.body))
		})
	}
}

// benchServe has h serve req, whose body is payload, b.N times.
func benchServe(b *testing.B, h *Handler, req *http.Request, payload []byte) {
	rb := rewindBody{bytes.NewReader(payload)}
	req.Body, req.ContentLength = rb, int64(len(payload))
	b.ReportAllocs()
	for b.Loop() {
		rb.Reset(payload)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
