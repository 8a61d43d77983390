package policy

import (
	"strconv"
	"strings"
	"time"
)

// Decision is what a policy says of a request.
type Decision int

// A policy denies explicitly, allows, or says nothing (no statement
// matches: the implicit deny).
const (
	NotApplicable Decision = iota
	Allowed
	Denied
)

func (d Decision) String() string {
	switch d {
	case Allowed:
		return "Allow"
	case Denied:
		return "Deny"
	}
	return "NotApplicable"
}

// Request is what a statement is matched against.
type Request struct {
	// Account is the caller's account; Ferry's callers act as their
	// account's root (arn:PARTITION:iam::ACCOUNT:root), since keys name no
	// user or role. Empty when a service acts.
	Account string
	// Service is the service principal that acts ("sns.amazonaws.com"),
	// empty for an account's caller.
	Service string
	// Action is "service:Action", e.g. "sqs:SendMessage"; Resource the ARN
	// of the queue or topic.
	Action   string
	Resource string
	// Context holds the condition keys of the request.
	Context Context
}

// Context is a request's condition keys, by lower-case name (keys are
// case-insensitive: AWS:SourceOwner is aws:sourceowner).
type Context map[string][]string

// Condition keys Ferry's services fill in.
const (
	KeySourceArn        = "aws:sourcearn"
	KeySourceAccount    = "aws:sourceaccount"
	KeySourceOwner      = "aws:sourceowner"
	KeySecureTransport  = "aws:securetransport"
	KeySourceIP         = "aws:sourceip"
	KeyPrincipalAccount = "aws:principalaccount"
	KeyPrincipalArn     = "aws:principalarn"
	KeyPrincipalType    = "aws:principaltype"
	KeyCurrentTime      = "aws:currenttime"
	KeyEpochTime        = "aws:epochtime"
)

// Set sets key (any case) to values; no values removes it.
func (c Context) Set(key string, values ...string) {
	key = strings.ToLower(key)
	if len(values) == 0 {
		delete(c, key)
		return
	}
	c[key] = values
}

// CallerContext is the context of a request made by an account's caller:
// its account and ARN, where it came from (sourceIP, "" if unknown), over
// TLS or not, and when.
func CallerContext(account, partition, sourceIP string, tls bool, now time.Time) Context {
	c := Context{
		KeyPrincipalAccount: {account},
		KeyPrincipalArn:     {RootARN(partition, account)},
		KeyPrincipalType:    {"Account"},
		KeySecureTransport:  {strconv.FormatBool(tls)},
		KeyCurrentTime:      {now.UTC().Format(time.RFC3339)},
		KeyEpochTime:        {strconv.FormatInt(now.Unix(), 10)},
	}
	if sourceIP != "" {
		c[KeySourceIP] = []string{sourceIP}
	}
	return c
}

// RootARN is the ARN of an account's root, the principal a Ferry caller is.
func RootARN(partition, account string) string {
	return "arn:" + partition + ":iam::" + account + ":root"
}

// Evaluate says what the policy decides of r: Denied if a Deny statement
// matches (an explicit deny wins over any allow), else Allowed if an Allow
// statement matches, else NotApplicable. A nil policy says nothing.
func (p *Policy) Evaluate(r *Request) Decision {
	if p == nil {
		return NotApplicable
	}
	d := NotApplicable
	for i := range p.Statements {
		st := &p.Statements[i]
		if !st.matches(r) {
			continue
		}
		if st.Effect == Deny {
			return Denied
		}
		d = Allowed
	}
	return d
}

// Authorize decides a request under a resource policy as AWS does when
// identity policies play no part: an explicit Deny refuses it; a caller
// of the resource's own account needs nothing more (its key holds every
// permission in its account); anyone else, another account or a service,
// needs an Allow. p may be nil (no policy).
func Authorize(p *Policy, r *Request, ownerAccount string) bool {
	switch p.Evaluate(r) {
	case Denied:
		return false
	case Allowed:
		return true
	}
	return r.Service == "" && r.Account == ownerAccount
}

