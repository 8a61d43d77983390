package delivery

import "strings"

// passwordMask stands for an endpoint's password wherever SNS shows the
// endpoint (https://user:****@host/path: terraform-provider-aws compares
// what it subscribed, masked so, with what AWS lists).
const passwordMask = "****"

// MaskEndpoint is an endpoint as answers and logs show it: a URL's password
// (after the first ':' of the user information, which ends at the
// authority's last '@', as net/url and so the Basic auth of deliveries read
// it) replaced by passwordMask, every other byte as subscribed. The stored
// endpoint keeps the password, which deliveries need.
func MaskEndpoint(endpoint string) string {
	_, rest, ok := strings.Cut(endpoint, "://")
	if !ok {
		return endpoint // ARNs, email addresses, phone numbers
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return endpoint
	}
	colon := strings.IndexByte(authority[:at], ':')
	if colon < 0 {
		return endpoint // a user without a password
	}
	start := len(endpoint) - len(rest)
	return endpoint[:start+colon+1] + passwordMask + endpoint[start+at:]
}
