package sigv4

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
)

const (
	testKey     = "AKIAFERRYTEST"
	testSecret  = "ferry/secret+key"
	testAccount = "111122223333"
	testURL     = "http://127.0.0.1:4566/"
	testForm    = "Action=ListQueues&Version=2012-11-05"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func testVerifier(t *testing.T) *Verifier {
	t.Helper()
	keys, err := ParseCredentials(strings.NewReader("[ferry]\naws_access_key_id = "+testKey+
		"\naws_secret_access_key = "+testSecret+"\naws_account_id = "+testAccount+"\n"), "000000000000")
	if err != nil {
		t.Fatal(err)
	}
	return &Verifier{Keys: keys, Regions: region.Valid, Clock: clock.NewFake(now)}
}

// signing describes how aws-sdk-go-v2's signer signs a request.
type signing struct {
	key, secret, region, service string
	at                           time.Time
	presign                      bool
	payloadHash                  string // "" the body's
	contentSHA                   string // x-amz-content-sha256 header sent
}

func defaultSigning() signing {
	return signing{key: testKey, secret: testSecret, region: "us-east-1", service: "sqs", at: now}
}

// sdkRequest signs a request with the SDK and returns it as net/http's
// server hands it over.
func sdkRequest(t *testing.T, s signing, method, target, body string) *http.Request {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	cr, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		cr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		cr.ContentLength = int64(rd.Len())
	}
	if s.contentSHA != "" {
		cr.Header.Set("X-Amz-Content-Sha256", s.contentSHA)
	}
	hash := s.payloadHash
	if hash == "" {
		sum := sha256.Sum256([]byte(body))
		hash = hex.EncodeToString(sum[:])
	}
	creds := aws.Credentials{AccessKeyID: s.key, SecretAccessKey: s.secret}
	signer := v4.NewSigner()
	if s.presign {
		signed, hdr, err := signer.PresignHTTP(context.Background(), creds, cr, hash, s.service, s.region, s.at)
		if err != nil {
			t.Fatal(err)
		}
		sr := httptest.NewRequest(method, signed, strings.NewReader(body))
		for k, vs := range hdr {
			sr.Header[k] = vs
		}
		return sr
	}
	if err := signer.SignHTTP(context.Background(), creds, cr, hash, s.service, s.region, s.at); err != nil {
		t.Fatal(err)
	}
	sr := httptest.NewRequest(method, cr.URL.String(), strings.NewReader(body))
	sr.Header = cr.Header.Clone()
	if body != "" {
		sr.Header.Set("Content-Length", "36")
	}
	return sr
}

