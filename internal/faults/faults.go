// Package faults decides which events fail on purpose: the rules of
// Ferry's fault injection, each a target (an SQS action on a queue, or an
// SNS delivery to a subscription, an endpoint or a protocol), a trigger
// (the next N matching events, or a fraction of them) and an effect (an
// AWS error or a delay for SQS; an HTTP status, a timeout, success only
// after K attempts, a lost or a doubled delivery, a client-side error for
// SNS).
//
// Decisions are reproducible: every rule draws from a PRNG of its own,
// seeded from the set's seed (or the rule's) and the rule's place among
// the rules added since the last Clear, so that the same events under the
// same seed meet the same faults. Rules live in the memory of the node
// that was given them.
package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/sigv4"
)

// Kinds of injected faults, as the metric's kind label names them.
const (
	KindError     = "error"
	KindDelay     = "delay"
	KindStatus    = "status"
	KindTimeout   = "timeout"
	KindDrop      = "drop"
	KindDuplicate = "duplicate"
	// KindClientError is a client-side delivery error (the endpoint is
	// gone, it may not be reached): no retry, the dead-letter queue.
	KindClientError = "client_error"
)

// Action groups a rule may name instead of one SQS action.
var actionGroups = map[string][]string{
	"receives": {"ReceiveMessage"},
	"sends":    {"SendMessage", "SendMessageBatch"},
	"deletes":  {"DeleteMessage", "DeleteMessageBatch"},
}

// snsProtocols are the protocols a rule may name.
var snsProtocols = map[string]bool{"http": true, "https": true, "email": true, "email-json": true, "sqs": true,
	"lambda": true, "sms": true, "application": true, "firehose": true}

// maxDelay bounds an SQS delay: longer than any client waits, short
// enough that a mistaken rule does not hold requests for days.
const maxDelay = time.Hour

// maxChosen bounds the messages a succeed-after rule remembers as failing.
const maxChosen = 100_000

// Rule is one fault rule, as the admin API reads and lists it.
type Rule struct {
	ID string `json:"id"`

	// SQS target: an action (a name, a group — receives, sends, deletes
	// — or empty for any) on a queue (a name, a URL or an ARN) or on any
	// queue of an account.
	Queue   string `json:"queue,omitempty"`
	Account string `json:"account,omitempty"`
	Action  string `json:"action,omitempty"`

	// SNS target: deliveries to a subscription, to an endpoint, or of a
	// protocol.
	Subscription string `json:"subscription,omitempty"`
	Endpoint     string `json:"endpoint,omitempty"`
	Protocol     string `json:"protocol,omitempty"`

	// Trigger: Count alone, the next Count matching events; Fraction
	// alone, each matching event with that probability; both, with that
	// probability until Count faults; neither, every matching event.
	Count    int      `json:"count,omitempty"`
	Fraction *float64 `json:"fraction,omitempty"`
	// Seed, when set, seeds this rule's PRNG instead of the set's seed.
	Seed *uint64 `json:"seed,omitempty"`

	// SQS effects: an AWS error by its code, a delay before the action
	// runs (a Go duration, or days: "1d"), or both.
	Error string `json:"error,omitempty"`
	Delay string `json:"delay,omitempty"`

	// SNS effects: the endpoint answers Status; it does not answer
	// (Timeout); the first SucceedAfter attempts of each chosen message
	// fail (with Status, default 500, or Timeout); the delivery is lost
	// (Drop) or made twice (Duplicate); it fails with a client-side error,
	// as to an endpoint that is gone (ClientError).
	Status       int  `json:"status,omitempty"`
	Timeout      bool `json:"timeout,omitempty"`
	SucceedAfter int  `json:"succeedAfter,omitempty"`
	Drop         bool `json:"drop,omitempty"`
	Duplicate    bool `json:"duplicate,omitempty"`
	ClientError  bool `json:"clientError,omitempty"`
}

// Service is the service a rule's target belongs to: "sqs" or "sns".
func (r *Rule) Service() string {
	if r.Subscription != "" || r.Endpoint != "" || r.Protocol != "" {
		return "sns"
	}
	return "sqs"
}

// RuleState is a rule with what it has done so far.
type RuleState struct {
	Rule
	// Matched counts the events the rule's target matched; Injected the
	// faults it injected (for succeedAfter, each failed attempt).
	Matched  int64 `json:"matched"`
	Injected int64 `json:"injected"`
	// Remaining is what is left of Count; absent without one.
	Remaining *int `json:"remaining,omitempty"`
	// EffectiveSeed is the seed the rule's PRNG started from.
	EffectiveSeed uint64 `json:"effectiveSeed"`
}

// Listing is the set as the admin API lists it.
type Listing struct {
	Seed  uint64      `json:"seed"`
	Rules []RuleState `json:"rules"`
}

