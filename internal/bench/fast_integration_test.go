package bench_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/bench"
)

// TestClientsAgainstFerry runs the scenarios both clients run briefly
// with each client against a real in-memory Ferry: each must come out
// right with every figure present, and the same figures from both
// clients, so that their reports compare. A scenario the fast client does
// not run must read unsupported with it.
func TestClientsAgainstFerry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := startFerry(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	shared := []string{"send", "send-batch", "receive-delete", "produce-consume"}
	// figures names the figures a result carries, for comparing clients.
	figures := func(r bench.Result) string {
		var have []string
		for name, v := range map[string]*float64{"server_cpu": r.ServerCPU, "server_cpu_per_request": r.ServerCPUPerRequest,
			"client_cpu": r.ClientCPU, "per_receive": r.PerReceive, "p50": r.P50ms, "p99": r.P99ms} {
			if v != nil {
				have = append(have, name)
			}
		}
		slices.Sort(have)
		return r.Unit + " " + r.Latency + ": " + strings.Join(have, ",")
	}
	byClient := map[string]map[string]string{}
	for _, client := range bench.Clients() {
		rep, err := bench.Run(ctx, bench.Config{Endpoint: srv.URL(), Client: client,
			Scenarios: append(slices.Clone(shared), "dlq-move"),
			Duration:  300 * time.Millisecond, Concurrency: 4, Prefill: 2000})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Client != client {
			t.Errorf("report names client %q, want %q", rep.Client, client)
		}
		byClient[client] = map[string]string{}
		for _, r := range rep.Results {
			t.Logf("%s: %s", client, r.Line())
			if r.Name == "dlq-move" {
				if client == bench.ClientFast && (r.Status != bench.StatusUnsupported || !strings.Contains(r.Note, "--client sdk")) {
					t.Errorf("fast dlq-move: %s, want unsupported", r.Line())
				}
				continue
			}
			byClient[client][r.Name] = figures(r)
			if r.Status != bench.StatusOK || r.Verified == 0 || r.Lost+r.Duplicated+r.Errors != 0 {
				t.Errorf("%s %s: %s", client, r.Name, r.Line())
			}
			if r.ServerCPU == nil || r.ClientCPU == nil || *r.ClientCPU <= 0 || r.PerReceive == nil || *r.PerReceive <= 0 || *r.PerReceive > 10 {
				t.Errorf("%s %s: figures missing or wrong: %s", client, r.Name, r.Line())
			}
			if r.Requests == 0 {
				t.Errorf("%s %s: no requests counted", client, r.Name)
			}
			if r.Latency == "" || r.P50ms == nil {
				t.Errorf("%s %s: no latency: %s", client, r.Name, r.Line())
			}
		}
	}
	for _, name := range shared {
		if sdk, fast := byClient[bench.ClientSDK][name], byClient[bench.ClientFast][name]; sdk != fast {
			t.Errorf("%s: the SDK reports %q, the fast client %q", name, sdk, fast)
		}
	}
	assertNoQueues(ctx, t, srv.URL())
}

// TestFastClientCountsWrongAnswers puts a proxy before Ferry that spoils
// one answer (or loses one message) and requires the fast client to
// report it: a fast client that did not check would read ok.
func TestFastClientCountsWrongAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := startFerry(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}

	// answer is a JSON answer as a map, for a spoiler to change.
	type answer = map[string]any
	for _, tc := range []struct {
		name string
		op   string
		// lose answers the request itself, as if the broker took the
		// message, without passing it on.
		lose bool
		// spoil changes an answer; it reports false to pass it unchanged.
		spoil func(a answer) bool
		bad   func(r bench.Result) bool
	}{
		{name: "a send acknowledged and lost", op: "SendMessage", lose: true,
			bad: func(r bench.Result) bool { return r.Lost == 1 }},
		{name: "a send's MD5 wrong", op: "SendMessage", spoil: func(a answer) bool {
			a["MD5OfMessageBody"] = "00000000000000000000000000000000"
			return true
		}, bad: func(r bench.Result) bool { return r.Errors == 1 && strings.Contains(r.Note, "MD5OfMessageBody") }},
		{name: "a message received twice", op: "ReceiveMessage", spoil: func(a answer) bool {
			msgs, _ := a["Messages"].([]any)
			if len(msgs) == 0 {
				return false
			}
			a["Messages"] = append(msgs, msgs[0])
			return true
		}, bad: func(r bench.Result) bool { return r.Duplicated >= 1 }},
		{name: "a received body's MD5 wrong", op: "ReceiveMessage", spoil: func(a answer) bool {
			msgs, _ := a["Messages"].([]any)
			if len(msgs) == 0 {
				return false
			}
			msgs[0].(answer)["MD5OfBody"] = "00000000000000000000000000000000"
			return true
		}, bad: func(r bench.Result) bool { return r.Errors == 1 && strings.Contains(r.Note, "MD5OfBody") }},
		{name: "a delete failed", op: "DeleteMessageBatch", spoil: func(a answer) bool {
			ok, _ := a["Successful"].([]any)
			if len(ok) == 0 {
				return false
			}
			a["Successful"] = ok[1:]
			a["Failed"] = []any{answer{"Id": ok[0].(answer)["Id"], "SenderFault": false, "Code": "InternalError", "Message": "spoilt"}}
			return true
		}, bad: func(r bench.Result) bool { return r.Errors == 1 && strings.Contains(r.Note, "spoilt") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var done atomic.Bool
			ferry := httputil.NewSingleHostReverseProxy(target)
			ferry.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
			ferry.ModifyResponse = func(resp *http.Response) error {
				if tc.spoil == nil || resp.Request.Header.Get("X-Amz-Target") != "AmazonSQS."+tc.op || done.Load() {
					return nil
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					return err
				}
				var a answer
				if err := json.Unmarshal(b, &a); err == nil && done.CompareAndSwap(false, tc.spoil(a)) && done.Load() {
					b, _ = json.Marshal(a)
				}
				resp.Body = io.NopCloser(bytes.NewReader(b))
				resp.ContentLength = int64(len(b))
				resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
				return nil
			}
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.lose && r.Header.Get("X-Amz-Target") == "AmazonSQS."+tc.op && done.CompareAndSwap(false, true) {
					var req struct{ MessageBody string }
					if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					sum := md5.Sum([]byte(req.MessageBody))
					w.Header().Set("Content-Type", "application/x-amz-json-1.0")
					json.NewEncoder(w).Encode(map[string]string{"MD5OfMessageBody": hex.EncodeToString(sum[:]), "MessageId": "lost"})
					return
				}
				ferry.ServeHTTP(w, r)
			}))
			defer proxy.Close()

			rep, err := bench.Run(ctx, bench.Config{Endpoint: proxy.URL, Client: bench.ClientFast, Scenarios: []string{"send"},
				Duration: 200 * time.Millisecond, Concurrency: 2, MaxMessages: 200})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			if !done.Load() {
				t.Fatalf("nothing spoilt: %s", r.Line())
			}
			if r.Status != bench.StatusFail || !tc.bad(r) {
				t.Errorf("got %s", r.Line())
			}
		})
	}
	assertNoQueues(ctx, t, srv.URL())
}