func TestVerify(t *testing.T) {
	t.Parallel()
	v := testVerifier(t)
	with := func(f func(*signing)) signing {
		s := defaultSigning()
		f(&s)
		return s
	}
	type tc struct {
		name    string
		req     func(t *testing.T) *http.Request
		body    string
		service string
		code    string // "" accepted
		message string // a part of the message
	}
	post := func(s signing) func(t *testing.T) *http.Request {
		return func(t *testing.T) *http.Request { return sdkRequest(t, s, http.MethodPost, testURL, testForm) }
	}
	get := func(s signing, target string) func(t *testing.T) *http.Request {
		return func(t *testing.T) *http.Request { return sdkRequest(t, s, http.MethodGet, target, "") }
	}
	header := func(auth string) func(t *testing.T) *http.Request {
		return func(t *testing.T) *http.Request {
			r := httptest.NewRequest(http.MethodPost, testURL, strings.NewReader(testForm))
			r.Header.Set("X-Amz-Date", now.Format(timeFormat))
			r.Header.Set("Authorization", auth)
			return r
		}
	}
	query := testURL + "?Action=ListQueues&Version=2012-11-05&QueueNamePrefix=a%20b"
	for _, c := range []tc{
		{name: "header", req: post(defaultSigning()), body: testForm, service: "sqs"},
		{name: "scope's service when none is expected", req: post(defaultSigning()), body: testForm},
		{name: "presigned", req: get(with(func(s *signing) { s.presign = true }), query), service: "sqs"},
		{name: "presigned unsigned payload", req: get(with(func(s *signing) { s.presign = true; s.payloadHash = UnsignedPayload }), query), service: "sqs"},
		{name: "unsigned payload header", req: post(with(func(s *signing) { s.payloadHash, s.contentSHA = UnsignedPayload, UnsignedPayload })),
			body: testForm, service: "sqs"},
		{name: "content hash header", req: post(with(func(s *signing) {
			sum := sha256.Sum256([]byte(testForm))
			s.contentSHA = hex.EncodeToString(sum[:])
		})), body: testForm, service: "sqs"},
		{name: "content hash of another body", req: post(with(func(s *signing) {
			sum := sha256.Sum256([]byte("Action=DeleteQueue"))
			s.contentSHA, s.payloadHash = hex.EncodeToString(sum[:]), hex.EncodeToString(sum[:])
		})), body: testForm, service: "sqs", code: CodeSignatureDoesNotMatch, message: "The request signature we calculated"},
		{name: "streaming payload", req: post(with(func(s *signing) {
			s.payloadHash, s.contentSHA = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
		})), body: testForm, service: "sqs", code: CodeIncompleteSignature, message: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD is not supported"},
		{name: "other body than signed", req: post(defaultSigning()), body: testForm + "&QueueNamePrefix=x", service: "sqs",
			code: CodeSignatureDoesNotMatch},
		{name: "no signature", req: func(t *testing.T) *http.Request { return httptest.NewRequest(http.MethodPost, testURL, nil) },
			code: CodeMissingAuthenticationToken, message: "Request is missing Authentication Token"},
		{name: "wrong secret", req: post(with(func(s *signing) { s.secret = "other" })), body: testForm, service: "sqs",
			code: CodeSignatureDoesNotMatch, message: msgMismatch},
		{name: "unknown key", req: post(with(func(s *signing) { s.key = "AKIAUNKNOWN" })), body: testForm, service: "sqs",
			code: CodeInvalidClientTokenID, message: msgUnknown},
		{name: "wrong region", req: post(with(func(s *signing) { s.region = "moon-base" })), body: testForm, service: "sqs",
			code: CodeSignatureDoesNotMatch, message: "Credential should be scoped to a valid region, not 'moon-base'."},
		{name: "wrong service", req: post(with(func(s *signing) { s.service = "sns" })), body: testForm, service: "sqs",
			code: CodeSignatureDoesNotMatch, message: "Credential should be scoped to correct service: 'sqs'."},
		{name: "wrong region and service", req: post(with(func(s *signing) { s.service, s.region = "sns", "moon-base" })), body: testForm, service: "sqs",
			code: CodeSignatureDoesNotMatch, message: "Credential should be scoped to a valid region, not 'moon-base'. Credential should be scoped to correct service: 'sqs'."},
		{name: "14 minutes slow", req: post(with(func(s *signing) { s.at = now.Add(-14 * time.Minute) })), body: testForm, service: "sqs"},
		{name: "14 minutes fast", req: post(with(func(s *signing) { s.at = now.Add(14 * time.Minute) })), body: testForm, service: "sqs"},
		{name: "16 minutes slow", req: post(with(func(s *signing) { s.at = now.Add(-16 * time.Minute) })), body: testForm, service: "sqs",
			code: CodeSignatureDoesNotMatch, message: "Signature expired: 20260304T045007Z is now earlier than 20260304T045107Z (20260304T050607Z - 15 min.)"},
		{name: "16 minutes fast", req: post(with(func(s *signing) { s.at = now.Add(16 * time.Minute) })), body: testForm, service: "sqs",
			code: CodeSignatureDoesNotMatch, message: "Signature not yet current: 20260304T052207Z is still later than 20260304T052107Z (20260304T050607Z + 15 min.)"},
		{name: "presigned past its expiry", req: func(t *testing.T) *http.Request {
			return get(with(func(s *signing) { s.presign = true; s.at = now.Add(-2 * time.Hour) }), query+"&X-Amz-Expires=900")(t)
		}, service: "sqs", code: CodeSignatureDoesNotMatch,
			message: "Signature expired: 20260304T030607Z is now earlier than 20260304T045107Z (20260304T050607Z - 900 sec.)"},
		{name: "presigned within its expiry", req: get(with(func(s *signing) { s.presign = true; s.at = now.Add(-14 * time.Minute) }),
			query+"&X-Amz-Expires=900"), service: "sqs"},
		{name: "presigned for over a week", req: get(with(func(s *signing) { s.presign = true }), query+"&X-Amz-Expires=604801"),
			service: "sqs", code: CodeIncompleteSignature, message: "X-Amz-Expires must be less than a week"},
		{name: "host not signed", req: header("AWS4-HMAC-SHA256 Credential=" + testKey + "/20260304/us-east-1/sqs/aws4_request, SignedHeaders=x-amz-date, Signature=00"),
			body: testForm, service: "sqs", code: CodeIncompleteSignature, message: "'Host' or ':authority' must be a 'SignedHeader'"},
		{name: "scope of four parts", req: header("AWS4-HMAC-SHA256 Credential=" + testKey + "/20260304/sqs/aws4_request, SignedHeaders=host, Signature=00"),
			body: testForm, code: CodeIncompleteSignature, message: "Credential must have exactly 5 slash-delimited elements"},
		{name: "no signature part", req: header("AWS4-HMAC-SHA256 Credential=" + testKey + "/20260304/us-east-1/sqs/aws4_request, SignedHeaders=host"),
			body: testForm, code: CodeIncompleteSignature, message: "Authorization header requires 'Signature' parameter."},
		{name: "SigV4a", req: header("AWS4-ECDSA-P256-SHA256 Credential=" + testKey + "/20260304/sqs/aws4_request, SignedHeaders=host, Signature=00"),
			body: testForm, code: CodeIncompleteSignature, message: "Unsupported AWS 'algorithm': 'AWS4-ECDSA-P256-SHA256'."},
		{name: "scope of another day", req: header("AWS4-HMAC-SHA256 Credential=" + testKey + "/20260303/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"),
			body: testForm, service: "sqs", code: CodeSignatureDoesNotMatch,
			message: "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '20260303' != '20260304', from '20260304T050607Z'."},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := v.Verify(c.req(t), []byte(c.body), c.service)
			switch {
			case c.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.code == "":
				if id != (Identity{AccessKey: testKey, Account: testAccount}) {
					t.Errorf("identity %+v", id)
				}
			case err == nil:
				t.Fatalf("accepted, want %s", c.code)
			case err.Code != c.code || !strings.Contains(err.Message, c.message):
				t.Errorf("got %s %q, want %s with %q", err.Code, err.Message, c.code, c.message)
			}
			if err != nil {
				want := map[string]int{CodeIncompleteSignature: 400}[err.Code]
				if want == 0 {
					want = 403
				}
				if err.Status != want {
					t.Errorf("status %d, want %d", err.Status, want)
				}
			}
		})
	}
}

