package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

// MaxSkew is how far a signed request's time may be from the server's,
// either way, as AWS allows.
const MaxSkew = 15 * time.Minute

// maxExpires is the longest X-Amz-Expires a presigned request may carry:
// seven days, as AWS allows.
const maxExpires = 7 * 24 * time.Hour

// timeFormat is SigV4's ISO 8601 basic format (X-Amz-Date).
const timeFormat = "20060102T150405Z"

// emptyHash is the SHA-256 of an empty payload.
const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Verifier checks SigV4 signatures against the secrets of Keys.
type Verifier struct {
	Keys *Credentials
	// Regions tells the regions a request may be signed for; nil takes
	// any.
	Regions func(name string) bool
	Clock   clock.Clock // clock.Real when nil

	bufs sync.Pool
}

// Signed reports whether r carries SigV4 authentication of either form:
// an Authorization header, or the presigned query parameters.
func Signed(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || presigned(r.URL.RawQuery)
}

func presigned(rawQuery string) bool {
	return strings.Contains(rawQuery, "X-Amz-Algorithm=") || strings.Contains(rawQuery, "X-Amz-Signature=")
}

// signed is what a request says of its signature, in either form.
type signed struct {
	scope         Scope
	signedHeaders string
	signature     string
	amzDate       string // the time as signed (X-Amz-Date, or Date made ISO 8601)
	at            time.Time
	presigned     bool
	expires       time.Duration
	payloadHash   string // the hash the client says it signed; "" to compute
}

