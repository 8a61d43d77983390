package httpfast

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    parseResult
		method  string
		target  string
		minor   int
		length  int64
		host    string
		close   bool
		headers int
	}{
		{name: "get", in: "GET /x HTTP/1.1\r\nHost: h\r\n\r\n", want: parsed, method: "GET", target: "/x", minor: 1, length: -1, host: "h"},
		{name: "post", in: "POST / HTTP/1.1\r\nHost: h:1\r\nContent-Length: 12\r\nX-Amz-Target: a\r\n\r\n", want: parsed,
			method: "POST", target: "/", minor: 1, length: 12, host: "h:1", headers: 2},
		{name: "1.0 closes", in: "GET / HTTP/1.0\r\n\r\n", want: parsed, method: "GET", target: "/", length: -1, close: true},
		{name: "1.0 keep-alive", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", want: parsed, method: "GET", target: "/", length: -1, headers: 1},
		{name: "close", in: "GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, close\r\n\r\n", want: parsed, method: "GET", target: "/", minor: 1, length: -1, host: "h", close: true, headers: 1},
		{name: "blank value", in: "GET / HTTP/1.1\r\nHost: h\r\nX-A:\r\n\r\n", want: parsed, method: "GET", target: "/", minor: 1, length: -1, host: "h", headers: 1},
		{name: "empty", in: "", want: incomplete},
		{name: "request line only", in: "GET / HTTP/1.1\r\n", want: incomplete},
		{name: "head cut", in: "GET / HTTP/1.1\r\nHost: h\r\nX-A: b", want: incomplete},
		{name: "bare lf", in: "GET / HTTP/1.1\n", want: handOff},
		{name: "bare lf in head", in: "GET / HTTP/1.1\r\nHost: h\n", want: handOff},
		{name: "no host", in: "GET / HTTP/1.1\r\n\r\n", want: handOff},
		{name: "two hosts", in: "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", want: handOff},
		{name: "chunked", in: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", want: handOff},
		{name: "expect", in: "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n", want: handOff},
		{name: "upgrade", in: "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n", want: handOff},
		{name: "http2", in: "PRI * HTTP/2.0\r\n\r\n", want: handOff},
		{name: "connect", in: "CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", want: handOff},
		{name: "absolute", in: "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n", want: handOff},
		{name: "bad method", in: "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", want: handOff},
		{name: "bad length", in: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", want: handOff},
		{name: "huge length", in: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", want: handOff},
		{name: "two lengths", in: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", want: handOff},
		{name: "continuation", in: "GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", want: handOff},
		{name: "name with space", in: "GET / HTTP/1.1\r\nHost: h\r\nX A: b\r\n\r\n", want: handOff},
		{name: "empty name", in: "GET / HTTP/1.1\r\nHost: h\r\n: b\r\n\r\n", want: handOff},
		{name: "control in value", in: "GET / HTTP/1.1\r\nHost: h\r\nX-A: \x00\r\n\r\n", want: handOff},
		{name: "space in target", in: "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", want: handOff},
		{name: "lowercase version", in: "GET / http/1.1\r\nHost: h\r\n\r\n", want: handOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req request
			got := parse([]byte(tt.in), &req)
			if got != tt.want {
				t.Fatalf("parse = %v, want %v", got, tt.want)
			}
			if got != parsed {
				return
			}
			if string(req.method) != tt.method || string(req.target) != tt.target || req.minor != tt.minor ||
				req.contentLength != tt.length || string(req.host) != tt.host || req.close != tt.close ||
				len(req.headers) != tt.headers || req.headLen != len(tt.in) {
				t.Errorf("parsed %+v", req)
			}
		})
	}
}

// FuzzParse checks that parse never panics, and that a request it takes
// is one net/http reads alike: method, URL, protocol, host, header and
// body.
func FuzzParse(f *testing.F) {
	for _, tc := range conformanceCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var head request
		if parse(data, &head) != parsed {
			return
		}
		client, server := net.Pipe()
		client.Close()
		c := &conn{s: New(&http.Server{}), rwc: server, ctx: context.Background(), buf: data, w: len(data), head: head}
		got, ok := c.request()
		if !ok {
			return // net/http is handed what url.ParseRequestURI refuses
		}
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("taken, but net/http refuses it: %v", err)
		}
		// net/http's server keeps Host out of Header.
		delete(want.Header, "Host")
		wantBody, wantErr := io.ReadAll(want.Body)
		gotBody, gotErr := io.ReadAll(got.Body)
		if got.Method != want.Method || got.URL.String() != want.URL.String() || got.Proto != want.Proto ||
			got.ProtoMinor != want.ProtoMinor || got.Host != want.Host || got.RequestURI != want.RequestURI ||
			got.ContentLength != want.ContentLength || got.Close != want.Close {
			t.Errorf("request %+v\nnet/http %+v", got, want)
		}
		if len(got.Header) != 0 || len(want.Header) != 0 {
			if !reflect.DeepEqual(got.Header, want.Header) {
				t.Errorf("header %q\nnet/http %q", got.Header, want.Header)
			}
		}
		if !bytes.Equal(gotBody, wantBody) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("body %q (%v)\nnet/http %q (%v)", gotBody, gotErr, wantBody, wantErr)
		}
	})
}
