package sns

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// protocols are those Subscribe takes.
var protocols = []string{delivery.ProtoHTTP, delivery.ProtoHTTPS, delivery.ProtoEmail, delivery.ProtoEmailJSON, delivery.ProtoSMS, delivery.ProtoSQS, delivery.ProtoApplication, delivery.ProtoLambda, delivery.ProtoFirehose}

// Subscription attribute names.
const (
	attrSubscriptionArn              = "SubscriptionArn"
	attrProtocol                     = "Protocol"
	attrEndpoint                     = "Endpoint"
	attrSubscriptionPrincipal        = "SubscriptionPrincipal"
	attrPendingConfirmation          = "PendingConfirmation"
	attrConfirmationWasAuthenticated = "ConfirmationWasAuthenticated"
	attrRawMessageDelivery           = "RawMessageDelivery"
	attrFilterPolicy                 = "FilterPolicy"
	attrFilterPolicyScope            = "FilterPolicyScope"
	attrRedrivePolicy                = "RedrivePolicy"
	attrSubscriptionRoleArn          = "SubscriptionRoleArn"
	attrReplayPolicy                 = "ReplayPolicy"
)

// pendingARN is what Subscribe answers for a subscription that waits for
// its confirmation; the List actions show pendingListed in its place.
const (
	pendingARN    = "pending confirmation"
	pendingListed = "PendingConfirmation"
)

// e164 is a phone number SNS can text.
var e164 = regexp.MustCompile(`^\+?[1-9][0-9]{1,14}$`)

// checkEndpoint validates a subscription's endpoint for its protocol.
func (s *Service) checkEndpoint(t *topic, protocol, endpoint string) error {
	if !slices.Contains(protocols, protocol) {
		return invalidParameter("Amazon SNS does not support this protocol string: %s", protocol)
	}
	if t.FIFO && protocol != delivery.ProtoSQS && protocol != delivery.ProtoFirehose {
		return invalidParameter("Invalid protocol type: %s", protocol)
	}
	if endpoint == "" {
		return invalidParameter("Endpoint")
	}
	switch protocol {
	case delivery.ProtoHTTP, delivery.ProtoHTTPS:
		if !strings.HasPrefix(strings.ToLower(endpoint), protocol+"://") {
			return invalidParameter("Endpoint must match the specified protocol")
		}
		if u, err := url.Parse(endpoint); err != nil || u.Host == "" {
			return invalidParameter("Endpoint")
		}
	case delivery.ProtoEmail, delivery.ProtoEmailJSON:
		local, domain, ok := strings.Cut(endpoint, "@")
		if !ok || local == "" || domain == "" || strings.ContainsAny(endpoint, " \r\n<>") {
			return invalidParameter("Email address")
		}
	case delivery.ProtoSMS:
		if !e164.MatchString(endpoint) {
			// AWS's words, without "Invalid parameter: ".
			return errInvalidParameter.WithMessage("Invalid SMS endpoint: %s", endpoint)
		}
	case delivery.ProtoSQS:
		if _, ok := queueARN(endpoint); !ok {
			return invalidParameter("SQS endpoint ARN")
		}
		if !t.FIFO && delivery.FIFOQueue(endpoint) {
			return invalidParameter("Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics")
		}
	case delivery.ProtoLambda:
		if !isARN(endpoint, "lambda") {
			return invalidParameter("Lambda endpoint ARN")
		}
	case delivery.ProtoFirehose:
		if !isARN(endpoint, "firehose") {
			return invalidParameter("Firehose endpoint ARN")
		}
	case delivery.ProtoApplication:
		if !isARN(endpoint, "sns") {
			return invalidParameter("ApplicationEndpoint ARN")
		}
		s.mu.RLock()
		_, ok := s.platform.endpoints[endpoint]
		s.mu.RUnlock()
		if !ok {
			// AWS's own wording, without a space before the ARN.
			return invalidParameter("Endpoint Reason: Endpoint does not exist for endpoint arn%s", endpoint)
		}
	}
	return nil
}

// subContext is what validating a subscription attribute needs to know.
type subContext struct {
	topic    *topic
	protocol string
	endpoint string
	scope    string // the FilterPolicyScope in force
}

