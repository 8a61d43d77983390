package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// trickle is a body that arrives step bytes per Read, size bytes in all,
// then fails with end (io.EOF for a body that arrived whole). Each Read
// checks what the reader has reserved against what has arrived.
type trickle struct {
	t          *testing.T
	step, size int
	end        error
	bound      int // the most the storage may ever hold
	arrived    int
}

func (r *trickle) Read(p []byte) (int, error) {
	// p is the free storage after the arrived bytes: arrived+cap(p) is the
	// storage's capacity.
	if held := r.arrived + cap(p); held > max(2*r.arrived, bodyChunk) || held > r.bound {
		r.t.Fatalf("storage of %d bytes after %d arrived (bound %d)", held, r.arrived, r.bound)
	}
	if r.arrived == r.size {
		return 0, r.end
	}
	n := copy(p, strings.Repeat("x", min(r.step, r.size-r.arrived)))
	r.arrived += n
	return n, nil
}

// TestReadBodyGrowsAsBytesArrive: a large Content-Length reserves nothing
// up front beyond a small chunk; the storage at most doubles what has
// arrived and never passes the length (or the limit) + 1. A body cut off
// by the read deadline answers RequestTimeout.
func TestReadBodyGrowsAsBytesArrive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		length      int64 // Content-Length; -1 for chunked
		limit       int64
		step, size  int
		end         error
		want        *Error // nil: the body is read whole
		wantBodyLen int
	}{
		{name: "8 MB announced, 3 bytes sent, client gone", length: 8_000_000, step: 1, size: 3,
			end: io.ErrUnexpectedEOF, want: ErrSerialization},
		{name: "8 MB announced, read deadline passed", length: 8_000_000, step: 10, size: 100,
			end: fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), want: ErrRequestTimeout},
		{name: "1 MB announced, arrives in pieces", length: 1 << 20, step: 1000, size: 1 << 20, end: io.EOF, wantBodyLen: 1 << 20},
		{name: "small, in one piece", length: 300, step: 300, size: 300, end: io.EOF, wantBodyLen: 300},
		{name: "chunked under the limit", length: -1, limit: 50_000, step: 4096, size: 50_000, end: io.EOF, wantBodyLen: 50_000},
		{name: "chunked over the limit", length: -1, limit: 50_000, step: 4096, size: 60_000, end: io.EOF, want: ErrRequestTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{MaxBodyBytes: tt.limit}
			limit := tt.limit
			if limit == 0 {
				limit = DefaultMaxBodyBytes
			}
			bound := limit + 1
			if tt.length >= 0 {
				bound = tt.length + 1
			}
			body := &trickle{t: t, step: tt.step, size: tt.size, end: tt.end, bound: int(bound)}
			req := httptest.NewRequest(http.MethodPost, "/", nil)
			req.Body, req.ContentLength = io.NopCloser(body), tt.length
			var buf bytes.Buffer
			got, err := h.readBody(req, &buf)
			if tt.want != nil {
				var e *Error
				if !errors.As(err, &e) || e.Code != tt.want.Code {
					t.Fatalf("err %v, want %s", err, tt.want.Code)
				}
			} else if err != nil || len(got) != tt.wantBodyLen {
				t.Fatalf("read %d bytes, err %v; want %d", len(got), err, tt.wantBodyLen)
			}
			if c := buf.Cap(); int64(c) > bound || c > max(2*body.arrived, bodyChunk) {
				t.Errorf("pooled storage of %d bytes after %d arrived", c, body.arrived)
			}
		})
	}
}

// TestReadBodyWarmBufferAllocatesNothing: a small body read into a pooled
// buffer that has room costs no allocation.
func TestReadBodyWarmBufferAllocatesNothing(t *testing.T) {
	h := &Handler{}
	payload := []byte(`{"QueueUrl":"http://localhost:4566/000000000000/q","MessageBody":"hello"}`)
	rb := rewindBody{bytes.NewReader(payload)}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Body, req.ContentLength = rb, int64(len(payload))
	buf := bytes.NewBuffer(make([]byte, 0, 4096))
	allocs := testing.AllocsPerRun(100, func() {
		rb.Reset(payload)
		buf.Reset()
		if b, err := h.readBody(req, buf); err != nil || len(b) != len(payload) {
			t.Fatalf("read %q, %v", b, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per small body", allocs)
	}
}
