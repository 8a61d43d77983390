package delivery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/sns/snsjson"
)

// Delivery policies (HTTP/S only): a topic's DeliveryPolicy gives defaults
// under "http", a subscription's overrides them unless the topic disables
// overrides. The structs keep AWS's key order; nil members print as null
// or are left out, as AWS does for each.

type retryPolicy struct {
	MinDelayTarget     *int    `json:"minDelayTarget,omitempty"`
	MaxDelayTarget     *int    `json:"maxDelayTarget,omitempty"`
	NumRetries         *int    `json:"numRetries,omitempty"`
	NumMaxDelayRetries *int    `json:"numMaxDelayRetries,omitempty"`
	NumNoDelayRetries  *int    `json:"numNoDelayRetries,omitempty"`
	NumMinDelayRetries *int    `json:"numMinDelayRetries,omitempty"`
	BackoffFunction    *string `json:"backoffFunction,omitempty"`
}

type throttlePolicy struct {
	MaxReceivesPerSecond *int `json:"maxReceivesPerSecond,omitempty"`
}

type requestPolicy struct {
	HeaderContentType *string `json:"headerContentType,omitempty"`
}

// SubscriptionPolicy is a subscription's DeliveryPolicy as SNS stores it:
// always the five keys.
type SubscriptionPolicy struct {
	HealthyRetryPolicy *retryPolicy    `json:"healthyRetryPolicy"`
	SicklyRetryPolicy  json.RawMessage `json:"sicklyRetryPolicy"`
	ThrottlePolicy     *throttlePolicy `json:"throttlePolicy"`
	RequestPolicy      *requestPolicy  `json:"requestPolicy"`
	Guaranteed         bool            `json:"guaranteed"`
}

type topicHTTPPolicy struct {
	DefaultHealthyRetryPolicy    *retryPolicy    `json:"defaultHealthyRetryPolicy,omitempty"`
	DisableSubscriptionOverrides *bool           `json:"disableSubscriptionOverrides,omitempty"`
	DefaultThrottlePolicy        *throttlePolicy `json:"defaultThrottlePolicy,omitempty"`
	DefaultRequestPolicy         *requestPolicy  `json:"defaultRequestPolicy,omitempty"`
}

// topicPolicy is a topic's DeliveryPolicy.
type topicPolicy struct {
	HTTP *topicHTTPPolicy `json:"http,omitempty"`
}

// Backoff functions.
const (
	backoffArithmetic  = "arithmetic"
	backoffExponential = "exponential"
	backoffGeometric   = "geometric"
	backoffLinear      = "linear"
)

// Limits of an HTTP/S retry policy.
const (
	maxDelayTargetLimit = 3600
	maxNumRetries       = 100
	maxRetryTime        = 3600 // seconds, all retries together
)

// schedule is a complete retry policy: the phases a failed delivery goes
// through before it is given up.
type schedule struct {
	MinDelay, MaxDelay                        int // seconds
	Retries                                   int
	NoDelay, MinDelayRetries, MaxDelayRetries int
	Backoff                                   string
}

// The built-in policies (sns.md §7.1).
var (
	// httpDefault is the HTTP/S default: three retries 20 s apart.
	httpDefault = schedule{MinDelay: 20, MaxDelay: 20, Retries: 3, Backoff: backoffLinear}
	// customerManaged serves email and SMS: 2 × 10 s, 10 exponential
	// 10 → 600 s, 38 × 600 s.
	customerManaged = schedule{MinDelay: 10, MaxDelay: 600, Retries: 50, MinDelayRetries: 2, MaxDelayRetries: 38, Backoff: backoffExponential}
	// awsManaged serves SQS, Lambda and Firehose: 3 immediate retries,
	// 2 × 1 s, 10 exponential 1 → 20 s, then 20 s apart, 100,015 attempts
	// in all, the first among them (about 23 days).
	awsManaged = schedule{MinDelay: 1, MaxDelay: 20, Retries: 100_014, NoDelay: 3, MinDelayRetries: 2, MaxDelayRetries: 99_999, Backoff: backoffExponential}
)

// atOncePolicy is the schedule of the retries of a protocol SNS delivers
// at once (not NeedsQueue): AWS-managed, but for SMS and mobile push.
func atOncePolicy(protocol string) schedule {
	switch protocol {
	case ProtoSMS, ProtoApplication:
		return customerManaged
	}
	return awsManaged
}