func TestScopeParsing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		header, key, region, service string
	}{
		{"AWS4-HMAC-SHA256 Credential=AKIDSQS/20250101/eu-west-1/sqs/aws4_request, SignedHeaders=host, Signature=00", "AKIDSQS", "eu-west-1", "sqs"},
		{"AWS4-HMAC-SHA256 Credential=AKIDSNS/20250101/us-east-2/sns/aws4_request,SignedHeaders=host,Signature=00", "AKIDSNS", "us-east-2", "sns"},
		{"AWS4-ECDSA-P256-SHA256 Credential=AKIDA/20250101/sqs/aws4_request, SignedHeaders=host", "AKIDA", "", "sqs"},
		{"AWS4-HMAC-SHA256 Credential=", "", "", ""},
		{"Bearer token", "", "", ""},
		{"AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/sqs/aws4_request/x", "", "", ""},
		{"AWS4-HMAC-SHA256 Credential=AKID/20250101/sqs", "", "", ""},
	} {
		s, _ := HeaderScope(tt.header)
		if s.AccessKey != tt.key || s.Region != tt.region || s.Service != tt.service {
			t.Errorf("HeaderScope(%q) = %+v", tt.header, s)
		}
	}
}

func TestParseAuthorization(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		header, signed, sig, code string
	}{
		{"AWS4-HMAC-SHA256 Credential=K/20250101/r/s/aws4_request, SignedHeaders=host;x-amz-date, Signature=ab", "host;x-amz-date", "ab", ""},
		{"AWS4-HMAC-SHA256 Credential=K/20250101/r/s/aws4_request,SignedHeaders=host,Signature=ab", "host", "ab", ""},
		{"AWS4-HMAC-SHA256 Signature=ab, SignedHeaders=host, Credential=K/20250101/r/s/aws4_request", "host", "ab", ""},
		{"AWS4-HMAC-SHA256 Credential=K/20250101/r/s/aws4_request, SignedHeaders=host", "", "", CodeIncompleteSignature},
		{"AWS4-HMAC-SHA256 Credential=K/20250101/r/s/aws4_request, SignedHeaders, Signature=ab", "", "", CodeIncompleteSignature},
		{"AWS4-HMAC-SHA256", "", "", CodeIncompleteSignature},
		{"AWS AKID:c2lnbmF0dXJl", "", "", CodeIncompleteSignature},
		{"", "", "", CodeIncompleteSignature},
	} {
		a, err := ParseAuthorization(tt.header)
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%q: %v", tt.header, err)
		case tt.code != "" && (err == nil || err.Code != tt.code):
			t.Errorf("%q: %v, want %s", tt.header, err, tt.code)
		case tt.code == "" && (a.SignedHeaders != tt.signed || a.Signature != tt.sig || a.Scope.AccessKey != "K"):
			t.Errorf("%q: %+v", tt.header, a)
		}
	}
}