// Options are what a Set checks rules against.
type Options struct {
	// Seed seeds the rules' PRNGs; nil picks one at random (the listing
	// shows it).
	Seed *uint64
	// SQSAction reports whether name is an SQS action.
	SQSAction func(name string) bool
	// SQSError reports whether code names an SQS error (its shape or its
	// query code).
	SQSError func(code string) bool
	// ParseQueueURL reads a queue URL: its account, name and region (""
	// when the URL names none).
	ParseQueueURL func(url string) (account, name, region string, ok bool)
}

// Set is the rules in force. Its methods are safe for concurrent use.
type Set struct {
	opts     Options
	injected *prometheus.CounterVec

	// active mirrors len(rules) > 0, read without the lock on every
	// request.
	active atomic.Bool

	mu    sync.Mutex
	seed  uint64
	rules []*rule // in the order added: the first that fires wins
	next  int     // ids
	slot  uint64  // rules added since the last Clear: a rule's PRNG stream
}

// rule is a Rule with its parsed target and its state.
type rule struct {
	Rule
	service string
	actions map[string]bool // nil: any action
	queue   queueRef
	delay   time.Duration
	rng     *rand.Rand
	seed    uint64

	matched, injected int64
	fired             int             // trigger firings, against Count
	chosen            map[string]bool // succeedAfter: the messages failing
}

// queueRef is a queue a rule names: each set field must match.
type queueRef struct{ account, region, name string }

// New returns an empty set.
func New(opts Options) *Set {
	s := &Set{opts: opts}
	if opts.Seed != nil {
		s.seed = *opts.Seed
	} else {
		s.seed = rand.Uint64()
	}
	s.injected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ferry_faults_injected_total",
		Help: "Faults injected on purpose (POST /_ferry/faults), by service and kind.",
	}, []string{"service", "kind"})
	return s
}

// Collector is ferry_faults_injected_total, for the server's registry.
func (s *Set) Collector() prometheus.Collector { return s.injected }

// Seed is the set's seed.
func (s *Set) Seed() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seed
}

// Add checks r and puts it in force; it returns the rule with its id.
// Errors are the caller's mistakes, worded for them.
func (s *Set) Add(r Rule) (RuleState, error) {
	in, err := s.compile(r)
	if err != nil {
		return RuleState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.slot++
	in.ID = "f" + strconv.Itoa(s.next)
	in.seed = s.seed
	if r.Seed != nil {
		in.seed = *r.Seed
	}
	// The slot makes rules added under one seed draw different streams,
	// and a rule added in the same place after a Clear draw the same.
	stream := s.slot
	if r.Seed != nil {
		stream = 0
	}
	in.rng = rand.New(rand.NewPCG(in.seed, stream))
	s.rules = append(s.rules, in)
	s.active.Store(true)
	return in.state(), nil
}

// Remove takes rule id out of force; false when there is none.
func (s *Set) Remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if r.ID == id {
			s.rules = append(s.rules[:i], s.rules[i+1:]...)
			s.active.Store(len(s.rules) > 0)
			return true
		}
	}
	return false
}

// Clear takes every rule out of force and returns how many there were.
// Rules added next draw as the first rules of the set did.
func (s *Set) Clear() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.rules)
	s.rules = nil
	s.active.Store(false)
	s.slot = 0
	return n
}

// List is the rules in force and the seed.
func (s *Set) List() Listing {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := Listing{Seed: s.seed, Rules: make([]RuleState, 0, len(s.rules))}
	for _, r := range s.rules {
		l.Rules = append(l.Rules, r.state())
	}
	return l
}

func (r *rule) state() RuleState {
	st := RuleState{Rule: r.Rule, Matched: r.matched, Injected: r.injected, EffectiveSeed: r.seed}
	if r.Count > 0 {
		left := r.Count - r.fired
		st.Remaining = &left
	}
	return st
}

// Active reports whether any rule is in force, so that callers skip the
// work of describing an event when none is.
func (s *Set) Active() bool {
	return s != nil && s.active.Load()
}

// fires draws the trigger of a rule whose target matched; the caller holds
// s.mu.
func (r *rule) fires() bool {
	r.matched++
	if r.Count > 0 && r.fired >= r.Count {
		return false
	}
	if r.Fraction != nil && r.rng.Float64() >= *r.Fraction {
		return false
	}
	r.fired++
	return true
}

// count records an injected fault of kind.
func (s *Set) count(r *rule, kind string) {
	r.injected++
	s.injected.WithLabelValues(r.service, kind).Inc()
}

// SQSEvent is one SQS action on its way to run.
type SQSEvent struct {
	Action string
	// Account, Region and Queue name the queue the action is on; Queue is
	// empty for an action on none (ListQueues).
	Account, Region, Queue string
}