func (p schedule) retryPolicy() *retryPolicy {
	return &retryPolicy{
		MinDelayTarget: ptr(p.MinDelay), MaxDelayTarget: ptr(p.MaxDelay), NumRetries: ptr(p.Retries),
		NumMaxDelayRetries: ptr(p.MaxDelayRetries), NumNoDelayRetries: ptr(p.NoDelay), NumMinDelayRetries: ptr(p.MinDelayRetries),
		BackoffFunction: ptr(p.Backoff),
	}
}

// merged overrides p's fields with those rp gives.
func (p schedule) merged(rp *retryPolicy) schedule {
	if rp == nil {
		return p
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.MinDelay, rp.MinDelayTarget)
	set(&p.MaxDelay, rp.MaxDelayTarget)
	set(&p.Retries, rp.NumRetries)
	set(&p.NoDelay, rp.NumNoDelayRetries)
	set(&p.MinDelayRetries, rp.NumMinDelayRetries)
	set(&p.MaxDelayRetries, rp.NumMaxDelayRetries)
	if rp.BackoffFunction != nil {
		p.Backoff = *rp.BackoffFunction
	}
	return p
}

// backoffRetries is how many retries the backoff phase holds.
func (p schedule) backoffRetries() int {
	return p.Retries - p.NoDelay - p.MinDelayRetries - p.MaxDelayRetries
}

// delaySeconds is the wait before retry r (1-based): immediate retries,
// then minDelay apart, then the backoff curve from minDelay to maxDelay,
// then maxDelay apart.
func (p schedule) delaySeconds(r int) int {
	switch {
	case r <= p.NoDelay:
		return 0
	case r <= p.NoDelay+p.MinDelayRetries:
		return p.MinDelay
	}
	n := p.backoffRetries()
	k := r - p.NoDelay - p.MinDelayRetries - 1
	if k >= n {
		return p.MaxDelay
	}
	return backoffDelay(p.Backoff, p.MinDelay, p.MaxDelay, k, n)
}

// backoffDelay is the k-th of n delays moving from lo to hi. AWS publishes
// only a graph of its curves; these follow its shapes: linear a straight
// line, arithmetic a slow quadratic start, geometric a constant ratio,
// exponential doubling steps.
func backoffDelay(fn string, lo, hi, k, n int) int {
	if n <= 1 || hi <= lo {
		return lo
	}
	m, M := float64(lo), float64(hi)
	t := float64(k) / float64(n-1)
	var d float64
	switch fn {
	case backoffArithmetic:
		d = m + (M-m)*t*t
	case backoffGeometric:
		d = m * math.Pow(M/m, t)
	case backoffExponential:
		d = m + (M-m)*(math.Pow(2, float64(k))-1)/(math.Pow(2, float64(n-1))-1)
	default:
		d = m + (M-m)*t
	}
	return int(math.Round(d))
}

// totalSeconds is the time all retries take together.
func (p schedule) totalSeconds() int {
	total := 0
	for r := 1; r <= p.Retries; r++ {
		total += p.delaySeconds(r)
	}
	return total
}

// delay is the wait before retry r with jitter applied.
func (p schedule) delay(r int, jitter func(time.Duration) time.Duration) time.Duration {
	d := time.Duration(p.delaySeconds(r)) * time.Second
	if d > 0 && jitter != nil {
		d = jitter(d)
	}
	return d
}

// policyError is a DeliveryPolicy problem; the action words the prefix.
type policyError struct{ reason string }

func (e *policyError) Error() string { return "DeliveryPolicy: " + e.reason }

func policyErrorf(format string, args ...any) *policyError {
	return &policyError{reason: fmt.Sprintf(format, args...)}
}

