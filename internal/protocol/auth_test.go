package protocol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
)

const benchCredentials = "[bench]\naws_access_key_id = AKIABENCH\naws_secret_access_key = bench/secret\naws_account_id = 444455556666\n"

var signedAt = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func testAuth(t testing.TB, verify bool) Auth {
	t.Helper()
	keys, err := sigv4.ParseCredentials(strings.NewReader(benchCredentials), "000000000000")
	if err != nil {
		t.Fatal(err)
	}
	return Auth{Verify: verify, DefaultAccount: "000000000000", DefaultRegion: "us-east-1",
		Verifier: &sigv4.Verifier{Keys: keys, Regions: region.Valid, Clock: clock.NewFake(signedAt)}}
}

// signedRequest is rq signed by aws-sdk-go-v2 for sqs in us-east-1.
func signedRequest(t testing.TB, rq request, key, secret string) *http.Request {
	t.Helper()
	return signedIn(t, rq, key, secret, "us-east-1")
}

// signedIn is rq signed by aws-sdk-go-v2 for sqs in region.
func signedIn(t testing.TB, rq request, key, secret, region string) *http.Request {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://localhost:4566/", strings.NewReader(rq.body))
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256([]byte(rq.body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret}, req,
		hex.EncodeToString(sum[:]), "sqs", region, signedAt); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestIdentify: the account and region each request is served in, with
// and without verification.
func TestIdentify(t *testing.T) {
	t.Parallel()
	var got RequestInfo
	probe := Define("Probe", func(ctx context.Context, _ *emptyOutput) (*emptyOutput, error) {
		got = *Info(ctx)
		return &emptyOutput{}, nil
	})
	for _, tt := range []struct {
		name          string
		verify        bool
		key, secret   string // "" sends no signature
		signedIn      string // the region signed for; us-east-1 if ""
		status        int
		account       string
		region        string // us-east-1 if ""
		verified      bool
		queryErrorFor string
	}{
		{name: "off, unsigned", status: 200, account: "000000000000"},
		{name: "off, any key", key: "AKIDANY", secret: "x", status: 200, account: "000000000000"},
		{name: "off, 12 digits", key: "123456789012", secret: "x", status: 200, account: "123456789012"},
		{name: "off, 11 digits", key: "12345678901", secret: "x", status: 200, account: "000000000000"},
		{name: "off, a key of the file, wrong secret", key: "AKIABENCH", secret: "x", status: 200, account: "444455556666"},
		{name: "verify", verify: true, key: "AKIABENCH", secret: "bench/secret", status: 200, account: "444455556666", verified: true},
		{name: "verify, 12 digits unknown", verify: true, key: "123456789012", secret: "x", status: 403, queryErrorFor: "InvalidClientTokenId;Sender"},
		{name: "verify, wrong secret", verify: true, key: "AKIABENCH", secret: "x", status: 403, queryErrorFor: "SignatureDoesNotMatch;Sender"},
		{name: "verify, unsigned", verify: true, status: 403, queryErrorFor: "MissingAuthenticationToken;Sender"},
		{name: "off, another region", key: "AKIDANY", secret: "x", signedIn: "eu-west-1", status: 200, account: "000000000000", region: "eu-west-1"},
		{name: "off, no region", key: "AKIDANY", secret: "x", signedIn: "elasticmq", status: 200, account: "000000000000"},
		{name: "verify, another region", verify: true, key: "AKIABENCH", secret: "bench/secret", signedIn: "ap-southeast-2", status: 200,
			account: "444455556666", region: "ap-southeast-2", verified: true},
		{name: "verify, no region", verify: true, key: "AKIABENCH", secret: "bench/secret", signedIn: "local", status: 403,
			queryErrorFor: "SignatureDoesNotMatch;Sender"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _ := newTestHandler(t, probe)
			h.Auth = testAuth(t, tt.verify)
			rq := jsonReq("Probe", "{}")
			var req *http.Request
			signed, wantRegion := tt.signedIn, tt.region
			if signed == "" {
				signed = "us-east-1"
			}
			if wantRegion == "" {
				wantRegion = "us-east-1"
			}
			if tt.key != "" {
				req = signedIn(t, rq, tt.key, tt.secret, signed)
			} else {
				req = httptest.NewRequest(http.MethodPost, "http://localhost:4566/", strings.NewReader(rq.body))
				for k, v := range rq.header {
					req.Header.Set(k, v)
				}
			}
			got = RequestInfo{}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.status == 200 && (got.Account != tt.account || got.Region != wantRegion || got.Verified != tt.verified) {
				t.Errorf("served in %q %q (verified %v), want %q %q (%v)", got.Account, got.Region, got.Verified, tt.account, wantRegion, tt.verified)
			}
			if q := w.Header().Get("X-Amzn-Query-Error"); q != tt.queryErrorFor {
				t.Errorf("x-amzn-query-error %q, want %q", q, tt.queryErrorFor)
			}
		})
	}
}

// BenchmarkAuth is the handler's cost per request with signatures
// verified against the same requests served with auth off, in one run:
// the ratio is verification's cost. The actions do nothing, so the
// figure is verification against the wire's work alone.
func BenchmarkAuth(b *testing.B) {
	body := strings.Repeat("x", 256)
	for _, rq := range []struct {
		name string
		req  request
	}{
		{"json/SendMessageBatch", jsonReq("SendMessageBatch", `{"QueueUrl":"http://localhost:4566/000000000000/bench","Entries":[{"Id":"1","MessageBody":"`+body+`"}]}`)},
		{"json/ReceiveMessage", jsonReq("ReceiveMessage", `{"QueueUrl":"http://localhost:4566/000000000000/bench","MaxNumberOfMessages":10,"WaitTimeSeconds":1}`)},
		{"query/SendMessageBatch", formReq("Action=SendMessageBatch&Version=2012-11-05&QueueUrl=http%3A%2F%2Flocalhost%3A4566%2F000000000000%2Fbench" +
			"&SendMessageBatchRequestEntry.1.Id=1&SendMessageBatchRequestEntry.1.MessageBody=" + body)},
	} {
		for _, mode := range []string{"off", "verify"} {
			b.Run(rq.name+"/auth="+mode, func(b *testing.B) {
				h, _, _ := newTestHandler(b)
				h.Auth = testAuth(b, mode == "verify")
				benchServe(b, h, signedRequest(b, rq.req, "AKIABENCH", "bench/secret"), []byte(rq.req.body))
			})
		}
	}
}