// checkSubscriptionAttribute validates one settable attribute and returns
// the value to store ("" removes it). inSubscribe selects Subscribe's
// wording.
func checkSubscriptionAttribute(name, value string, sc subContext, inSubscribe bool) (string, error) {
	switch name {
	case attrRawMessageDelivery:
		v, ok := parseBoolAttr(value)
		if !ok {
			return "", attrError(inSubscribe, "RawMessageDelivery: Invalid value ["+value+"]. Must be true or false.")
		}
		switch sc.protocol {
		case delivery.ProtoSQS, delivery.ProtoHTTP, delivery.ProtoHTTPS, delivery.ProtoFirehose:
		default:
			if v == "true" {
				return "", attrError(inSubscribe, "RawMessageDelivery: Delivery protocol ["+sc.protocol+"] does not support raw message delivery.")
			}
		}
		return v, nil
	case attrFilterPolicyScope:
		if err := filterpolicy.CheckScope(value); err != nil {
			return "", filterPolicyError(err, inSubscribe)
		}
		return value, nil
	case attrFilterPolicy:
		if value == "" {
			return "", nil
		}
		if _, err := filterpolicy.Parse(value, sc.scope); err != nil {
			return "", filterPolicyError(err, inSubscribe)
		}
		return value, nil
	case attrDeliveryPolicy:
		if sc.protocol != delivery.ProtoHTTP && sc.protocol != delivery.ProtoHTTPS {
			return "", attrError(inSubscribe, "DeliveryPolicy: Delivery protocol ["+sc.protocol+"] does not support delivery policies")
		}
		if value == "" {
			return "", nil
		}
		p, err := delivery.ParseSubscriptionPolicy(value)
		if err != nil {
			return "", attrError(inSubscribe, err.Error())
		}
		return p.String(), nil
	case attrRedrivePolicy:
		if value == "" {
			return "", nil
		}
		dlq, err := parseRedriveTarget(value)
		if err != nil {
			return "", attrError(inSubscribe, err.Error())
		}
		if sc.topic.FIFO && !delivery.FIFOQueue(dlq) {
			// Recorded from AWS on Subscribe without "Attributes Reason: ".
			return "", invalidParameter("RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.")
		}
		return value, nil
	case attrSubscriptionRoleArn:
		if value != "" && !isARN(value, "iam") {
			return "", attrError(inSubscribe, "SubscriptionRoleArn: Invalid ARN")
		}
		return value, nil
	case attrReplayPolicy:
		if value == "" {
			return "", nil
		}
		if !sc.topic.FIFO {
			return "", attrError(inSubscribe, "ReplayPolicy: Replay is only available for FIFO topics.")
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(value), &m) != nil || m == nil {
			return "", attrError(inSubscribe, "ReplayPolicy: failed to parse JSON.")
		}
		return value, nil
	}
	return "", attrError(inSubscribe, "AttributeName")
}

// filterPolicyError words a filterpolicy.Parse error for the action.
func filterPolicyError(err error, inSubscribe bool) error {
	var fe *filterpolicy.Error
	if !errors.As(err, &fe) {
		return invalidParameter("FilterPolicy")
	}
	if inSubscribe {
		return errInvalidParameter.WithMessage("%s", fe.SubscribeMessage())
	}
	return errInvalidParameter.WithMessage("%s", fe.Error())
}

// redriveError is a RedrivePolicy problem, worded after "Invalid parameter: ".
type redriveError string

func (e redriveError) Error() string { return string(e) }