// SQSFault is what an SQS action meets: an error by its code, a delay
// before it runs, or both. The zero value is no fault.
type SQSFault struct {
	Rule  string
	Error string
	Delay time.Duration
}

// SQS decides the fault ev meets, and counts it.
func (s *Set) SQS(ev SQSEvent) SQSFault {
	if s == nil {
		return SQSFault{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if r.service != "sqs" || !r.matchesSQS(ev) || !r.fires() {
			continue
		}
		if r.delay > 0 {
			s.count(r, KindDelay)
		}
		if r.Error != "" {
			s.count(r, KindError)
		}
		return SQSFault{Rule: r.ID, Error: r.Error, Delay: r.delay}
	}
	return SQSFault{}
}

func (r *rule) matchesSQS(ev SQSEvent) bool {
	if r.actions != nil && !r.actions[ev.Action] {
		return false
	}
	q := r.queue
	if q.name != "" && q.name != ev.Queue {
		return false
	}
	return (q.account == "" || q.account == ev.Account) && (q.region == "" || q.region == ev.Region)
}

// SNSEvent is one attempt to deliver a notification.
type SNSEvent struct {
	Subscription, Endpoint, Protocol string
	MessageID                        string
	// Attempt counts from 1.
	Attempt int
}

// SNSFault is what a delivery attempt meets. The zero value is no fault.
type SNSFault struct {
	Rule string
	// Kind is KindStatus, KindTimeout, KindDrop, KindDuplicate or
	// KindClientError; "" is no fault.
	Kind   string
	Status int
}

// SNS decides the fault the attempt ev meets, and counts it.
func (s *Set) SNS(ev SNSEvent) SNSFault {
	if s == nil {
		return SNSFault{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if r.service != "sns" || !r.matchesSNS(ev) {
			continue
		}
		if f, ok := s.decideSNS(r, ev); ok {
			return f
		}
	}
	return SNSFault{}
}

// decideSNS is rule r's decision on ev, whose target it matches.
func (s *Set) decideSNS(r *rule, ev SNSEvent) (SNSFault, bool) {
	if r.SucceedAfter > 0 {
		// The trigger picks messages at their first attempt; a picked
		// message fails until its attempts pass SucceedAfter.
		picked := r.chosen[ev.MessageID]
		if !picked {
			if ev.Attempt != 1 || len(r.chosen) >= maxChosen || !r.fires() {
				if ev.Attempt != 1 {
					r.matched++
				}
				return SNSFault{}, false
			}
			r.chosen[ev.MessageID] = true
		} else {
			r.matched++
		}
		if ev.Attempt > r.SucceedAfter {
			delete(r.chosen, ev.MessageID)
			return SNSFault{}, false
		}
		return s.failure(r), true
	}
	if !r.fires() {
		return SNSFault{}, false
	}
	switch {
	case r.Drop:
		s.count(r, KindDrop)
		return SNSFault{Rule: r.ID, Kind: KindDrop}, true
	case r.Duplicate:
		s.count(r, KindDuplicate)
		return SNSFault{Rule: r.ID, Kind: KindDuplicate}, true
	case r.ClientError:
		s.count(r, KindClientError)
		return SNSFault{Rule: r.ID, Kind: KindClientError}, true
	}
	return s.failure(r), true
}

// failure is r's failing attempt: a timeout or a status.
func (s *Set) failure(r *rule) SNSFault {
	if r.Timeout {
		s.count(r, KindTimeout)
		return SNSFault{Rule: r.ID, Kind: KindTimeout}
	}
	s.count(r, KindStatus)
	status := r.Status
	if status == 0 {
		status = 500
	}
	return SNSFault{Rule: r.ID, Kind: KindStatus, Status: status}
}

func (r *rule) matchesSNS(ev SNSEvent) bool {
	return (r.Subscription == "" || r.Subscription == ev.Subscription) &&
		(r.Endpoint == "" || r.Endpoint == ev.Endpoint) &&
		(r.Protocol == "" || r.Protocol == ev.Protocol)
}

// compile checks r and parses its target and effect.
func (s *Set) compile(r Rule) (*rule, error) {
	in := &rule{Rule: r, service: r.Service()}
	in.ID = ""
	if r.Count < 0 {
		return nil, fmt.Errorf("count %d: want a number of events, 1 or more", r.Count)
	}
	if f := r.Fraction; f != nil && !(*f >= 0 && *f <= 1) {
		return nil, fmt.Errorf("fraction %v: want a probability from 0 to 1", *f)
	}
	sqsSet := r.Queue != "" || r.Account != "" || r.Action != "" || r.Error != "" || r.Delay != ""
	if in.service == "sns" {
		if sqsSet {
			return nil, errors.New("a rule targets SQS (queue, account, action; error, delay) or SNS deliveries (subscription, endpoint, protocol; status, timeout, succeedAfter, drop, duplicate, clientError), not both")
		}
		return in, s.compileSNS(in)
	}
	if r.Status != 0 || r.Timeout || r.SucceedAfter != 0 || r.Drop || r.Duplicate || r.ClientError {
		return nil, errors.New("status, timeout, succeedAfter, drop, duplicate and clientError are effects on SNS deliveries: name a subscription, an endpoint or a protocol")
	}
	return in, s.compileSQS(in)
}

func (s *Set) compileSQS(in *rule) error {
	r := &in.Rule
	switch a := r.Action; {
	case a == "" || a == "*":
	case actionGroups[a] != nil:
		in.actions = map[string]bool{}
		for _, name := range actionGroups[a] {
			in.actions[name] = true
		}
	case s.opts.SQSAction != nil && s.opts.SQSAction(a):
		in.actions = map[string]bool{a: true}
	default:
		return fmt.Errorf("action %q is not an SQS action nor a group (receives, sends, deletes)", a)
	}
	if r.Account != "" && !sigv4.IsAccountID(r.Account) {
		return fmt.Errorf("account %q is not an account id (12 digits)", r.Account)
	}
	if r.Queue != "" {
		q, err := s.parseQueue(r.Queue)
		if err != nil {
			return err
		}
		if r.Account != "" && q.account != "" && q.account != r.Account {
			return fmt.Errorf("queue %q is of account %s, not %s", r.Queue, q.account, r.Account)
		}
		in.queue = q
	}
	if in.queue.account == "" {
		in.queue.account = r.Account
	}
	if r.Error == "" && r.Delay == "" {
		return errors.New("an SQS rule needs an effect: error (an SQS error code), delay, or both")
	}
	if r.Error != "" && (s.opts.SQSError == nil || !s.opts.SQSError(r.Error)) {
		return fmt.Errorf("error %q is not an SQS error code (for throttling: RequestThrottled)", r.Error)
	}
	if r.Delay != "" {
		d, err := clock.ParseDuration(r.Delay)
		if err != nil {
			return fmt.Errorf("delay: %w", err)
		}
		if d <= 0 || d > maxDelay {
			return fmt.Errorf("delay %s: want more than 0 and at most %s", r.Delay, maxDelay)
		}
		in.delay = d
	}
	return nil
}

// parseQueue reads a queue named by its name, URL or ARN.
func (s *Set) parseQueue(ref string) (queueRef, error) {
	if a, ok := arn.Parse(ref); ok {
		if a.Service != "sqs" || !a.Six() || !sigv4.IsAccountID(a.Account) {
			return queueRef{}, fmt.Errorf("queue %q is not an SQS queue's ARN", ref)
		}
		return queueRef{account: a.Account, region: a.Region, name: a.Resource}, nil
	}
	if strings.Contains(ref, "/") {
		if s.opts.ParseQueueURL != nil {
			if account, name, region, ok := s.opts.ParseQueueURL(ref); ok {
				return queueRef{account: account, region: region, name: name}, nil
			}
		}
		return queueRef{}, fmt.Errorf("queue %q is not a queue URL", ref)
	}
	return queueRef{name: ref}, nil
}

func (s *Set) compileSNS(in *rule) error {
	r := &in.Rule
	if r.Subscription != "" {
		if a, ok := arn.Parse(r.Subscription); !ok || a.Service != "sns" {
			return fmt.Errorf("subscription %q is not an SNS subscription's ARN", r.Subscription)
		}
	}
	if r.Protocol != "" && !snsProtocols[r.Protocol] {
		return fmt.Errorf("protocol %q is not an SNS protocol (http, https, email, email-json, sqs, lambda, sms, application, firehose)", r.Protocol)
	}
	effects := 0
	for _, on := range []bool{r.Status != 0 && r.SucceedAfter == 0, r.Timeout && r.SucceedAfter == 0, r.SucceedAfter != 0, r.Drop, r.Duplicate, r.ClientError} {
		if on {
			effects++
		}
	}
	if effects != 1 {
		return errors.New("an SNS rule needs one effect: status, timeout, succeedAfter (with status or timeout), drop, duplicate or clientError")
	}
	if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
		return fmt.Errorf("status %d: want an HTTP status, 100 to 599", r.Status)
	}
	if r.SucceedAfter < 0 {
		return fmt.Errorf("succeedAfter %d: want the number of attempts that fail, 1 or more", r.SucceedAfter)
	}
	if r.SucceedAfter > 0 {
		if r.Status != 0 && r.Timeout {
			return errors.New("succeedAfter fails its attempts with status or with timeout, not both")
		}
		in.chosen = map[string]bool{}
	}
	return nil
}
