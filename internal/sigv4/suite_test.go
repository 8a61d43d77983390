package sigv4

import (
	"bufio"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/region"
)

// The AWS Signature Version 4 test suite (testdata/aws4_testsuite, see
// its NOTICE): for each case a raw request (.req), its canonical request
// (.creq), string to sign (.sts) and Authorization header (.authz), all
// signed with the key below for us-east-1/service on 2015-08-30.
const (
	suiteKey     = "AKIDEXAMPLE"
	suiteSecret  = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	suiteAccount = "123456789012"
	suiteRegion  = "us-east-1"
	suiteService = "service"
)

var suiteTime = time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)

// suiteSkipped are the cases no request through net/http can be: an
// obsolete folded header, which Go's server refuses.
var suiteSkipped = map[string]string{
	"get-header-value-multiline": "obs-fold header lines are refused by net/http",
}

// suiteToken is the session token of get-vanilla-with-session-token, which
// its .req leaves out (the suite's runners add it from the credentials)
// and its .creq shows.
const suiteToken = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"

type suiteCase struct {
	name                  string
	req, creq, sts, authz string
	skipped               string
}

func suiteCases(t *testing.T) []suiteCase {
	t.Helper()
	var cases []suiteCase
	root := filepath.Join("testdata", "aws4_testsuite")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".req") {
			return err
		}
		base := strings.TrimSuffix(path, ".req")
		read := func(ext string) string {
			b, err := os.ReadFile(base + ext)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		name := filepath.Base(base)
		cases = append(cases, suiteCase{name: name, req: read(".req"), creq: read(".creq"), sts: read(".sts"),
			authz: read(".authz"), skipped: suiteSkipped[name]})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 25 {
		t.Fatalf("found %d cases of the suite, want its 28", len(cases))
	}
	return cases
}

// parseSuiteRequest reads a .req file as net/http's server would hand
// the request over: the request target as sent, Host apart, the body.
func parseSuiteRequest(t *testing.T, raw string) (*http.Request, []byte) {
	t.Helper()
	head, body, _ := strings.Cut(raw, "\n\n")
	sc := bufio.NewScanner(strings.NewReader(head))
	sc.Scan()
	method, rest, _ := strings.Cut(sc.Text(), " ")
	target := rest[:strings.LastIndex(rest, " ")]
	path, query, _ := strings.Cut(target, "?")
	r := &http.Request{Method: method, RequestURI: target, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), ":")
		if strings.EqualFold(name, "Host") {
			r.Host = value
			continue
		}
		r.Header.Add(name, value)
	}
	return r, []byte(body)
}

// request is the case's request, with the token the suite adds.
func (c suiteCase) request(t *testing.T) (*http.Request, []byte) {
	r, body := parseSuiteRequest(t, c.req)
	if c.name == "get-vanilla-with-session-token" {
		r.Header.Set("X-Amz-Security-Token", suiteToken)
	}
	return r, body
}

func suiteVerifier() *Verifier {
	keys := &Credentials{keys: map[string]*key{
		suiteKey: {Identity: Identity{AccessKey: suiteKey, Account: suiteAccount}, secret: suiteSecret},
	}}
	return &Verifier{Keys: keys, Regions: region.Valid, Clock: clock.NewFake(suiteTime)}
}

func TestSuiteCanonicalRequest(t *testing.T) {
	for _, c := range suiteCases(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.skipped != "" {
				t.Skip(c.skipped)
			}
			r, body := c.request(t)
			a, err := ParseAuthorization(c.authz)
			if err != nil {
				t.Fatalf("parse %q: %v", c.authz, err)
			}
			got := string(appendCanonical(nil, r, a.SignedHeaders, false, bodyHash(body)))
			if got != c.creq {
				t.Errorf("canonical request\n got: %q\nwant: %q", got, c.creq)
			}
		})
	}
}

func TestSuiteVerify(t *testing.T) {
	v := suiteVerifier()
	for _, c := range suiteCases(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.skipped != "" {
				t.Skip(c.skipped)
			}
			r, body := c.request(t)
			r.Header.Set("Authorization", c.authz)
			id, err := v.Verify(r, body, suiteService)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if id.AccessKey != suiteKey || id.Account != suiteAccount {
				t.Errorf("identity %+v", id)
			}
			// The string to sign the suite gives ends in the canonical
			// request's hash: the same request, signed the same way.
			a, _ := ParseAuthorization(c.authz)
			s := signed{scope: a.Scope, signedHeaders: a.SignedHeaders, amzDate: suiteTime.Format(timeFormat)}
			if sig := v.signature(r, &s, DeriveKey(suiteSecret, "20150830", suiteRegion, suiteService), bodyHash(body)); sig != a.Signature {
				t.Errorf("signature %s, want %s", sig, a.Signature)
			}
			if sts := string(appendStringToSign(nil, r, &s, bodyHash(body))); sts != c.sts {
				t.Errorf("string to sign\n got: %q\nwant: %q", sts, c.sts)
			}

			// Each part the signature covers, changed, fails it.
			tampered := []func(*http.Request) []byte{
				func(r *http.Request) []byte { r.Method = "PUT"; return body },
				func(r *http.Request) []byte { r.Host = "example.amazonaws.com:8443"; return body },
				func(r *http.Request) []byte {
					r.RequestURI = "/changed" + r.RequestURI
					return body
				},
				func(r *http.Request) []byte { r.URL.RawQuery += "&Extra=1"; return body },
				func(*http.Request) []byte { return append([]byte("x"), body...) },
			}
			for i, change := range tampered {
				r, body := c.request(t)
				r.Header.Set("Authorization", c.authz)
				body = change(r)
				if _, err := v.Verify(r, body, suiteService); err == nil || err.Code != CodeSignatureDoesNotMatch {
					t.Errorf("change %d: %v, want SignatureDoesNotMatch", i, err)
				}
			}
		})
	}
}