// FuzzParseAuthorization: any header parses or is refused as
// IncompleteSignature, never panics, and what parses has a five-part
// scope that names a key.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123",
		"AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/sqs/aws4_request,SignedHeaders=host,Signature=0",
		"AWS4-HMAC-SHA256 Credential=/////, SignedHeaders=, Signature=",
		"AWS4-ECDSA-P256-SHA256 Credential=AKID/20250101/sqs/aws4_request",
		"AWS4-HMAC-SHA256 ,,,=,==,Credential==",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		a, err := ParseAuthorization(h)
		if err != nil {
			if err.Code != CodeIncompleteSignature || err.Status != http.StatusBadRequest {
				t.Fatalf("%q: %v", h, err)
			}
			return
		}
		if a.Scope.AccessKey == "" || strings.Count(a.Scope.AccessKey+a.Scope.Date+a.Scope.Region+a.Scope.Service+a.Scope.Terminator, "/") != 0 {
			t.Fatalf("%q parsed to %+v", h, a)
		}
	})
}

func TestParseCredentials(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file string
		want       map[string]string // key → account
		err        string
	}{
		{name: "sections", file: `
# Ferry's callers
[default]
aws_access_key_id = AKIA1
aws_secret_access_key = s1
aws_account_id = 111111111111

[profile other]
aws_access_key_id=AKIA2
aws_secret_access_key=s2
aws_session_token = ignored
region = eu-west-1
; no account: the default
[roles]
role_arn = arn:aws:iam::123456789012:role/x
`, want: map[string]string{"AKIA1": "111111111111", "AKIA2": "000000000000"}},
		{name: "key without secret", file: "[a]\naws_access_key_id = K\n", err: "has aws_access_key_id but no aws_secret_access_key"},
		{name: "secret without key", file: "[a]\naws_secret_access_key = S\n", err: "has aws_secret_access_key but no aws_access_key_id"},
		{name: "bad account", file: "[a]\naws_access_key_id = K\naws_secret_access_key = S\naws_account_id = 12\n", err: `aws_account_id "12" is not 12 digits`},
		{name: "key twice", file: "[a]\naws_access_key_id = K\naws_secret_access_key = S\n[b]\naws_access_key_id = K\naws_secret_access_key = T\n", err: "named twice"},
		{name: "empty", file: "# nothing\n", err: "no section has"},
		{name: "before a section", file: "aws_access_key_id = K\n", err: "comes before any [section]"},
		{name: "not a pair", file: "[a]\njunk\n", err: "want name = value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCredentials(strings.NewReader(tt.file), "000000000000")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Len() != len(tt.want) {
				t.Errorf("%d keys, want %d", c.Len(), len(tt.want))
			}
			for k, acct := range tt.want {
				if id, ok := c.Lookup(k); !ok || id.Account != acct {
					t.Errorf("Lookup(%s) = %+v, %v; want account %s", k, id, ok, acct)
				}
			}
		})
	}
}