// check validates a complete schedule; path names the policy object in
// messages ("healthyRetryPolicy").
func (p schedule) check(path string) *policyError {
	switch {
	case p.MinDelay < 1:
		return policyErrorf("%s.minDelayTarget must be greater than or equal to 1", path)
	case p.MaxDelay > maxDelayTargetLimit:
		return policyErrorf("%s.maxDelayTarget must be less than or equal to %d", path, maxDelayTargetLimit)
	case p.MaxDelay < p.MinDelay:
		return policyErrorf("%s.maxDelayTarget must be greater than or equal to minDelayTarget", path)
	case p.Retries < 0:
		return policyErrorf("%s.numRetries must be greater than or equal to 0", path)
	case p.Retries > maxNumRetries:
		return policyErrorf("%s.numRetries must be less than or equal to %d", path, maxNumRetries)
	case p.NoDelay < 0:
		return policyErrorf("%s.numNoDelayRetries must be greater than or equal to 0", path)
	case p.MinDelayRetries < 0:
		return policyErrorf("%s.numMinDelayRetries must be greater than or equal to 0", path)
	case p.MaxDelayRetries < 0:
		return policyErrorf("%s.numMaxDelayRetries must be greater than or equal to 0", path)
	case p.backoffRetries() < 0:
		return policyErrorf("%s.numRetries must be greater than or equal to numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries", path)
	case !slices.Contains([]string{backoffArithmetic, backoffExponential, backoffGeometric, backoffLinear}, p.Backoff):
		return policyErrorf("%s.backoffFunction must be one of arithmetic, exponential, geometric, linear", path)
	case p.totalSeconds() > maxRetryTime:
		return policyErrorf("%s: the total time of all retries must be less than or equal to %d seconds", path, maxRetryTime)
	}
	return nil
}

// jsonObject decodes an object's members, refusing anything else.
func jsonObject(raw json.RawMessage, path string) (map[string]json.RawMessage, *policyError) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		if path == "" {
			return nil, policyErrorf("failed to parse JSON.")
		}
		return nil, policyErrorf("%s must be an object", path)
	}
	return m, nil
}

func jsonInt(raw json.RawMessage, path string) (*int, *policyError) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return nil, policyErrorf("%s must be an integer", path)
	}
	return ptr(int(f)), nil
}

func jsonString(raw json.RawMessage, path string) (*string, *policyError) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, policyErrorf("%s must be a string", path)
	}
	return &s, nil
}

// parseRetryPolicy reads the members a retry policy gives; the caller
// checks the merged result. Unknown members are ignored.
func parseRetryPolicy(raw json.RawMessage, path string) (*retryPolicy, *policyError) {
	if snsjson.IsNull(raw) {
		return nil, nil
	}
	m, perr := jsonObject(raw, path)
	if perr != nil {
		return nil, perr
	}
	rp := &retryPolicy{}
	ints := []struct {
		name string
		dst  **int
	}{
		{"minDelayTarget", &rp.MinDelayTarget}, {"maxDelayTarget", &rp.MaxDelayTarget}, {"numRetries", &rp.NumRetries},
		{"numMaxDelayRetries", &rp.NumMaxDelayRetries}, {"numNoDelayRetries", &rp.NumNoDelayRetries}, {"numMinDelayRetries", &rp.NumMinDelayRetries},
	}
	for _, f := range ints {
		if v, ok := m[f.name]; ok && !snsjson.IsNull(v) {
			if *f.dst, perr = jsonInt(v, path+"."+f.name); perr != nil {
				return nil, perr
			}
		}
	}
	if v, ok := m["backoffFunction"]; ok && !snsjson.IsNull(v) {
		if rp.BackoffFunction, perr = jsonString(v, path+".backoffFunction"); perr != nil {
			return nil, perr
		}
		*rp.BackoffFunction = strings.ToLower(*rp.BackoffFunction)
	}
	return rp, nil
}

func parseThrottlePolicy(raw json.RawMessage, path string) (*throttlePolicy, *policyError) {
	if snsjson.IsNull(raw) {
		return nil, nil
	}
	m, perr := jsonObject(raw, path)
	if perr != nil {
		return nil, perr
	}
	tp := &throttlePolicy{}
	if v, ok := m["maxReceivesPerSecond"]; ok && !snsjson.IsNull(v) {
		if tp.MaxReceivesPerSecond, perr = jsonInt(v, path+".maxReceivesPerSecond"); perr != nil {
			return nil, perr
		}
		if *tp.MaxReceivesPerSecond < 1 {
			return nil, policyErrorf("%s.maxReceivesPerSecond must be greater than or equal to 1", path)
		}
	}
	return tp, nil
}

func parseRequestPolicy(raw json.RawMessage, path string) (*requestPolicy, *policyError) {
	if snsjson.IsNull(raw) {
		return nil, nil
	}
	m, perr := jsonObject(raw, path)
	if perr != nil {
		return nil, perr
	}
	rq := &requestPolicy{}
	if v, ok := m["headerContentType"]; ok && !snsjson.IsNull(v) {
		if rq.HeaderContentType, perr = jsonString(v, path+".headerContentType"); perr != nil {
			return nil, perr
		}
		if strings.TrimSpace(*rq.HeaderContentType) == "" || strings.ContainsAny(*rq.HeaderContentType, "\r\n") {
			return nil, policyErrorf("%s.headerContentType is not a valid content type", path)
		}
	}
	return rq, nil
}

