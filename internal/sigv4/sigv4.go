// Package sigv4 verifies AWS Signature Version 4 on the server's side:
// the Authorization header form and the presigned query form, with the
// payload hashed, given in x-amz-content-sha256, or UNSIGNED-PAYLOAD. It
// reads the shared-credentials file that says which secret and account
// each access key has. Its errors carry AWS's query codes, statuses and
// messages; the protocol layer renders them on each wire.
package sigv4

import (
	"net/http"
	"strings"
)

// Algorithm is the only signing algorithm verified; SigV4a
// (AWS4-ECDSA-P256-SHA256) is refused.
const Algorithm = "AWS4-HMAC-SHA256"

// UnsignedPayload is the payload hash of a request whose body is not
// signed.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// terminator ends every credential scope.
const terminator = "aws4_request"

// Error is a refusal as AWS words it: the query code (also the code in
// x-amzn-query-error), the HTTP status and the message.
type Error struct {
	Code    string
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// The codes AWS's query services (SQS, SNS, CloudWatch) answer
// authentication failures with.
const (
	CodeMissingAuthenticationToken = "MissingAuthenticationToken"
	CodeIncompleteSignature        = "IncompleteSignature"
	CodeInvalidClientTokenID       = "InvalidClientTokenId"
	CodeSignatureDoesNotMatch      = "SignatureDoesNotMatch"
)

// Messages AWS answers with; see the package's errors for the rest.
const (
	msgMissing  = "Request is missing Authentication Token"
	msgUnknown  = "The security token included in the request is invalid."
	msgMismatch = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

func missing() *Error {
	return &Error{Code: CodeMissingAuthenticationToken, Status: http.StatusForbidden, Message: msgMissing}
}

func incomplete(msg string) *Error {
	return &Error{Code: CodeIncompleteSignature, Status: http.StatusBadRequest, Message: msg}
}

func unknownKey() *Error {
	return &Error{Code: CodeInvalidClientTokenID, Status: http.StatusForbidden, Message: msgUnknown}
}

func mismatch(msg string) *Error {
	if msg == "" {
		msg = msgMismatch
	}
	return &Error{Code: CodeSignatureDoesNotMatch, Status: http.StatusForbidden, Message: msg}
}

// Scope is a credential scope: AKID/yyyymmdd/region/service/aws4_request.
// SigV4a scopes have no region (AKID/yyyymmdd/service/aws4_request).
type Scope struct {
	AccessKey, Date, Region, Service, Terminator string
}

// ParseScope splits a credential scope without allocating; ok is false
// when it has neither four nor five parts or no access key.
func ParseScope(s string) (Scope, bool) {
	n := strings.Count(s, "/") + 1
	if n != 4 && n != 5 {
		return Scope{}, false
	}
	var parts [5]string
	for i := range n - 1 {
		parts[i], s, _ = strings.Cut(s, "/")
	}
	parts[n-1] = s
	if n == 5 {
		return Scope{AccessKey: parts[0], Date: parts[1], Region: parts[2], Service: parts[3], Terminator: parts[4]}, parts[0] != ""
	}
	return Scope{AccessKey: parts[0], Date: parts[1], Service: parts[2], Terminator: parts[3]}, parts[0] != ""
}

// HeaderScope reads the Credential= part of an Authorization header of
// any SigV4 algorithm, without checking the rest: what a server that
// does not verify signatures learns of the caller.
func HeaderScope(h string) (Scope, bool) {
	_, rest, ok := strings.Cut(h, "Credential=")
	if !ok {
		return Scope{}, false
	}
	if i := strings.IndexAny(rest, ", "); i >= 0 {
		rest = rest[:i]
	}
	return ParseScope(rest)
}

// Authorization is a parsed Authorization header (AWS4-HMAC-SHA256
// Credential=..., SignedHeaders=..., Signature=...).
type Authorization struct {
	Scope         Scope
	SignedHeaders string // as sent: lowercase names joined by ';'
	Signature     string // lowercase hex
}

// ParseAuthorization parses an Authorization header of the SigV4 form.
// Its parts are separated by commas, with or without spaces, in any
// order; a part named twice keeps the last.
func ParseAuthorization(h string) (Authorization, *Error) {
	alg, rest, _ := strings.Cut(strings.TrimLeft(h, " "), " ")
	if alg != Algorithm {
		if i := strings.IndexByte(alg, ','); i >= 0 {
			alg = alg[:i]
		}
		return Authorization{}, incomplete("Unsupported AWS 'algorithm': '" + alg + "'.")
	}
	var a Authorization
	var cred string
	var haveCred, haveSigned, haveSig bool
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return Authorization{}, incomplete("Authorization header requires each component to be of the form name=value; '" + part + "' is not.")
		}
		switch name {
		case "Credential":
			cred, haveCred = value, true
		case "SignedHeaders":
			a.SignedHeaders, haveSigned = value, true
		case "Signature":
			a.Signature, haveSig = value, true
		}
	}
	var msgs []string
	if !haveCred {
		msgs = append(msgs, "Authorization header requires 'Credential' parameter.")
	}
	if !haveSig {
		msgs = append(msgs, "Authorization header requires 'Signature' parameter.")
	}
	if !haveSigned {
		msgs = append(msgs, "Authorization header requires 'SignedHeaders' parameter.")
	}
	if len(msgs) > 0 {
		return Authorization{}, incomplete(strings.Join(msgs, " "))
	}
	scope, err := parseFullScope(cred)
	if err != nil {
		return Authorization{}, err
	}
	a.Scope = scope
	return a, nil
}

// parseFullScope parses a SigV4 (five-part) credential scope.
func parseFullScope(cred string) (Scope, *Error) {
	s, ok := ParseScope(cred)
	if !ok || strings.Count(cred, "/") != 4 {
		return Scope{}, incomplete("Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '" + cred + "'")
	}
	return s, nil
}