// Verify checks r's signature. body is r's whole body (read by the
// caller); service is the signing name the answering service expects
// ("sqs", "sns", "monitoring"), or "" to take the scope's. The checks
// come in AWS's order: the form of the signature, the credential scope,
// the time, the access key, then the signature itself.
func (v *Verifier) Verify(r *http.Request, body []byte, service string) (Identity, *Error) {
	var s signed
	var err *Error
	if h := r.Header.Get("Authorization"); h != "" {
		s, err = fromHeader(r, h)
	} else if presigned(r.URL.RawQuery) {
		s, err = fromQuery(r)
	} else {
		return Identity{}, missing()
	}
	if err != nil {
		return Identity{}, err
	}
	if err := v.checkScope(&s, service); err != nil {
		return Identity{}, err
	}
	if err := v.checkTime(&s); err != nil {
		return Identity{}, err
	}
	var k *key
	if v.Keys != nil {
		k = v.Keys.keys[s.scope.AccessKey]
	}
	if k == nil {
		return Identity{}, unknownKey()
	}
	if !signsHost(s.signedHeaders) {
		return Identity{}, incomplete("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
	}
	var hashes [2]string
	candidates := hashes[:0]
	switch {
	case strings.HasPrefix(s.payloadHash, "STREAMING-"):
		// The chunked (aws-chunked) payloads are S3's: no SDK sends them to
		// SQS, SNS or CloudWatch, whose operations have no streaming input.
		return Identity{}, incomplete("The payload signing method " + s.payloadHash + " is not supported by this service.")
	case s.payloadHash == UnsignedPayload:
		candidates = append(candidates, UnsignedPayload)
	case s.payloadHash != "":
		if !strings.EqualFold(s.payloadHash, bodyHash(body)) {
			return Identity{}, mismatch("")
		}
		candidates = append(candidates, s.payloadHash)
	default:
		candidates = append(candidates, bodyHash(body))
		// A presigned URL need not say how its payload was signed: the SDKs
		// presign with the body's hash or with UNSIGNED-PAYLOAD.
		if s.presigned {
			candidates = append(candidates, UnsignedPayload)
		}
	}
	sk := k.signingKey(s.scope)
	for _, h := range candidates {
		if hmac.Equal([]byte(v.signature(r, &s, sk, h)), []byte(strings.ToLower(s.signature))) {
			return k.Identity, nil
		}
	}
	return Identity{}, mismatch("")
}

// fromHeader reads the Authorization header form.
func fromHeader(r *http.Request, h string) (signed, *Error) {
	a, err := ParseAuthorization(h)
	if err != nil {
		return signed{}, err
	}
	s := signed{scope: a.Scope, signedHeaders: a.SignedHeaders, signature: a.Signature,
		payloadHash: strings.TrimSpace(r.Header.Get("X-Amz-Content-Sha256"))}
	if d := r.Header.Get("X-Amz-Date"); d != "" {
		t, perr := time.Parse(timeFormat, d)
		if perr != nil {
			return signed{}, incomplete("Date must be in ISO-8601 'basic format'. Got '" + d + "'. See http://en.wikipedia.org/wiki/ISO_8601")
		}
		s.at, s.amzDate = t, d
	} else if d := r.Header.Get("Date"); d != "" {
		t, perr := http.ParseTime(d)
		if perr != nil {
			return signed{}, incomplete("Date must be in ISO-8601 'basic format'. Got '" + d + "'. See http://en.wikipedia.org/wiki/ISO_8601")
		}
		s.at = t.UTC()
		s.amzDate = s.at.Format(timeFormat)
	} else {
		return signed{}, incomplete("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	return s, nil
}

// fromQuery reads the presigned form (X-Amz-Algorithm, X-Amz-Credential,
// X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature).
func fromQuery(r *http.Request) (signed, *Error) {
	q, perr := url.ParseQuery(r.URL.RawQuery)
	if perr != nil {
		return signed{}, incomplete("Re-examine the query-string parameters.")
	}
	if alg := q.Get("X-Amz-Algorithm"); alg != Algorithm {
		return signed{}, incomplete("Unsupported AWS 'algorithm': '" + alg + "'.")
	}
	var msgs []string
	for _, p := range []string{"X-Amz-Credential", "X-Amz-Signature", "X-Amz-SignedHeaders", "X-Amz-Date"} {
		if q.Get(p) == "" {
			msgs = append(msgs, "AWS query-string parameters must include '"+p+"'.")
		}
	}
	if len(msgs) > 0 {
		return signed{}, incomplete(strings.Join(append(msgs, "Re-examine the query-string parameters."), " "))
	}
	scope, err := parseFullScope(q.Get("X-Amz-Credential"))
	if err != nil {
		return signed{}, err
	}
	d := q.Get("X-Amz-Date")
	t, perr := time.Parse(timeFormat, d)
	if perr != nil {
		return signed{}, incomplete("Date must be in ISO-8601 'basic format'. Got '" + d + "'. See http://en.wikipedia.org/wiki/ISO_8601")
	}
	s := signed{scope: scope, signedHeaders: q.Get("X-Amz-SignedHeaders"), signature: q.Get("X-Amz-Signature"),
		amzDate: d, at: t, presigned: true, payloadHash: q.Get("X-Amz-Content-Sha256"), expires: maxExpires}
	if e := q.Get("X-Amz-Expires"); e != "" {
		n, perr := strconv.ParseInt(e, 10, 64)
		if perr != nil || n < 0 {
			return signed{}, incomplete("X-Amz-Expires should be a number")
		}
		if time.Duration(n)*time.Second > maxExpires {
			return signed{}, incomplete("X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds")
		}
		s.expires = time.Duration(n) * time.Second
	}
	return s, nil
}

// checkScope compares the credential scope with the request: AWS names
// every part that is wrong, in one SignatureDoesNotMatch.
func (v *Verifier) checkScope(s *signed, service string) *Error {
	var msgs []string
	if v.Regions != nil && !v.Regions(s.scope.Region) {
		msgs = append(msgs, "Credential should be scoped to a valid region, not '"+s.scope.Region+"'.")
	}
	if service != "" && s.scope.Service != service {
		msgs = append(msgs, "Credential should be scoped to correct service: '"+service+"'.")
	}
	if s.scope.Terminator != terminator {
		msgs = append(msgs, "Credential should be scoped with a valid terminator: 'aws4_request', not '"+s.scope.Terminator+"'.")
	}
	if day := s.amzDate[:8]; s.scope.Date != day {
		msgs = append(msgs, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '"+
			s.scope.Date+"' != '"+day+"', from '"+s.amzDate+"'.")
	}
	if len(msgs) > 0 {
		return mismatch(strings.Join(msgs, " "))
	}
	return nil
}

// checkTime refuses a request signed more than MaxSkew away from now, or
// a presigned one past its X-Amz-Expires, in AWS's words.
func (v *Verifier) checkTime(s *signed) *Error {
	var now time.Time
	if v.Clock != nil {
		now = v.Clock.Now().UTC()
	} else {
		now = time.Now().UTC()
	}
	f := func(t time.Time) string { return t.Format(timeFormat) }
	switch {
	case s.at.After(now.Add(MaxSkew)):
		return mismatch("Signature not yet current: " + s.amzDate + " is still later than " + f(now.Add(MaxSkew)) +
			" (" + f(now) + " + 15 min.)")
	case s.presigned && now.After(s.at.Add(s.expires)):
		return mismatch("Signature expired: " + s.amzDate + " is now earlier than " + f(now.Add(-s.expires)) +
			" (" + f(now) + " - " + strconv.FormatInt(int64(s.expires/time.Second), 10) + " sec.)")
	case !s.presigned && s.at.Before(now.Add(-MaxSkew)):
		return mismatch("Signature expired: " + s.amzDate + " is now earlier than " + f(now.Add(-MaxSkew)) +
			" (" + f(now) + " - 15 min.)")
	}
	return nil
}

// signsHost reports whether the signed headers include host.
func signsHost(signedHeaders string) bool {
	for h := range strings.SplitSeq(signedHeaders, ";") {
		if h == "host" || h == ":authority" {
			return true
		}
	}
	return false
}

// signature is the lowercase hex signature of r under the signing key sk
// with the payload hash given.
func (v *Verifier) signature(r *http.Request, s *signed, sk []byte, payloadHash string) string {
	bp, _ := v.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := appendStringToSign((*bp)[:0], r, s, payloadHash)
	mac := hmac.New(sha256.New, sk)
	mac.Write(b)
	sig := hex.EncodeToString(mac.Sum(nil))
	*bp = b
	v.bufs.Put(bp)
	return sig
}

// appendStringToSign appends the string to sign, using b's storage for
// the canonical request on the way:
//
//	AWS4-HMAC-SHA256 \n X-Amz-Date \n scope \n hex(SHA-256(canonical request))
func appendStringToSign(b []byte, r *http.Request, s *signed, payloadHash string) []byte {
	start := len(b)
	b = appendCanonical(b, r, s.signedHeaders, s.presigned, payloadHash)
	creq := sha256.Sum256(b[start:])
	b = append(b[:start], Algorithm...)
	b = append(b, '\n')
	b = append(b, s.amzDate...)
	b = append(b, '\n')
	b = appendScope(b, s.scope)
	b = append(b, '\n')
	return hex.AppendEncode(b, creq[:])
}

func appendScope(b []byte, s Scope) []byte {
	b = append(b, s.Date...)
	b = append(b, '/')
	b = append(b, s.Region...)
	b = append(b, '/')
	b = append(b, s.Service...)
	b = append(b, '/')
	return append(b, s.Terminator...)
}

// signingKey derives (or recalls) the key for a scope:
// HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request").
func (k *key) signingKey(s Scope) []byte {
	scope := s.Date + "/" + s.Region + "/" + s.Service
	if d := k.derived.Load(); d != nil && d.scope == scope {
		return d.key
	}
	sk := DeriveKey(k.secret, s.Date, s.Region, s.Service)
	k.derived.Store(&signingKey{scope: scope, key: sk})
	return sk
}

// DeriveKey is SigV4's signing key of a secret for a date (yyyymmdd),
// region and service.
func DeriveKey(secret, date, region, service string) []byte {
	h := func(key []byte, data string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(data))
		return m.Sum(nil)
	}
	return h(h(h(h([]byte("AWS4"+secret), date), region), service), terminator)
}

// bodyHash is the lowercase hex SHA-256 of body.
func bodyHash(body []byte) string {
	if len(body) == 0 {
		return emptyHash
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