// parseRedriveTarget reads {"deadLetterTargetArn":"arn:aws:sqs:..."} and
// returns the queue's ARN.
func parseRedriveTarget(raw string) (string, error) {
	var v struct {
		DeadLetterTargetArn any `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return "", redriveError("RedrivePolicy: failed to parse JSON. " + err.Error())
	}
	dlq, _ := v.DeadLetterTargetArn.(string)
	if _, ok := queueARN(dlq); !ok {
		return "", redriveError("RedrivePolicy: deadLetterTargetArn is an invalid arn")
	}
	return dlq, nil
}

// needsConfirmation: HTTP/S and email subscriptions wait for the endpoint's
// owner; so does an SQS queue of an account other than the subscriber's,
// whoever owns the topic (AWS sends it a confirmation message, which its
// owner passes on to the subscriber): the queue's owner subscribing it,
// to a topic of any account, needs no confirmation.
func (s *Service) needsConfirmation(ctx context.Context, protocol, endpoint string) bool {
	switch protocol {
	case delivery.ProtoHTTP, delivery.ProtoHTTPS, delivery.ProtoEmail, delivery.ProtoEmailJSON:
		return true
	case delivery.ProtoSQS:
		q, _ := queueARN(endpoint)
		return q.Account != s.accountOf(ctx)
	}
	return false
}

// confirmQueue sends a pending SQS subscription's SubscriptionConfirmation
// into its queue, as AWS does for a queue of another account than the
// subscriber's, if the queue's policy lets the topic send there. When it
// does not, or the queue is missing, nothing is sent and the subscription
// waits, as on AWS (the token can be read with ConfirmationToken).
func (s *Service) confirmQueue(ctx context.Context, t *topic, sub *subscription) error {
	ok, err := s.mayDeliver(ctx, t.ARN, sub.Endpoint)
	if err != nil {
		return fmt.Errorf("ask the queue's policy: %w", err)
	}
	if !ok {
		s.log.InfoContext(ctx, "sns: the queue's policy does not let the topic send the subscription confirmation",
			"topic", t.ARN, "queue", sub.Endpoint)
		return nil
	}
	c, err := s.delivery.SubscriptionConfirmation(t.delivery, sub.Token)
	if err != nil {
		return fmt.Errorf("sign confirmation: %w", err)
	}
	body, err := c.JSON()
	if err != nil {
		return fmt.Errorf("render confirmation: %w", err)
	}
	nm, err := s.sqs.Message(string(body), nil, delivery.SenderID)
	if err != nil {
		return fmt.Errorf("build confirmation: %w", err)
	}
	if delivery.FIFOQueue(sub.Endpoint) {
		// A FIFO queue takes nothing without a group: the subscription's
		// own, so that its confirmations keep their order.
		nm.MessageGroupID = sub.ARN[strings.LastIndexByte(sub.ARN, ':')+1:]
		nm.DeduplicationID = c.MessageID
	}
	if _, err := s.sqs.Send(ctx, sub.Endpoint, []engine.NewMessage{nm}); err != nil {
		// SQS's refusal (the queue is gone) is the subscriber's to
		// mend: the subscription waits, as for a policy that refuses.
		var pe *protocol.Error
		if errors.As(err, &pe) {
			s.log.InfoContext(ctx, "sns: the queue refused the subscription confirmation", "queue", sub.Endpoint, "err", err)
			return nil
		}
		return fmt.Errorf("send confirmation: %w", err)
	}
	return nil
}

// newToken makes a confirmation token of the subscription subARN: the
// region, hex-encoded, so that ConfirmSubscription can tell a token of
// another region; the subscription's id, so that any node can find it in
// the store (tokenSubscription); then random hex to AWS's length.
func (s *Service) newToken(subARN string) string {
	const tokenLen = 288
	a, _ := arn.Split(subARN)
	prefix := hex.EncodeToString([]byte(a.Region+"/")) + strings.ReplaceAll(subARN[strings.LastIndexByte(subARN, ':')+1:], "-", "")
	b := make([]byte, (tokenLen-len(prefix)+1)/2)
	_, _ = rand.Read(b)
	return (prefix + hex.EncodeToString(b))[:tokenLen]
}

// tokenSubscription is the ARN of the subscription of topicARN whose id
// newToken wrote into token; ok is false for a token without one.
func tokenSubscription(topicARN, token string) (arn string, ok bool) {
	const idLen = 32 // a UUID's hex digits
	// The region ends at the first "/" (hex 2f), as in tokenRegion.
	_, rest, found := strings.Cut(token, "2f")
	if !found || len(rest) < idLen {
		return "", false
	}
	id := rest[:idLen]
	for i := 0; i < idLen; i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return topicARN + ":" + id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:], true
}

// tokenRegion reads the region back out of a token.
func tokenRegion(token string) (string, bool) {
	enc, _, ok := strings.Cut(token, "2f") // "/"
	if !ok || len(enc)%2 != 0 {
		return "", false
	}
	b, err := hex.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "", false
		}
	}
	return string(b), true
}

// subscribeAttributes validates Subscribe's attributes, the scope first
// since the filter policy is read in it.
func subscribeAttributes(in map[string]string, sc subContext) (map[string]string, error) {
	out := map[string]string{}
	if v, ok := in[attrFilterPolicyScope]; ok {
		if _, err := checkSubscriptionAttribute(attrFilterPolicyScope, v, sc, true); err != nil {
			return nil, err
		}
		sc.scope = v
	}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v, err := checkSubscriptionAttribute(name, in[name], sc, true)
		if err != nil {
			return nil, err
		}
		if v != "" {
			out[name] = v
		}
	}
	return out, nil
}

func (s *Service) subscribe(ctx context.Context, in *subscribeInput) (*subscriptionArnOutput, error) {
	t, err := s.findTopic(ctx, in.TopicArn, "TopicArn")
	if err != nil {
		return nil, err
	}
	if err := s.authorizeTopic(ctx, t, "Subscribe", &subscribeKeys{protocol: in.Protocol, endpoint: in.Endpoint}); err != nil {
		return nil, err
	}
	if err := s.checkEndpoint(t, in.Protocol, in.Endpoint); err != nil {
		return nil, err
	}
	attrs, err := subscribeAttributes(in.Attributes, subContext{topic: t, protocol: in.Protocol, endpoint: in.Endpoint})
	if err != nil {
		return nil, err
	}
	if in.Protocol == delivery.ProtoFirehose && attrs[attrSubscriptionRoleArn] == "" {
		return nil, invalidParameter("Attributes Reason: SubscriptionRoleArn is required for firehose subscriptions")
	}

	for attempt := 0; ; attempt++ {
		out, err := s.subscribeOnce(ctx, in, attrs, attempt)
		if err != errLostRace {
			return out, err
		}
		if attempt == maxRaces {
			s.log.WarnContext(ctx, "sns: subscribe: the endpoint's claim kept changing", "topic", in.TopicArn)
			return nil, protocol.ErrServiceUnavailable
		}
		// The claim's subscription may be on its way (its node writes
		// it right after the claim): give it a moment.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(2*time.Millisecond<<attempt, 100*time.Millisecond)): // the wall clock: waits for another call
		}
	}
}

// Subscribe is idempotent for a topic, protocol and endpoint, through any
// node: the subscription of an endpoint claims it with a record of its
// own (kindEndpoint, under a key made of the three, whose value is the
// subscription's ARN), inserted before the subscription is written, so
// that of two Subscribe calls through two nodes at once one makes the
// subscription and the other answers it (or that its attributes differ).
// A claim whose subscription is gone, or never came (its node stopped
// between the two writes), is taken over once a caller has waited
// claimTakeover attempts for it; the node that made it finds, after
// writing its subscription, that its claim was taken, and removes it
// again. Removing a subscription (or unsubscribing it, leaving a
// tombstone) frees its claim.
const kindEndpoint = "sns-endpoint"

// claimTakeover is the attempt from which a claim whose subscription the
// store does not have is taken over: about a second of waits.
const claimTakeover = 12

// endpointKey is the claim's key of a topic's protocol and endpoint.
func endpointKey(topicARN, protocol, endpoint string) string {
	sum := sha256.Sum256([]byte(protocol + "\n" + endpoint))
	return topicARN + "/" + hex.EncodeToString(sum[:16])
}

// releaseEndpoint removes sub's claim of its endpoint, if it holds it.
func (s *Service) releaseEndpoint(ctx context.Context, sub *subscription) error {
	if _, err := s.records.DeleteRecordIf(ctx, kindEndpoint, endpointKey(sub.TopicARN, sub.Protocol, sub.Endpoint), []byte(sub.ARN)); err != nil {
		return fmt.Errorf("free endpoint: %w", err)
	}
	return nil
}

// existingSubscription answers a Subscribe of an endpoint the topic has a
// subscription for, as this node knows it; ok is false when it has none.
// The caller holds writeMu.
func (s *Service) existingSubscription(ctx context.Context, t *topic, in *subscribeInput, attrs map[string]string) (out *subscriptionArnOutput, ok bool, err error) {
	for _, sub := range s.subscriptionsOf(t.ARN) {
		if sub.Deleted || sub.Protocol != in.Protocol || sub.Endpoint != in.Endpoint {
			continue
		}
		for name, v := range attrs {
			if subscriptionAttribute(sub, name) != v {
				return nil, true, invalidParameter("Attributes Reason: Subscription already exists with different attributes")
			}
		}
		if sub.Pending {
			// A repeated Subscribe sends the confirmation again.
			if err := s.sendConfirmation(ctx, t, sub); err != nil {
				return nil, true, s.internal(ctx, "resend confirmation", err)
			}
			if !in.ReturnSubscriptionArn {
				return &subscriptionArnOutput{SubscriptionArn: pendingARN}, true, nil
			}
		}
		return &subscriptionArnOutput{SubscriptionArn: sub.ARN}, true, nil
	}
	return nil, false, nil
}

// subscribeOnce makes the subscription unless the endpoint has one, and
// returns errLostRace when the endpoint's claim is to be read again.
func (s *Service) subscribeOnce(ctx context.Context, in *subscribeInput, attrs map[string]string, attempt int) (*subscriptionArnOutput, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	t, err := s.cachedTopic(ctx, in.TopicArn, "TopicArn")
	if err != nil {
		return nil, err
	}
	if out, ok, err := s.existingSubscription(ctx, t, in, attrs); ok {
		return out, err
	}
	if attrs[attrFilterPolicy] != "" && s.filterPolicies(t.ARN, "") >= maxFilterPolicies {
		return nil, errFilterPolicyLimit
	}
	now := s.clock.Now().UTC()
	sub := &subscription{
		ARN:      t.ARN + ":" + uuid.NewString(),
		TopicARN: t.ARN,
		Protocol: in.Protocol,
		Endpoint: in.Endpoint,
		Owner:    s.accountOf(ctx),
		Attrs:    attrs,
		Created:  now,
		state:    &subState{},
	}
	if s.needsConfirmation(ctx, in.Protocol, in.Endpoint) {
		sub.Pending = true
		sub.Token, sub.TokenIssued = s.newToken(sub.ARN), now
	} else {
		sub.Authenticated = true
		// A queue's owner subscribing it to another account's topic:
		// AWS sets AuthenticateOnUnsubscribe, so that the UnsubscribeURL
		// of the notifications cannot end it unsigned.
		sub.AuthOnUnsubscribe = in.Protocol == delivery.ProtoSQS && arnAccount(t.ARN) != sub.Owner
	}
	if delivery.NeedsQueue(in.Protocol) {
		sub.Queue = delivery.NewQueueName(sub.ARN)
	}
	if err := sub.prepare(); err != nil {
		return nil, s.internal(ctx, "prepare subscription", err)
	}

	key := endpointKey(t.ARN, in.Protocol, in.Endpoint)
	claimed, err := s.records.InsertRecord(ctx, kindEndpoint, key, []byte(sub.ARN))
	if err != nil {
		return nil, s.internal(ctx, "claim endpoint", err)
	}
	if !claimed {
		holder, found, err := s.records.GetRecord(ctx, kindEndpoint, key)
		if err != nil {
			return nil, s.internal(ctx, "read endpoint claim", err)
		}
		if !found {
			return nil, errLostRace // freed meanwhile
		}
		// The claim's subscription as the store has it.
		if err := s.rereadLocked(ctx, kindSubscription, string(holder)); err != nil {
			return nil, s.internal(ctx, "read subscription", err)
		}
		if out, ok, err := s.existingSubscription(ctx, t, in, attrs); ok {
			return out, err
		}
		if attempt < claimTakeover {
			return nil, errLostRace
		}
		if taken, err := s.records.SwapRecord(ctx, kindEndpoint, key, holder, []byte(sub.ARN)); err != nil || !taken {
			if err != nil {
				return nil, s.internal(ctx, "claim endpoint", err)
			}
			return nil, errLostRace
		}
	}
	if err := s.saveSubscription(ctx, sub); err != nil {
		if rerr := s.releaseEndpoint(ctx, sub); rerr != nil {
			s.log.WarnContext(ctx, "sns: subscribe", "err", rerr)
		}
		return nil, s.internal(ctx, "subscribe", err)
	}
	// A node that waited long for this subscription may have taken the
	// claim over meanwhile: then its subscription is the endpoint's.
	holder, _, err := s.records.GetRecord(ctx, kindEndpoint, key)
	if err != nil {
		return nil, s.internal(ctx, "read endpoint claim", err)
	}
	if string(holder) != sub.ARN {
		if err := s.removeSubscription(ctx, sub); err != nil {
			return nil, s.internal(ctx, "subscribe", err)
		}
		return nil, errLostRace
	}
	if sub.Queue != "" {
		if err := s.delivery.CreateQueue(ctx, sub.Queue); err != nil {
			return nil, s.internal(ctx, "create delivery queue", err)
		}
	}
	if sub.Pending {
		if err := s.sendConfirmation(ctx, t, sub); err != nil {
			return nil, s.internal(ctx, "send confirmation", err)
		}
	}
	if sub.Queue != "" {
		s.delivery.Start(sub.delivery())
	}
	if sub.Pending && !in.ReturnSubscriptionArn {
		return &subscriptionArnOutput{SubscriptionArn: pendingARN}, nil
	}
	return &subscriptionArnOutput{SubscriptionArn: sub.ARN}, nil
}

// sendConfirmation sends a pending subscription its SubscriptionConfirmation:
// through its delivery queue to an HTTP/S or email endpoint, straight
// into an SQS queue (confirmQueue).
func (s *Service) sendConfirmation(ctx context.Context, t *topic, sub *subscription) error {
	switch {
	case delivery.NeedsQueue(sub.Protocol):
		return s.delivery.Confirm(ctx, sub.delivery())
	case sub.Protocol == delivery.ProtoSQS:
		return s.confirmQueue(ctx, t, sub)
	}
	return nil
}

// maxFilterPolicies is how many subscriptions of a topic may filter.
const maxFilterPolicies = 200

// filterPolicies counts the topic's live subscriptions with a filter
// policy, but for the one named by except.
func (s *Service) filterPolicies(topicARN, except string) int {
	n := 0
	for _, sub := range s.subscriptionsOf(topicARN) {
		if !sub.Deleted && sub.ARN != except && sub.Attrs[attrFilterPolicy] != "" {
			n++
		}
	}
	return n
}

// subscriptionAttribute is a settable attribute's value, defaults included,
// for comparing a repeated Subscribe.
func subscriptionAttribute(sub *subscription, name string) string {
	if v, ok := sub.Attrs[name]; ok {
		return v
	}
	switch name {
	case attrRawMessageDelivery:
		return "false"
	case attrFilterPolicyScope:
		return filterpolicy.ScopeMessageAttributes
	}
	return ""
}

func (s *Service) confirmSubscription(ctx context.Context, in *confirmSubscriptionInput) (*subscriptionArnOutput, error) {
	topic, ok := arn.Split(in.TopicArn)
	if !ok || !topic.Six() || topic.Service != "sns" {
		return nil, invalidParameter("Topic")
	}
	region, ok := tokenRegion(in.Token)
	if !ok {
		return nil, invalidParameter("Token")
	}
	if region != topic.Region || !s.inRegion(ctx, topic.Region) {
		return nil, invalidParameter("Topic")
	}
	// The token names its subscription, which another node may have made
	// (or changed) a moment ago.
	subARN, _ := tokenSubscription(in.TopicArn, in.Token)
	var out *subscriptionArnOutput
	err := s.retryRaces(ctx, "confirm subscription", kindSubscription, subARN, func() error {
		var err error
		out, err = s.confirmOnce(ctx, in)
		return err
	})
	return out, err
}

// confirmOnce confirms the subscription the token names. The caller holds
// writeMu.
func (s *Service) confirmOnce(ctx context.Context, in *confirmSubscriptionInput) (*subscriptionArnOutput, error) {
	s.mu.RLock()
	sub := s.subs[s.tokens[in.Token]]
	s.mu.RUnlock()
	now := s.clock.Now()
	if sub == nil || now.After(sub.TokenIssued.Add(tokenLifetime)) {
		return nil, errInvalidParameter.WithMessage("Invalid token")
	}
	if sub.TopicARN != in.TopicArn {
		return nil, invalidParameter("Token")
	}
	if !sub.Pending && !sub.Deleted {
		return &subscriptionArnOutput{SubscriptionArn: sub.ARN}, nil
	}
	authOnUnsub := strings.EqualFold(in.AuthenticateOnUnsubscribe, "true")
	c := sub.clone()
	c.Pending = false
	c.Authenticated = authOnUnsub || protocol.Info(ctx).AccessKey != ""
	c.AuthOnUnsubscribe = authOnUnsub
	restored := c.Deleted
	if restored {
		c.Deleted, c.DeletedAt = false, time.Time{}
		if c.Queue != "" {
			c.Queue = delivery.NewQueueName(c.ARN)
		}
	}
	if err := s.saveSubscription(ctx, c); err != nil {
		if err == errLostRace {
			return nil, err
		}
		return nil, s.internal(ctx, "confirm subscription", err)
	}
	if restored {
		// It claims its endpoint again, unless a subscription made
		// since holds it (then both stay, as on one node).
		if _, err := s.records.InsertRecord(ctx, kindEndpoint, endpointKey(c.TopicARN, c.Protocol, c.Endpoint), []byte(c.ARN)); err != nil {
			return nil, s.internal(ctx, "claim endpoint", err)
		}
		if c.Queue != "" {
			if err := s.delivery.CreateQueue(ctx, c.Queue); err != nil {
				return nil, s.internal(ctx, "create delivery queue", err)
			}
			s.delivery.Start(c.delivery())
		}
	}
	return &subscriptionArnOutput{SubscriptionArn: c.ARN}, nil
}

func (s *Service) unsubscribe(ctx context.Context, in *subscriptionArnInput) (*emptyOutput, error) {
	if _, err := s.checkSubscriptionARN(ctx, in.SubscriptionArn); err != nil {
		return nil, err
	}
	err := s.retryRaces(ctx, "unsubscribe", kindSubscription, in.SubscriptionArn, func() error {
		return s.unsubscribeOnce(ctx, in.SubscriptionArn)
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

// unsubscribeOnce removes the subscription, or leaves its tombstone. The
// caller holds writeMu.
func (s *Service) unsubscribeOnce(ctx context.Context, arn string) error {
	s.mu.RLock()
	sub := s.subs[arn]
	s.mu.RUnlock()
	if sub == nil || sub.Deleted {
		return nil
	}
	if protocol.Info(ctx).AccessKey == "" {
		// The UnsubscribeURL link, followed unsigned: it acts in the
		// subscription's account, unless it must be signed.
		if sub.AuthOnUnsubscribe {
			return errAuthorization.WithMessage("User: anonymous is not authorized to perform: SNS:Unsubscribe on resource: %s", sub.ARN)
		}
	} else if err := s.authorizeSubscription(ctx, sub, "Unsubscribe"); err != nil {
		return err
	}
	if sub.Protocol != delivery.ProtoHTTP && sub.Protocol != delivery.ProtoHTTPS {
		if err := s.dropSubscription(ctx, sub); err != nil {
			return s.internal(ctx, "unsubscribe", err)
		}
		return nil
	}
	// An HTTP/S subscription is kept as a tombstone whose token the
	// UnsubscribeConfirmation carries, so that its owner can restore it.
	// The tombstone is stored before the queue goes, so that a worker of
	// another node that finds the queue gone finds the subscription gone
	// too (delivery.Subscriptions.Stored) and does not make it again.
	s.delivery.Stop(sub.ARN)
	c := sub.clone()
	c.Deleted, c.DeletedAt = true, s.clock.Now().UTC()
	c.Token, c.TokenIssued = s.newToken(c.ARN), c.DeletedAt
	if err := s.saveSubscription(ctx, c); err != nil {
		if err == errLostRace {
			return err
		}
		return s.internal(ctx, "unsubscribe", err)
	}
	if err := s.releaseEndpoint(ctx, c); err != nil {
		return s.internal(ctx, "unsubscribe", err)
	}
	if err := s.delivery.DeleteQueue(ctx, sub.Queue); err != nil {
		return s.internal(ctx, "unsubscribe", err)
	}
	s.mu.RLock()
	t := s.topics[c.TopicARN]
	s.mu.RUnlock()
	if t != nil {
		s.delivery.Unsubscribed(t.delivery, c.delivery())
	}
	return nil
}

// dropSubscription stops a subscription's deliveries and forgets it. The
// record goes before the queue, as in unsubscribe. The caller holds
// writeMu.
func (s *Service) dropSubscription(ctx context.Context, sub *subscription) error {
	s.delivery.Stop(sub.ARN)
	if err := s.removeSubscription(ctx, sub); err != nil {
		return err
	}
	return s.delivery.DeleteQueue(ctx, sub.Queue)
}

// pruneTombstones forgets unsubscribed subscriptions whose restore token
// has expired.
func (s *Service) pruneTombstones(ctx context.Context) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	now := s.clock.Now()
	s.mu.RLock()
	var old []*subscription
	for _, sub := range s.subs {
		if sub.Deleted && now.After(sub.DeletedAt.Add(tokenLifetime)) {
			old = append(old, sub)
		}
	}
	s.mu.RUnlock()
	for _, sub := range old {
		// Its queue is normally gone already; not if the node that
		// unsubscribed it stopped in between.
		err := s.delivery.DeleteQueue(ctx, sub.Queue)
		if err == nil {
			err = s.removeSubscription(ctx, sub)
		}
		if err != nil {
			s.log.Warn("sns: forget unsubscribed subscription", "subscription", sub.ARN, "err", err)
		}
	}
}

func listEntry(sub *subscription) subscriptionEntry {
	arn := sub.ARN
	if sub.Pending {
		arn = pendingListed
	}
	return subscriptionEntry{SubscriptionArn: arn, Owner: sub.Owner, Protocol: sub.Protocol, Endpoint: delivery.MaskEndpoint(sub.Endpoint), TopicArn: sub.TopicARN}
}

// listPage pages over live subscriptions sorted by ARN.
func listPage(subs []*subscription, token string) (*listSubscriptionsOutput, error) {
	byARN := map[string]*subscription{}
	keys := make([]string, 0, len(subs))
	for _, sub := range subs {
		if !sub.Deleted {
			byARN[sub.ARN] = sub
			keys = append(keys, sub.ARN)
		}
	}
	slices.Sort(keys)
	page, next, err := pageAfter(keys, token)
	if err != nil {
		return nil, err
	}
	out := &listSubscriptionsOutput{Subscriptions: make([]subscriptionEntry, len(page)), NextToken: next}
	for i, arn := range page {
		out.Subscriptions[i] = listEntry(byARN[arn])
	}
	return out, nil
}

// listSubscriptions lists the caller's subscriptions: those its account
// made, to its own topics or to another account's (whose ARNs are under
// that topic's), not those another account made to its topics.
func (s *Service) listSubscriptions(ctx context.Context, in *listInput) (*listSubscriptionsOutput, error) {
	account, r := s.accountOf(ctx), s.regionOf(ctx)
	s.mu.RLock()
	subs := make([]*subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		if sub.Owner == account && arnRegion(sub.ARN) == r {
			subs = append(subs, sub)
		}
	}
	s.mu.RUnlock()
	return listPage(subs, in.NextToken)
}

func (s *Service) listSubscriptionsByTopic(ctx context.Context, in *listSubscriptionsByTopicInput) (*listSubscriptionsOutput, error) {
	t, err := s.lookupTopic(ctx, in.TopicArn, "TopicArn", "ListSubscriptionsByTopic")
	if err != nil {
		return nil, err
	}
	return listPage(s.subscriptionsOf(t.ARN), in.NextToken)
}

func (s *Service) getSubscriptionAttributes(ctx context.Context, in *subscriptionArnInput) (*attributesOutput, error) {
	sub, err := s.lookupSubscription(ctx, in.SubscriptionArn, "GetSubscriptionAttributes")
	if err != nil {
		return nil, err
	}
	attrs := maps.Clone(sub.Attrs)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs[attrSubscriptionArn] = sub.ARN
	attrs[attrTopicArn] = sub.TopicARN
	attrs[attrOwner] = sub.Owner
	attrs[attrProtocol] = sub.Protocol
	attrs[attrEndpoint] = delivery.MaskEndpoint(sub.Endpoint)
	attrs[attrSubscriptionPrincipal] = "arn:" + arn.Partition(s.regionOf(ctx)) + ":iam::" + sub.Owner + ":root"
	attrs[attrPendingConfirmation] = boolString(sub.Pending)
	attrs[attrConfirmationWasAuthenticated] = boolString(sub.Authenticated)
	if _, ok := attrs[attrRawMessageDelivery]; !ok {
		attrs[attrRawMessageDelivery] = "false"
	}
	if _, ok := attrs[attrFilterPolicy]; ok && attrs[attrFilterPolicyScope] == "" {
		attrs[attrFilterPolicyScope] = filterpolicy.ScopeMessageAttributes
	}
	if sub.Protocol == delivery.ProtoHTTP || sub.Protocol == delivery.ProtoHTTPS {
		s.mu.RLock()
		t := s.topics[sub.TopicARN]
		s.mu.RUnlock()
		var dt *delivery.Topic // nil: the defaults
		if t != nil {
			dt = t.delivery
		}
		attrs[attrEffectiveDeliveryPolicy] = dt.EffectiveSubscriptionPolicy(sub.policy)
	}
	return &attributesOutput{Attributes: attrs}, nil
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func (s *Service) setSubscriptionAttributes(ctx context.Context, in *setSubscriptionAttributesInput) (*emptyOutput, error) {
	if _, err := s.checkSubscriptionARN(ctx, in.SubscriptionArn); err != nil {
		return nil, err
	}
	if in.AttributeName == "" {
		return nil, invalidParameter("AttributeName")
	}
	value := ""
	if in.AttributeValue != nil {
		value = *in.AttributeValue
	}
	err := s.retryRaces(ctx, "set subscription attributes", kindSubscription, in.SubscriptionArn, func() error {
		return s.setSubscriptionAttributeOnce(ctx, in.SubscriptionArn, in.AttributeName, value)
	})
	if err != nil {
		return nil, err
	}
	return &emptyOutput{}, nil
}

// setSubscriptionAttributeOnce sets one attribute. The caller holds
// writeMu.
func (s *Service) setSubscriptionAttributeOnce(ctx context.Context, arn, name, value string) error {
	sub, err := s.cachedSubscription(ctx, arn)
	if err != nil {
		return err
	}
	if err := s.authorizeSubscription(ctx, sub, "SetSubscriptionAttributes"); err != nil {
		return err
	}
	s.mu.RLock()
	t := s.topics[sub.TopicARN]
	s.mu.RUnlock()
	if t == nil {
		return errSubscriptionNotFound
	}
	sc := subContext{topic: t, protocol: sub.Protocol, endpoint: sub.Endpoint, scope: sub.Attrs[attrFilterPolicyScope]}
	v, err := checkSubscriptionAttribute(name, value, sc, false)
	if err != nil {
		return err
	}
	if name == attrFilterPolicyScope {
		// The policy in place must hold in the new scope.
		if fp := sub.Attrs[attrFilterPolicy]; fp != "" {
			if _, err := filterpolicy.Parse(fp, v); err != nil {
				return filterPolicyError(err, false)
			}
		}
	}
	if name == attrFilterPolicy && v != "" && sub.Attrs[attrFilterPolicy] == "" && s.filterPolicies(t.ARN, sub.ARN) >= maxFilterPolicies {
		return errFilterPolicyLimit
	}
	c := sub.clone()
	if c.Attrs == nil {
		c.Attrs = map[string]string{}
	}
	if v == "" {
		delete(c.Attrs, name)
	} else {
		c.Attrs[name] = v
	}
	if err := c.prepare(); err != nil {
		return s.internal(ctx, "prepare subscription", err)
	}
	if err := s.saveSubscription(ctx, c); err != nil {
		if err == errLostRace {
			return err
		}
		return s.internal(ctx, "set subscription attributes", err)
	}
	return nil
}

// ConfirmationToken returns a pending subscription's confirmation token,
// for endpoints that cannot receive their SubscriptionConfirmation (an
// address that does not reach them, email without SMTP).
func (s *Service) ConfirmationToken(subscriptionARN string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub := s.subs[subscriptionARN]
	if sub == nil || !sub.Pending || sub.Token == "" {
		return "", false
	}
	return sub.Token, true
}