// ServiceRequest is the request of a service principal acting for one of
// its resources: SNS delivering topic sourceARN's messages, or the like.
// aws:SourceArn is that resource, aws:SourceAccount and aws:SourceOwner
// its owner.
func ServiceRequest(service, action, resource, sourceARN, sourceAccount string, tls bool, now time.Time) *Request {
	return &Request{
		Service:  service,
		Action:   action,
		Resource: resource,
		Context: Context{
			KeySourceArn:       {sourceARN},
			KeySourceAccount:   {sourceAccount},
			KeySourceOwner:     {sourceAccount},
			KeyPrincipalType:   {"Service"},
			KeySecureTransport: {strconv.FormatBool(tls)},
			KeyCurrentTime:     {now.UTC().Format(time.RFC3339)},
			KeyEpochTime:       {strconv.FormatInt(now.Unix(), 10)},
		},
	}
}

// SNSService is the service principal SNS delivers to SQS as.
const SNSService = "sns.amazonaws.com"

// MaySNSSend is for SNS: may topic topicARN, owned by topicAccount, send
// to queue queueARN of queueAccount, whose Policy is p (nil: none)? As on
// AWS, the queue's policy decides: SNS acts as sns.amazonaws.com with
// aws:SourceArn the topic and aws:SourceAccount its owner, and a statement
// may also grant sqs:SendMessage to the topic owner's account instead of
// the service. A topic of the queue's own account needs no Allow: Ferry
// treats the owner as trusting its own topics unless its policy denies
// them (see docs: AWS would want an Allow here too, but every queue that
// worked before policies were evaluated keeps working). An explicit Deny
// of either principal refuses the delivery.
func MaySNSSend(p *Policy, topicARN, topicAccount, queueARN, queueAccount string, now time.Time) bool {
	if p == nil {
		// No statement to match: spares every copy to a queue without a
		// policy the two requests built below.
		return topicAccount == queueAccount
	}
	svc := ServiceRequest(SNSService, "sqs:SendMessage", queueARN, topicARN, topicAccount, true, now)
	owner := &Request{Account: topicAccount, Action: "sqs:SendMessage", Resource: queueARN, Context: Context{
		KeySourceArn:        {topicARN},
		KeySourceAccount:    {topicAccount},
		KeySourceOwner:      {topicAccount},
		KeyPrincipalAccount: {topicAccount},
		KeySecureTransport:  {"true"},
		KeyCurrentTime:      svc.Context[KeyCurrentTime],
		KeyEpochTime:        svc.Context[KeyEpochTime],
	}}
	ds, do := p.Evaluate(svc), p.Evaluate(owner)
	if ds == Denied || do == Denied {
		return false
	}
	return ds == Allowed || do == Allowed || topicAccount == queueAccount
}

func (st *Statement) matches(r *Request) bool {
	if st.Principal.matches(r) == st.NotPrincipal {
		return false
	}
	if matchAny(st.Actions, r.Action, matchAction) == st.NotAction {
		return false
	}
	if st.Resources != nil && matchAny(st.Resources, r.Resource, matchResource) == st.NotResource {
		return false
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		got, ok := r.Context[c.Key]
		if !c.holds(got, ok) {
			return false
		}
	}
	return true
}

func (p *Principal) matches(r *Request) bool {
	if p.Anyone {
		return true
	}
	if r.Service != "" {
		for _, s := range p.Services {
			if s == strings.ToLower(r.Service) {
				return true
			}
		}
		return false
	}
	for _, a := range p.Accounts {
		if a == r.Account {
			return true
		}
	}
	// A user or role ARN is not a Ferry caller, whose keys are the
	// account's own; only the root's ARN (read as the account) matches.
	return false
}

func matchAny(patterns []string, s string, match func(p, s string) bool) bool {
	for _, p := range patterns {
		if match(p, s) {
			return true
		}
	}
	return false
}

// matchAction: patterns are lower case already; actions are
// case-insensitive ("SQS:SendMessage" is "sqs:sendmessage").
func matchAction(pattern, action string) bool {
	return pattern == "*" || Match(pattern, strings.ToLower(action))
}

func matchResource(pattern, resource string) bool {
	return pattern == "*" || Match(pattern, resource)
}

// Match reports whether s matches pattern, in which * stands for any run
// of characters and ? for one character. It runs in O(len(pattern) ×
// len(s)) at worst, without recursion, so a hostile pattern stays cheap.
func Match(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
