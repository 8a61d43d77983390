// Package arn reads and writes Amazon Resource Names,
// arn:partition:service:region:account:resource, for every service of
// Ferry: SQS names its queues by them, SNS its topics, subscriptions and
// endpoints, and each service judges the elements by its own rules.
package arn

import "strings"

// ARN is an ARN's elements after the leading "arn". Resource is all that
// follows the fifth ':', so it may hold ':' itself
// (arn:aws:lambda:us-east-1:123456789012:function:name).
type ARN struct {
	Partition, Service, Region, Account, Resource string
}

// Split cuts s into an ARN's elements without judging them: ok is false
// only when s does not start with "arn:" or has fewer than six elements.
// It allocates nothing, as it runs for every publish and every SQS copy.
func Split(s string) (ARN, bool) {
	rest, ok := strings.CutPrefix(s, "arn:")
	if !ok {
		return ARN{}, false
	}
	var f [4]string
	for i := range f {
		if f[i], rest, ok = strings.Cut(rest, ":"); !ok {
			return ARN{}, false
		}
	}
	return ARN{Partition: f[0], Service: f[1], Region: f[2], Account: f[3], Resource: rest}, true
}

// Parse is Split for an ARN of the usual shape: it names a partition, a
// service and a resource.
func Parse(s string) (ARN, bool) {
	a, ok := Split(s)
	if !ok || a.Partition == "" || a.Service == "" || a.Resource == "" {
		return ARN{}, false
	}
	return a, true
}

// Six reports whether the resource is one element, as the ARNs of SQS
// queues and SNS topics are.
func (a ARN) Six() bool { return !strings.Contains(a.Resource, ":") }

// String writes the ARN back.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":" + a.Service + ":" + a.Region + ":" + a.Account + ":" + a.Resource
}

// Partition is the partition a region belongs to.
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}
