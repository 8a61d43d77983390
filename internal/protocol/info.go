package protocol

import (
	"context"
	"strings"
)

// RequestInfo is what the wire layer knows of a request, for the actions.
type RequestInfo struct {
	RequestID string
	// Host and Path are as the client sent them; some SDKs address a queue
	// by posting to its URL rather than naming it in the body.
	Host string
	Path string
	// TLS: the request came over HTTPS, so links to this server use https.
	TLS bool
	// Region and AccessKey come from the SigV4 credential scope (header or
	// presigned query); empty when the request carries none.
	Region    string
	AccessKey string
	// Protocol is "json", "query" or "rpcv2-cbor".
	Protocol string
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// Info returns the request's info; never nil (an empty one when ctx has
// none, as in tests that call handlers directly).
func Info(ctx context.Context) *RequestInfo {
	if info, ok := ctx.Value(infoKey{}).(*RequestInfo); ok && info != nil {
		return info
	}
	return &RequestInfo{}
}

// credential is a parsed SigV4 credential scope.
type credential struct {
	accessKey, region, service string
}

// parseAuthorization reads the Credential= part of a SigV4 Authorization
// header ("AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/sqs/aws4_request, ...").
func parseAuthorization(h string) (credential, bool) {
	_, rest, ok := strings.Cut(h, "Credential=")
	if !ok {
		return credential{}, false
	}
	if i := strings.IndexAny(rest, ", "); i >= 0 {
		rest = rest[:i]
	}
	return parseCredential(rest)
}

// parseCredential splits AKID/date/region/service/aws4_request. SigV4a
// scopes have no region (AKID/date/service/aws4_request).
func parseCredential(s string) (credential, bool) {
	// Cut by hand: strings.Split would allocate on every request.
	n := strings.Count(s, "/") + 1
	if n != 4 && n != 5 {
		return credential{}, false
	}
	var parts [5]string
	for i := range n - 1 {
		parts[i], s, _ = strings.Cut(s, "/")
	}
	parts[n-1] = s
	if n == 5 {
		return credential{accessKey: parts[0], region: parts[2], service: parts[3]}, parts[0] != ""
	}
	return credential{accessKey: parts[0], service: parts[2]}, parts[0] != ""
}
