package sqs

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/engine"
	iam "github.com/ferrymq/ferry/internal/policy"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// Who may act on a queue. A caller's key holds every permission in its
// own account (Ferry has no identity policies), so the queue's Policy
// decides only two things, as on AWS: whether a caller of another account
// may use the queue (it needs an Allow), and whether the owner's own
// callers are refused an action (an explicit Deny).
//
// With verified signatures (--auth verify) both are enforced. Without,
// the account a request claims is not proven, so a Deny protects nothing;
// the laptop stays permissive for the owner (an enforceSSL statement from
// an infrastructure template must not lock out plain-HTTP local use),
// while a request of another account is still decided by the policy, so
// that multi-account tests get AWS's answers.

// queueRef is the queue a request addresses: its account, region and
// name, and owner, the key the store keeps the account's queues of that
// region under (region.Owner).
type queueRef struct {
	account, region, name, owner string
}

// arn is the queue's ARN.
func (r queueRef) arn() string { return queueARN(r.region, r.account, r.name) }

// crossAccountActions are the actions a queue policy may grant to another
// account; for every other action cross-account permissions do not apply
// (AddPermission, CreateQueue, DeleteQueue, ListQueueTags, move tasks,
// RemovePermission, SetQueueAttributes, TagQueue, UntagQueue). Batch
// actions are authorized as their single forms (policyAction).
var crossAccountActions = map[string]bool{
	"SendMessage": true, "ReceiveMessage": true, "DeleteMessage": true, "ChangeMessageVisibility": true,
	"GetQueueAttributes": true, "GetQueueUrl": true, "ListDeadLetterSourceQueues": true, "PurgeQueue": true,
}

// policyAction is the IAM action of an SQS action: a batch is authorized
// as the action it repeats.
func policyAction(action string) string {
	return "sqs:" + strings.TrimSuffix(action, "Batch")
}

var errAccessDenied = &protocol.Error{Shape: "AccessDenied", Type: "com.amazon.coral.service#AccessDeniedException",
	Code: "AccessDenied", Status: http.StatusForbidden}

// accessDenied is AWS's refusal, worded as IAM words it (the action in
// lower case, as AWS writes it).
func (s *service) accessDenied(caller string, ref queueRef, action string, explicit bool) *protocol.Error {
	why := "because no resource-based policy allows the " + strings.ToLower(action) + " action"
	if explicit {
		why = "with an explicit deny in a resource-based policy"
	}
	return errAccessDenied.WithMessage("User: %s is not authorized to perform: %s on resource: %s %s",
		iam.RootARN(arn.Partition(ref.region), caller), strings.ToLower(action), ref.arn(), why)
}

// target resolves a request's QueueUrl (a URL or a bare name) to the queue
// it addresses, falling back to the request path for clients that post to
// the queue's URL, and decides whether the caller may perform action on
// it (see authorize). It does not check that a queue of the caller's own
// account exists, unless its policy must be read.
func (s *service) target(ctx context.Context, queueURL, action string) (queueRef, error) {
	ref, err := s.parseTarget(ctx, queueURL)
	if err != nil {
		return ref, err
	}
	if !s.mustAuthorize(ctx, ref) {
		return ref, nil
	}
	q, err := s.backend.ViewQueue(ctx, ref.owner, ref.name)
	if err != nil {
		return ref, s.loadError(ctx, ref, action, err)
	}
	return ref, s.authorize(ctx, ref, &q, action)
}

// parseTarget reads QueueUrl: a queue of the caller's account and region
// unless the URL names another.
func (s *service) parseTarget(ctx context.Context, queueURL string) (queueRef, error) {
	ref := queueURL
	if ref == "" {
		_, path, _ := requestInfo(ctx)
		if path == "" || path == "/" {
			return queueRef{}, missingParameter("QueueUrl")
		}
		ref = path
	}
	owner, name, reg, ok := parseQueueRef(ref)
	caller := s.accountOf(ctx)
	if owner == "" {
		owner = caller
	}
	if !ok || !validAnyQueueName(name) || owner != caller && !validAccount(owner) {
		return queueRef{}, errQueueDoesNotExist
	}
	if reg == "" {
		reg = s.regionOf(ctx)
	}
	r := s.ref(owner, reg, name)
	s.touch(r.owner, r.name)
	return r, nil
}

func validAccount(s string) bool { return sigv4.IsAccountID(s) }

// mustAuthorize tells whether a request for ref needs the queue's policy:
// always for another account's queue, for the owner's only when the
// request's signature was verified.
func (s *service) mustAuthorize(ctx context.Context, ref queueRef) bool {
	info := protocol.Info(ctx)
	return ref.account != s.accountOf(ctx) || info.Verified
}

// loadError answers a failed load of ref's queue: a missing queue of
// another account is refused as access is, so that its existence does not
// show.
func (s *service) loadError(ctx context.Context, ref queueRef, action string, err error) error {
	if caller := s.accountOf(ctx); ref.account != caller && errors.Is(err, engine.ErrQueueNotFound) {
		return s.accessDenied(caller, ref, policyAction(action), false)
	}
	return s.engineError(err, "get queue "+ref.name)
}

// authorize decides whether the request may perform action on q (ref):
// a caller of another account needs an Allow of the queue's policy for an
// action that can be shared, and no Deny; the owner's caller is refused
// only by a Deny, and only when its signature was verified.
func (s *service) authorize(ctx context.Context, ref queueRef, q *engine.Queue, action string) error {
	caller := s.accountOf(ctx)
	iamAction := policyAction(action)
	cross := ref.account != caller
	if cross && !crossAccountActions[strings.TrimPrefix(iamAction, "sqs:")] {
		return s.accessDenied(caller, ref, iamAction, false)
	}
	if !cross && !protocol.Info(ctx).Verified {
		return nil
	}
	raw := q.Attributes[attrPolicy]
	if raw == "" {
		if cross {
			return s.accessDenied(caller, ref, iamAction, false)
		}
		return nil
	}
	p, err := s.policies.parse(raw)
	if err != nil {
		// Stored before policies were checked and no longer valid: it
		// grants nothing and denies nothing.
		p = nil
	}
	info := protocol.Info(ctx)
	req := &iam.Request{Account: caller, Action: iamAction, Resource: ref.arn(),
		Context: iam.CallerContext(caller, arn.Partition(ref.region), info.SourceIP, info.TLS, s.clock.Now())}
	if iam.Authorize(p, req, ref.account) {
		return nil
	}
	return s.accessDenied(caller, ref, iamAction, p.Evaluate(req) == iam.Denied)
}

// policyCache keeps parsed queue policies by their text, so that a queue
// with a policy is not parsed on every request. It forgets everything
// when full: policies change rarely and are few.
type policyCache struct {
	mu sync.Mutex
	m  map[string]*iam.Policy
}

const policyCacheSize = 256

func (c *policyCache) parse(raw string) (*iam.Policy, error) {
	c.mu.Lock()
	p, ok := c.m[raw]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := iam.Parse(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= policyCacheSize {
		c.m = make(map[string]*iam.Policy)
	}
	c.m[raw] = p
	c.mu.Unlock()
	return p, nil
}

// checkPolicy validates a Policy attribute as SQS does when it is set.
// SQS answers every invalid document alike.
func checkPolicy(value string) *protocol.Error {
	if _, err := iam.Parse(value); err != nil {
		return invalidAttributeValue(attrPolicy)
	}
	return nil
}
