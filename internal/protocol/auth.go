package protocol

import (
	"net/http"

	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// Auth decides who sends each request and which account serves it: the
// one place of Ferry where a request's identity is decided. Its zero
// value serves every request unsigned, in the services' own account.
type Auth struct {
	// Verify requires a valid SigV4 signature on every request (but those
	// of an action marked Unsigned that carry none), checked by Verifier.
	Verify   bool
	Verifier *sigv4.Verifier
	// DefaultAccount serves a request whose key names no account.
	DefaultAccount string
	// DefaultRegion serves a request whose signature names no region (or,
	// unverified, names something that is not one).
	DefaultRegion string
}

// Errors of authentication: the query codes AWS answers with, and the
// JSON __type names AWS's JSON services give them.
var authTypes = map[string]string{
	sigv4.CodeMissingAuthenticationToken: "com.amazon.coral.service#MissingAuthenticationTokenException",
	sigv4.CodeIncompleteSignature:        "com.amazon.coral.service#IncompleteSignatureException",
	sigv4.CodeInvalidClientTokenID:       "com.amazon.coral.service#UnrecognizedClientException",
	sigv4.CodeSignatureDoesNotMatch:      "com.amazon.coral.service#InvalidSignatureException",
}

func authError(e *sigv4.Error) *Error {
	return &Error{Shape: e.Code, Type: authTypes[e.Code], Code: e.Code, Status: e.Status, Message: e.Message}
}

// identify sets the request's account (and, when verified, that its
// key is proven), or refuses it. With verification the key's account
// serves it; without, a key of the credentials file names its account,
// a key of 12 digits is the account (as LocalStack has it), and any other
// key or none gets the default account. unsigned tells that the action
// may run without a signature.
//
// The region is the signature's, as each region is a namespace of its
// own on AWS; a request that names none, or (unverified) a name that is
// no region, is served in the default region.
func (h *Handler) identify(r *http.Request, c *call, unsigned bool) *Error {
	a := &h.Auth
	if !region.Valid(c.info.Region) {
		c.info.Region = a.DefaultRegion
	}
	if !a.Verify {
		c.info.Account = a.accountOf(c.info.AccessKey)
		return nil
	}
	if unsigned && !sigv4.Signed(r) {
		c.info.AccessKey, c.info.Account, c.info.Region = "", a.DefaultAccount, a.DefaultRegion
		return nil
	}
	service := c.scope
	if c.svc != nil {
		service = c.svc.SigningName
	}
	id, err := a.Verifier.Verify(r, c.raw, service)
	if err != nil {
		return authError(err)
	}
	c.info.AccessKey, c.info.Account, c.info.Verified = id.AccessKey, id.Account, true
	return nil
}

// accountOf is the account of an unverified access key.
func (a *Auth) accountOf(accessKey string) string {
	if a.Verifier != nil {
		if id, ok := a.Verifier.Keys.Lookup(accessKey); ok {
			return id.Account
		}
	}
	if sigv4.IsAccountID(accessKey) {
		return accessKey
	}
	return a.DefaultAccount
}
