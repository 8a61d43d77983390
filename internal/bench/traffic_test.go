package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/ferrymq/ferry/internal/bench/ceiling"
)

// TestTraffic counts every request, failed ones included, and tells the
// ceiling, which marks its answers, from any other endpoint.
func TestTraffic(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer plain.Close()
	fixture, err := ceiling.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fixture.Shutdown(context.Background())
	cases := []struct {
		name     string
		endpoint string
		ceiling  bool
	}{
		{"an endpoint that is not the ceiling", plain.URL, false},
		{"the ceiling", fixture.URL(), true},
		{"nothing listening", "http://127.0.0.1:1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTraffic(NewHTTPClient(1))
			sqsClient, _ := clients(tc.endpoint, tr.client)
			if got := tr.isCeiling(context.Background(), sqsClient); got != tc.ceiling {
				t.Errorf("ceiling %v, want %v", got, tc.ceiling)
			}
			for range 3 {
				if resp, err := tr.client.Get(tc.endpoint + "/x"); err == nil {
					resp.Body.Close()
				}
			}
			if got := tr.requests.Load(); got != 4 {
				t.Errorf("%d requests counted, want 4", got)
			}
		})
	}
}

// TestRecordCPU: a scenario's figures of CPU and requests, each present
// exactly when there is something to read and to divide by.
func TestRecordCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	self := os.Getpid()
	cases := []struct {
		name           string
		pids           []int
		verified       int64
		requests       int64
		perMsg, perReq bool // server figures present
		client         bool
		note           string
	}{
		{"messages and requests", []int{self}, 10, 5, true, true, true, ""},
		{"no message verified", []int{self}, 0, 5, false, true, false, ""},
		{"no request", []int{self}, 10, 0, true, false, true, ""},
		{"a process that is not there", []int{self, 1 << 30}, 10, 5, false, false, true, "server CPU"},
		{"neither processes nor endpoints", nil, 10, 5, false, false, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{cfg: Config{ServerPIDs: tc.pids}, traffic: newTraffic(http.DefaultClient)}
			m := e.cpuFrom(context.Background())
			x := 0
			for i := range 5_000_000 {
				x ^= i
			}
			_ = x
			e.traffic.requests.Add(tc.requests)
			e.res.Verified = tc.verified
			m.record(context.Background())
			r := e.res
			if r.Requests != tc.requests {
				t.Errorf("requests %d, want %d", r.Requests, tc.requests)
			}
			for _, f := range []struct {
				what string
				v    *float64
				want bool
			}{{"server per message", r.ServerCPU, tc.perMsg}, {"server per request", r.ServerCPUPerRequest, tc.perReq},
				{"client per message", r.ClientCPU, tc.client}} {
				switch {
				case (f.v != nil) != f.want:
					t.Errorf("%s: %v, want present %v", f.what, f.v, f.want)
				case f.v != nil && *f.v < 0:
					t.Errorf("%s: %v µs, below zero", f.what, *f.v)
				}
			}
			if note := strings.Join(e.notes, "; "); (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("notes %q, want %q", note, tc.note)
			}
		})
	}
}
