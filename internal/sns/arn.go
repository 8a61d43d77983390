package sns

import (
	"context"
	"strings"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/policy"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
)

// accountOf is the account the request is served in, as the protocol
// layer decided it (protocol.Auth); the configured account for a call
// that came through no handler.
func (s *Service) accountOf(ctx context.Context) string {
	if a := protocol.Info(ctx).Account; a != "" {
		return a
	}
	return s.account
}

// regionOf is the region the request is served in, as the protocol
// layer decided it (protocol.Auth); the configured region for a call that
// came through no handler. Each region's topics are its own, as on AWS.
func (s *Service) regionOf(ctx context.Context) string {
	if r := protocol.Info(ctx).Region; r != "" {
		return r
	}
	return s.region
}

// ownerOf is the key under which the stores keep the request's account's
// state of its region (region.Owner).
func (s *Service) ownerOf(ctx context.Context) string {
	return region.Owner(s.accountOf(ctx), s.regionOf(ctx), s.region)
}

// ownerOfARN is the key under which the stores keep the state of the
// account and region of an SNS ARN (region.Owner): CloudWatch reads a
// topic's metrics under it.
func (s *Service) ownerOfARN(a string) string {
	parts, _ := arn.Split(a)
	return region.Owner(parts.Account, parts.Region, s.region)
}

// topicARN is the ARN of the request's account's topic called name, in
// the request's region.
func (s *Service) topicARN(ctx context.Context, name string) string {
	r := s.regionOf(ctx)
	return "arn:" + arn.Partition(r) + ":sns:" + r + ":" + s.accountOf(ctx) + ":" + name
}

// inRegion reports whether an ARN's region r is the request's. SNS's
// links (SubscribeURL, UnsubscribeURL) come unsigned and name no region
// but their ARN's, which then serves.
func (s *Service) inRegion(ctx context.Context, r string) bool {
	return r == s.regionOf(ctx) || protocol.Info(ctx).AccessKey == "" && region.Valid(r)
}

// arnAccount is the account element of an SNS ARN (a topic's, a
// subscription's, a platform application's or endpoint's): the fifth.
func arnAccount(a string) string {
	for range 4 {
		i := strings.IndexByte(a, ':')
		if i < 0 {
			return ""
		}
		a = a[i+1:]
	}
	if i := strings.IndexByte(a, ':'); i >= 0 {
		return a[:i]
	}
	return ""
}

// arnRegion is the region element of an ARN, the fourth.
func arnRegion(s string) string {
	a, _ := arn.Split(s)
	return a.Region
}

// ownedBy reports whether the SNS resource resourceARN (a platform
// application or endpoint, which have no resource policy) belongs to the
// request's account, and if not, answers as SNS answers a caller of
// another account: AuthorizationError naming the action. Topics and
// subscriptions are decided by authorizeTopic and authorizeSubscription.
func (s *Service) ownedBy(ctx context.Context, resourceARN, action string) error {
	caller := s.accountOf(ctx)
	if arnAccount(resourceARN) == caller {
		return nil
	}
	return notAuthorized(s.regionOf(ctx), caller, action, resourceARN, "")
}

// reasonExplicitDeny ends a refusal that a resource policy's Deny
// decided, as IAM words it; noAllow one that no Allow let through.
const reasonExplicitDeny = "with an explicit deny in a resource-based policy"

func noAllow(action string) string {
	return "because no resource-based policy allows the SNS:" + action + " action"
}

// notAuthorized is SNS's refusal of action on resource to a caller of
// account, followed by IAM's reason when a resource policy decided it
// ("" for none). Ferry has no IAM users: the caller is named as its
// account's root.
func notAuthorized(region, account, action, resource, reason string) error {
	msg := "User: " + policy.RootARN(arn.Partition(region), account) + " is not authorized to perform: SNS:" + action + " on resource: " + resource
	if reason != "" {
		msg += " " + reason
	}
	return errAuthorization.WithMessage("%s", msg)
}

// arnElements splits an ARN on ':' and refuses fewer than six elements
// with AWS's words; param names the parameter ("TopicArn").
func arnElements(arn, param string) ([]string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) < 6 {
		return nil, invalidParameter("%s Reason: An ARN must have at least 6 elements, not %d", param, len(parts))
	}
	return parts, nil
}

// checkTopicARN validates a topic ARN parameter: present, well formed, of
// SNS, in the request's region. It returns the topic's name. The account may be
// any: whether the caller may act on the topic is decided once it is
// found (authorizeTopic), as SNS answers NotFound for a topic that does not
// exist, whoever owns the ARN's account.
func (s *Service) checkTopicARN(ctx context.Context, topicARN, param string) (string, error) {
	if topicARN == "" {
		return "", invalidParameter("%s Reason: no value for required parameter", param)
	}
	// Every publish checks its topic's ARN: no split, no allocation.
	if n := strings.Count(topicARN, ":") + 1; n < 6 {
		return "", invalidParameter("%s Reason: An ARN must have at least 6 elements, not %d", param, n)
	} else if n != 6 {
		return "", invalidParameter("%s", param)
	}
	a, ok := arn.Split(topicARN)
	if !ok || a.Service != "sns" || !s.inRegion(ctx, a.Region) || a.Resource == "" || a.Account == "" {
		return "", invalidParameter("%s", param)
	}
	return a.Resource, nil
}

// checkSubscriptionARN validates a subscription ARN: a topic ARN followed
// by the subscription's id. It returns the topic ARN.
func (s *Service) checkSubscriptionARN(ctx context.Context, arn string) (topicARN string, err error) {
	if arn == "" {
		return "", invalidParameter("SubscriptionArn Reason: no value for required parameter")
	}
	parts, err := arnElements(arn, "SubscriptionArn")
	if err != nil {
		return "", err
	}
	if len(parts) == 6 {
		return "", invalidParameter("SubscriptionId")
	}
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "sns" || parts[6] == "" {
		return "", invalidParameter("SubscriptionArn")
	}
	if !s.inRegion(ctx, parts[3]) {
		return "", invalidParameter("SubscriptionArn")
	}
	return strings.Join(parts[:6], ":"), nil
}

// queueARN reads an SQS queue's ARN as SNS takes it for an endpoint or a
// dead-letter queue, arn:{partition}:sqs:{region}:{account}:{name}, of
// any account and region: the queue is SQS's to find when SNS sends.
func queueARN(s string) (arn.ARN, bool) {
	a, ok := arn.Parse(s)
	return a, ok && a.Service == "sqs" && a.Region != "" && a.Account != "" && a.Six()
}

// mayDeliver reports whether the topic topicARN may send into the queue
// queueARN (a subscription's endpoint; the dead-letter queue is asked the
// same in package delivery): the queue's policy decides, as on AWS
// (policy.MaySNSSend through SQS's port): another account's queue needs
// an Allow of sqs:SendMessage to sns.amazonaws.com (or to the topic's
// account), and a Deny refuses even the topic's own account.
func (s *Service) mayDeliver(ctx context.Context, topicARN, queueARN string) (bool, error) {
	return s.sqs.MaySNSSend(ctx, topicARN, queueARN)
}

// isARN reports whether s is an ARN of service svc.
func isARN(s, svc string) bool {
	a, ok := arn.Parse(s)
	return ok && a.Service == svc
}
