package sns

import (
	"context"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/policy"
	"github.com/ferrymq/ferry/internal/protocol"
)

// Who may act on a topic. A caller's key holds every permission in its
// own account (Ferry has no identity policies), so the topic's Policy
// decides only two things, as on AWS and as SQS's queue policies do
// (package sqs, access.go): whether a caller of another account may use
// the topic (it needs an Allow), and whether the owner's own callers are
// refused an action (an explicit Deny).
//
// With verified signatures (--auth verify) both are enforced. Without,
// the account a request claims is not proven, so a Deny protects
// nothing: the owner is never refused, while a request of another
// account is still decided by the policy, so that multi-account tests
// get AWS's answers.

// sharedActions are the actions a topic policy may grant another
// account: SNS's valid policy actions (the developer guide's "Amazon SNS
// API permissions: Actions and resources reference"). PublishBatch is
// authorized as Publish. TagResource and UntagResource are not among
// them: they stay the owner's, whatever the policy says.
var sharedActions = map[string]bool{
	"AddPermission": true, "DeleteTopic": true, "GetDataProtectionPolicy": true, "GetTopicAttributes": true,
	"ListSubscriptionsByTopic": true, "ListTagsForResource": true, "Publish": true, "PutDataProtectionPolicy": true,
	"RemovePermission": true, "SetTopicAttributes": true, "Subscribe": true,
}

// Condition keys of SNS's own, which a Subscribe request fills in.
const (
	keyEndpoint = "sns:endpoint"
	keyProtocol = "sns:protocol"
)

// topicAccess is a topic's Policy as parsed once when the topic is
// prepared: nil when it has none that parses (a document stored before
// policies were checked grants and denies nothing, as for queues).
type topicAccess struct {
	policy *policy.Policy
	// denies: a statement denies something, so the owner's verified
	// requests must be evaluated; without one they are allowed at once.
	denies bool
}

func newTopicAccess(raw string) topicAccess {
	if raw == "" {
		return topicAccess{}
	}
	p, err := policy.Parse(raw)
	if err != nil {
		return topicAccess{}
	}
	a := topicAccess{policy: p}
	for i := range p.Statements {
		if p.Statements[i].Effect == policy.Deny {
			a.denies = true
			break
		}
	}
	return a
}

// subscribeKeys are the sns:Protocol and sns:Endpoint of a Subscribe,
// which a statement's Condition may test; nil for other actions.
type subscribeKeys struct{ protocol, endpoint string }

// authorizeTopic decides whether the request may perform action (an SNS
// action name, "Publish") on t: a caller of another account needs an
// Allow of the topic's policy, for an action a policy can share, and no
// Deny; the owner's caller is refused only by a Deny, and only when its
// signature was verified. The owner's publish without verification costs
// nothing but the comparison of two strings.
func (s *Service) authorizeTopic(ctx context.Context, t *topic, action string, keys *subscribeKeys) error {
	info, caller := protocol.Info(ctx), s.accountOf(ctx)
	owner := arnAccount(t.ARN)
	cross := caller != owner
	if !cross && (!info.Verified || !t.access.denies) {
		return nil
	}
	if cross && (!sharedActions[action] || t.access.policy == nil) {
		return notAuthorized(s.regionOf(ctx), caller, action, t.ARN, noAllow(action))
	}
	req := &policy.Request{Account: caller, Action: "sns:" + action, Resource: t.ARN,
		Context: policy.CallerContext(caller, arn.Partition(s.regionOf(ctx)), info.SourceIP, info.TLS, s.clock.Now())}
	if keys != nil {
		req.Context.Set(keyProtocol, keys.protocol)
		req.Context.Set(keyEndpoint, keys.endpoint)
	}
	if policy.Authorize(t.access.policy, req, owner) {
		return nil
	}
	reason := noAllow(action)
	if t.access.policy.Evaluate(req) == policy.Denied {
		reason = reasonExplicitDeny
	}
	return notAuthorized(s.regionOf(ctx), caller, action, t.ARN, reason)
}

// authorizeSubscription decides whether the request may perform action
// on sub: its owner (the account that subscribed) and its topic's owner
// may; no policy grants it to anyone else, since subscription actions are
// not topic policy actions.
func (s *Service) authorizeSubscription(ctx context.Context, sub *subscription, action string) error {
	caller := s.accountOf(ctx)
	if caller == sub.Owner || caller == arnAccount(sub.ARN) {
		return nil
	}
	return notAuthorized(s.regionOf(ctx), caller, action, sub.ARN, "")
}
