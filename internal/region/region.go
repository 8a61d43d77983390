// Package region tells AWS regions apart. On AWS each region is a
// namespace of its own: a queue, topic or alarm of one account in
// us-west-2 is another resource than the one of the same name in
// us-east-1. Ferry takes a request's region from its signature (and,
// for SQS, from a queue URL that names one) and keeps every account's
// resources per region under the key Owner gives.
package region

import "strings"

// Valid reports whether name has the shape of a region of an AWS
// partition: groups of lower-case letters and a number, joined by
// hyphens (us-east-1, ap-southeast-4, us-gov-west-1, cn-north-1,
// us-iso-east-1, eusc-de-east-1). Names that clients of other brokers
// configure ("local", "elasticmq", "us-east-1a") are not regions.
func Valid(name string) bool {
	// One pass without splitting: Valid runs on every request (the
	// signature's scope, the queue URL's host), so it must not allocate.
	if len(name) > 32 {
		return false
	}
	last := strings.LastIndexByte(name, '-')
	if last < 0 || strings.Count(name[:last], "-") < 1 {
		return false
	}
	group := 0 // the length of the letter group being read
	for i := 0; i < last; i++ {
		switch c := name[i]; {
		case c == '-':
			if group == 0 {
				return false
			}
			group = 0
		case c >= 'a' && c <= 'z':
			group++
		default:
			return false
		}
	}
	if group == 0 {
		return false
	}
	n := name[last+1:]
	if n == "" || len(n) > 2 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// sep joins an account and a region in an owner key: no account id holds
// it, and no store's key format gives it a meaning.
const sep = "@"

// Owner is the key under which the stores keep account's resources of
// region. The home region's (the --region Ferry serves unsigned requests
// in) are keyed by the account alone, as every resource was before
// Ferry told regions apart, so that what a store holds stays where it
// was; another region's by the account and the region. An empty region
// is the home region.
func Owner(account, region, home string) string {
	if region == "" || region == home {
		return account
	}
	return account + sep + region
}

// Split is Owner's inverse: the account and region an owner key names.
func Split(owner, home string) (account, region string) {
	if a, r, ok := strings.Cut(owner, sep); ok {
		return a, r
	}
	return owner, home
}