// ParseSubscriptionPolicy validates a subscription's DeliveryPolicy; its
// String is the policy as SNS stores it. An error words the problem after
// "DeliveryPolicy: ".
func ParseSubscriptionPolicy(raw string) (*SubscriptionPolicy, error) {
	p, perr := parseSubscriptionPolicy(raw)
	if perr != nil {
		return nil, perr
	}
	return p, nil
}

// String is the policy normalised, as SNS stores it.
func (p *SubscriptionPolicy) String() string { return mustJSON(p) }

// CheckTopicPolicy validates a topic's DeliveryPolicy, as
// ParseSubscriptionPolicy does a subscription's.
func CheckTopicPolicy(raw string) error {
	if _, perr := parseTopicPolicy(raw); perr != nil {
		return perr
	}
	return nil
}

func parseSubscriptionPolicy(raw string) (*SubscriptionPolicy, *policyError) {
	m, perr := jsonObject(json.RawMessage(raw), "")
	if perr != nil {
		return nil, perr
	}
	p := &SubscriptionPolicy{}
	if p.HealthyRetryPolicy, perr = parseRetryPolicy(m["healthyRetryPolicy"], "healthyRetryPolicy"); perr != nil {
		return nil, perr
	}
	if p.HealthyRetryPolicy != nil {
		if perr := httpDefault.merged(p.HealthyRetryPolicy).check("healthyRetryPolicy"); perr != nil {
			return nil, perr
		}
	}
	if v := m["sicklyRetryPolicy"]; !snsjson.IsNull(v) {
		// Deprecated; kept as given for compatibility.
		if _, perr := jsonObject(v, "sicklyRetryPolicy"); perr != nil {
			return nil, perr
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v); err == nil {
			p.SicklyRetryPolicy = b.Bytes()
		}
	}
	if p.ThrottlePolicy, perr = parseThrottlePolicy(m["throttlePolicy"], "throttlePolicy"); perr != nil {
		return nil, perr
	}
	if p.RequestPolicy, perr = parseRequestPolicy(m["requestPolicy"], "requestPolicy"); perr != nil {
		return nil, perr
	}
	if v, ok := m["guaranteed"]; ok && !snsjson.IsNull(v) {
		if err := json.Unmarshal(v, &p.Guaranteed); err != nil {
			return nil, policyErrorf("guaranteed must be a boolean")
		}
	}
	return p, nil
}

// parseTopicPolicy validates a topic's DeliveryPolicy.
func parseTopicPolicy(raw string) (*topicPolicy, *policyError) {
	m, perr := jsonObject(json.RawMessage(raw), "")
	if perr != nil {
		return nil, perr
	}
	tp := &topicPolicy{}
	v, ok := m["http"]
	if !ok || snsjson.IsNull(v) {
		return tp, nil
	}
	hm, perr := jsonObject(v, "http")
	if perr != nil {
		return nil, perr
	}
	h := &topicHTTPPolicy{}
	if h.DefaultHealthyRetryPolicy, perr = parseRetryPolicy(hm["defaultHealthyRetryPolicy"], "http.defaultHealthyRetryPolicy"); perr != nil {
		return nil, perr
	}
	if h.DefaultHealthyRetryPolicy != nil {
		if perr := httpDefault.merged(h.DefaultHealthyRetryPolicy).check("http.defaultHealthyRetryPolicy"); perr != nil {
			return nil, perr
		}
	}
	if v, ok := hm["disableSubscriptionOverrides"]; ok && !snsjson.IsNull(v) {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, policyErrorf("http.disableSubscriptionOverrides must be a boolean")
		}
		h.DisableSubscriptionOverrides = &b
	}
	if h.DefaultThrottlePolicy, perr = parseThrottlePolicy(hm["defaultThrottlePolicy"], "http.defaultThrottlePolicy"); perr != nil {
		return nil, perr
	}
	if h.DefaultRequestPolicy, perr = parseRequestPolicy(hm["defaultRequestPolicy"], "http.defaultRequestPolicy"); perr != nil {
		return nil, perr
	}
	tp.HTTP = h
	return tp, nil
}

// effectiveHTTP is what a topic's policy (nil: none) makes of the defaults.
type effectiveHTTP struct {
	retry            schedule
	disableOverrides bool
	maxPerSecond     int // 0: unthrottled
	contentType      string
	throttleGiven    bool
}

