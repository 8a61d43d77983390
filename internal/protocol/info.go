package protocol

import (
	"context"
	"net/netip"
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
	// SourceIP is the address of the connection's peer (no port), for
	// the aws:SourceIp condition of resource policies.
	SourceIP string
	// UserAgent is the User-Agent header, which names the SDK and its
	// version (a message's history shows who received it).
	UserAgent string
	// AccessKey comes from the SigV4 credential scope (header or presigned
	// query); empty when the request carries none. Region is the region
	// the request is served in: its scope's, or the handler's default
	// (Auth.identify); empty only when no handler served the request.
	Region    string
	AccessKey string
	// Account is the account the request is served in, which the
	// handler's Auth decides (see Auth.identify); empty only when no
	// handler served the request (tests that call actions directly).
	Account string
	// Verified tells that the signature was checked (Auth.Verify): the
	// caller is AccessKey's owner, not someone who only named the key.
	Verified bool
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

// remoteIP is the address of a RemoteAddr ("ip:port"), or "" if it has
// none.
func remoteIP(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return ""
	}
	a := ap.Addr()
	if a.Is4() {
		// Dotted IPv4 parses only in its one spelling (no leading zeros),
		// so the text before the port is already what String would make,
		// without the allocation on every request.
		return remote[:strings.LastIndexByte(remote, ':')]
	}
	return a.Unmap().String()
}