func (tp *topicPolicy) effective() effectiveHTTP {
	e := effectiveHTTP{retry: httpDefault, contentType: defaultContentType}
	if tp == nil || tp.HTTP == nil {
		return e
	}
	h := tp.HTTP
	e.retry = e.retry.merged(h.DefaultHealthyRetryPolicy)
	if h.DisableSubscriptionOverrides != nil {
		e.disableOverrides = *h.DisableSubscriptionOverrides
	}
	if h.DefaultThrottlePolicy != nil && h.DefaultThrottlePolicy.MaxReceivesPerSecond != nil {
		e.maxPerSecond, e.throttleGiven = *h.DefaultThrottlePolicy.MaxReceivesPerSecond, true
	}
	if h.DefaultRequestPolicy != nil && h.DefaultRequestPolicy.HeaderContentType != nil {
		e.contentType = *h.DefaultRequestPolicy.HeaderContentType
	}
	return e
}

// EffectivePolicy is the topic's EffectiveDeliveryPolicy attribute.
func (t *Topic) EffectivePolicy() string { return t.policy.effective().topicJSON() }

// EffectiveSubscriptionPolicy is the EffectiveDeliveryPolicy attribute of
// an HTTP/S subscription of t with policy p (nil: none); t may be nil.
func (t *Topic) EffectiveSubscriptionPolicy(p *SubscriptionPolicy) string {
	return t.policyFor(p).json()
}

// policyFor is the policy an HTTP/S subscription of t with policy p
// follows.
func (t *Topic) policyFor(p *SubscriptionPolicy) subscriptionDelivery {
	var tp *topicPolicy
	if t != nil {
		tp = t.policy
	}
	return tp.effective().forSubscription(p)
}

// topicJSON is the EffectiveDeliveryPolicy of a topic.
func (e effectiveHTTP) topicJSON() string {
	h := topicHTTPPolicy{
		DefaultHealthyRetryPolicy:    e.retry.retryPolicy(),
		DisableSubscriptionOverrides: ptr(e.disableOverrides),
		DefaultRequestPolicy:         &requestPolicy{HeaderContentType: ptr(e.contentType)},
	}
	if e.throttleGiven {
		h.DefaultThrottlePolicy = &throttlePolicy{MaxReceivesPerSecond: ptr(e.maxPerSecond)}
	}
	return mustJSON(topicPolicy{HTTP: &h})
}

// subscriptionDelivery is the delivery policy a subscription runs on.
type subscriptionDelivery struct {
	retry        schedule
	maxPerSecond int
	contentType  string
	throttle     bool // a throttle policy applies
	sickly       json.RawMessage
	guaranteed   bool
}

// forSubscription merges a subscription's policy (nil: none) over the
// topic's effective one.
func (e effectiveHTTP) forSubscription(sp *SubscriptionPolicy) subscriptionDelivery {
	d := subscriptionDelivery{retry: e.retry, maxPerSecond: e.maxPerSecond, contentType: e.contentType, throttle: e.throttleGiven}
	if sp == nil || e.disableOverrides {
		return d
	}
	d.retry = d.retry.merged(sp.HealthyRetryPolicy)
	if sp.ThrottlePolicy != nil && sp.ThrottlePolicy.MaxReceivesPerSecond != nil {
		d.maxPerSecond, d.throttle = *sp.ThrottlePolicy.MaxReceivesPerSecond, true
	}
	if sp.RequestPolicy != nil && sp.RequestPolicy.HeaderContentType != nil {
		d.contentType = *sp.RequestPolicy.HeaderContentType
	}
	d.sickly, d.guaranteed = sp.SicklyRetryPolicy, sp.Guaranteed
	return d
}

// json is the subscription's EffectiveDeliveryPolicy attribute.
func (d subscriptionDelivery) json() string {
	p := SubscriptionPolicy{
		HealthyRetryPolicy: d.retry.retryPolicy(),
		SicklyRetryPolicy:  d.sickly,
		RequestPolicy:      &requestPolicy{HeaderContentType: ptr(d.contentType)},
		Guaranteed:         d.guaranteed,
	}
	if d.throttle {
		p.ThrottlePolicy = &throttlePolicy{MaxReceivesPerSecond: ptr(d.maxPerSecond)}
	}
	return mustJSON(p)
}

func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // only fixed, encodable types come here
	return strings.TrimSuffix(b.String(), "\n")
}

func ptr[T any](v T) *T { return &v }
