package faults

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func ptr[T any](v T) *T { return &v }

// injected reads ferry_faults_injected_total{service,kind}.
func injected(s *Set, service, kind string) float64 {
	var m dto.Metric
	_ = s.injected.WithLabelValues(service, kind).Write(&m)
	return m.GetCounter().GetValue()
}

func testSet(seed uint64) *Set {
	return New(Options{
		Seed: &seed,
		SQSAction: func(name string) bool {
			return name == "ReceiveMessage" || name == "SendMessage" || name == "ListQueues"
		},
		SQSError: func(code string) bool { return code == "RequestThrottled" || code == "QueueDoesNotExist" },
		ParseQueueURL: func(u string) (string, string, string, bool) {
			// http://host/ACCOUNT/NAME
			parts := strings.Split(u, "/")
			if len(parts) < 5 {
				return "", "", "", false
			}
			return parts[3], parts[4], "", true
		},
	})
}

func TestAddRejects(t *testing.T) {
	cases := []struct {
		name string
		rule Rule
		want string
	}{
		{"unknown action", Rule{Queue: "q", Action: "ReceiveMessages", Error: "RequestThrottled"}, `action "ReceiveMessages" is not an SQS action`},
		{"unknown error", Rule{Queue: "q", Error: "Throttled"}, `error "Throttled" is not an SQS error code`},
		{"fraction above 1", Rule{Queue: "q", Error: "RequestThrottled", Fraction: ptr(1.5)}, "fraction 1.5: want a probability from 0 to 1"},
		{"fraction below 0", Rule{Queue: "q", Error: "RequestThrottled", Fraction: ptr(-0.1)}, "want a probability"},
		{"negative count", Rule{Queue: "q", Error: "RequestThrottled", Count: -1}, "count -1"},
		{"no SQS effect", Rule{Queue: "q"}, "an SQS rule needs an effect"},
		{"bad delay", Rule{Queue: "q", Delay: "soon"}, `duration "soon": want a Go duration`},
		{"delay too long", Rule{Queue: "q", Delay: "2d"}, "at most 1h0m0s"},
		{"bad account", Rule{Account: "12", Error: "RequestThrottled"}, `account "12" is not an account id`},
		{"not a queue ARN", Rule{Queue: "arn:aws:sns:us-east-1:000000000000:t", Error: "RequestThrottled"}, "is not an SQS queue's ARN"},
		{"bad queue URL", Rule{Queue: "http://x/", Error: "RequestThrottled"}, "is not a queue URL"},
		{"queue of another account", Rule{Queue: "arn:aws:sqs:us-east-1:111111111111:q", Account: "222222222222", Error: "RequestThrottled"}, "is of account 111111111111"},
		{"both services", Rule{Queue: "q", Protocol: "http", Status: 500}, "not both"},
		{"SNS effect on SQS", Rule{Queue: "q", Drop: true}, "effects on SNS deliveries"},
		{"no SNS effect", Rule{Protocol: "http"}, "an SNS rule needs one effect"},
		{"two SNS effects", Rule{Protocol: "http", Drop: true, Duplicate: true}, "an SNS rule needs one effect"},
		{"bad status", Rule{Protocol: "http", Status: 700}, "status 700"},
		{"bad protocol", Rule{Protocol: "ftp", Drop: true}, `protocol "ftp" is not an SNS protocol`},
		{"bad subscription", Rule{Subscription: "nope", Drop: true}, "is not an SNS subscription's ARN"},
		{"succeedAfter both", Rule{Protocol: "http", SucceedAfter: 2, Status: 500, Timeout: true}, "not both"},
	}
	s := testSet(1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Add(tc.rule)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Add = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if n := len(s.List().Rules); n != 0 {
		t.Errorf("%d rules in force after refusals", n)
	}
}

func TestSQSNextN(t *testing.T) {
	s := testSet(1)
	st, err := s.Add(Rule{Queue: "orders", Action: "receives", Error: "RequestThrottled", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "f1" || *st.Remaining != 2 {
		t.Fatalf("added %+v", st)
	}
	recv := SQSEvent{Action: "ReceiveMessage", Account: "000000000000", Region: "us-east-1", Queue: "orders"}
	cases := []struct {
		ev   SQSEvent
		want string
	}{
		{SQSEvent{Action: "SendMessage", Account: "000000000000", Queue: "orders"}, ""},   // another action
		{SQSEvent{Action: "ReceiveMessage", Account: "000000000000", Queue: "other"}, ""}, // another queue
		{recv, "RequestThrottled"},
		{recv, "RequestThrottled"},
		{recv, ""}, // spent
	}
	for i, tc := range cases {
		if got := s.SQS(tc.ev); got.Error != tc.want {
			t.Errorf("event %d: %+v, want error %q", i, got, tc.want)
		}
	}
	l := s.List()
	if r := l.Rules[0]; r.Matched != 3 || r.Injected != 2 || *r.Remaining != 0 {
		t.Errorf("listing %+v", r)
	}
	if got := injected(s, "sqs", KindError); got != 2 {
		t.Errorf("ferry_faults_injected_total{sqs,error} = %v", got)
	}
}

func TestSQSQueueForms(t *testing.T) {
	ev := SQSEvent{Action: "ReceiveMessage", Account: "000000000000", Region: "eu-west-1", Queue: "q"}
	cases := []struct {
		rule Rule
		hit  bool
	}{
		{Rule{Queue: "q"}, true},
		{Rule{Queue: "http://localhost:4566/000000000000/q"}, true},
		{Rule{Queue: "http://localhost:4566/111111111111/q"}, false},
		{Rule{Queue: "arn:aws:sqs:eu-west-1:000000000000:q"}, true},
		{Rule{Queue: "arn:aws:sqs:us-east-1:000000000000:q"}, false},
		{Rule{Account: "000000000000"}, true},
		{Rule{Account: "111111111111"}, false},
		{Rule{Action: "ListQueues"}, false},
	}
	for _, tc := range cases {
		s := testSet(1)
		tc.rule.Delay = "1s"
		if _, err := s.Add(tc.rule); err != nil {
			t.Fatalf("%+v: %v", tc.rule, err)
		}
		if got := s.SQS(ev); (got.Delay == time.Second) != tc.hit {
			t.Errorf("%+v: fault %+v, want hit %v", tc.rule, got, tc.hit)
		}
	}
}

// decisions is the pattern of n events under a rule of fraction f.
func decisions(s *Set, n int) string {
	var b strings.Builder
	for range n {
		if s.SQS(SQSEvent{Action: "SendMessage", Queue: "q"}).Error != "" {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func TestFractionIsSeeded(t *testing.T) {
	rule := Rule{Queue: "q", Error: "RequestThrottled", Fraction: ptr(0.3)}
	run := func(seed uint64) string {
		s := testSet(seed)
		if _, err := s.Add(rule); err != nil {
			t.Fatal(err)
		}
		return decisions(s, 200)
	}
	a, b := run(42), run(42)
	if a != b {
		t.Errorf("same seed, different decisions:\n%s\n%s", a, b)
	}
	if c := run(43); c == a {
		t.Errorf("another seed, same decisions: %s", a)
	}
	if n := strings.Count(a, "x"); n < 30 || n > 90 {
		t.Errorf("%d of 200 at 0.3", n)
	}

	// After a Clear, the first rule draws again as the first did.
	s := testSet(42)
	s.Add(Rule{Queue: "other", Error: "RequestThrottled", Fraction: ptr(0.5)})
	s.Clear()
	s.Add(rule)
	if got := decisions(s, 200); got != a {
		t.Errorf("after Clear: %s, want %s", got, a)
	}

	// A rule's own seed overrides the set's.
	s1, s2 := testSet(1), testSet(2)
	r := rule
	r.Seed = ptr(uint64(7))
	s1.Add(r)
	s2.Add(Rule{Queue: "x", Delay: "1s"})
	s2.Add(r)
	if x, y := decisions(s1, 100), decisions(s2, 100); x != y {
		t.Errorf("rule seed: %s vs %s", x, y)
	}

	// Fraction with a count stops at count.
	s = testSet(42)
	r = rule
	r.Count = 3
	s.Add(r)
	if got := strings.Count(decisions(s, 200), "x"); got != 3 {
		t.Errorf("fraction with count 3 fired %d times", got)
	}
}

func TestSNSEffects(t *testing.T) {
	sub := "arn:aws:sns:us-east-1:000000000000:t:1"
	ev := func(id string, attempt int) SNSEvent {
		return SNSEvent{Subscription: sub, Endpoint: "http://127.0.0.1:1/x", Protocol: "http", MessageID: id, Attempt: attempt}
	}
	t.Run("status", func(t *testing.T) {
		s := testSet(1)
		s.Add(Rule{Subscription: sub, Status: 503, Count: 1})
		if f := s.SNS(ev("m", 1)); f.Kind != KindStatus || f.Status != 503 {
			t.Errorf("first: %+v", f)
		}
		if f := s.SNS(ev("m", 2)); f.Kind != "" {
			t.Errorf("second: %+v", f)
		}
	})
	t.Run("endpoint and protocol", func(t *testing.T) {
		s := testSet(1)
		s.Add(Rule{Endpoint: "http://127.0.0.1:1/y", Drop: true})
		s.Add(Rule{Protocol: "sqs", Duplicate: true})
		if f := s.SNS(ev("m", 1)); f.Kind != "" {
			t.Errorf("other endpoint: %+v", f)
		}
		e := ev("m", 1)
		e.Endpoint = "http://127.0.0.1:1/y"
		if f := s.SNS(e); f.Kind != KindDrop {
			t.Errorf("endpoint: %+v", f)
		}
		e.Protocol = "sqs"
		e.Endpoint = "arn:aws:sqs:us-east-1:000000000000:q"
		if f := s.SNS(e); f.Kind != KindDuplicate {
			t.Errorf("protocol: %+v", f)
		}
	})
	t.Run("succeedAfter", func(t *testing.T) {
		s := testSet(1)
		s.Add(Rule{Protocol: "http", SucceedAfter: 2, Count: 1, Timeout: true})
		want := []string{KindTimeout, KindTimeout, ""}
		for i, k := range want {
			if f := s.SNS(ev("a", i+1)); f.Kind != k {
				t.Errorf("a attempt %d: %+v, want %q", i+1, f, k)
			}
		}
		// Count 1: the next message is not chosen, nor is a retry of a
		// message first seen after its first attempt.
		if f := s.SNS(ev("b", 1)); f.Kind != "" {
			t.Errorf("b: %+v", f)
		}
		r := s.List().Rules[0]
		if r.Injected != 2 || *r.Remaining != 0 {
			t.Errorf("listing %+v", r)
		}
		if got := injected(s, "sns", KindTimeout); got != 2 {
			t.Errorf("timeouts counted %v", got)
		}
	})
}

func TestRemove(t *testing.T) {
	s := testSet(1)
	a, _ := s.Add(Rule{Queue: "q", Delay: "1s"})
	b, _ := s.Add(Rule{Queue: "q", Delay: "2s"})
	if !s.Remove(a.ID) || s.Remove(a.ID) {
		t.Fatal("Remove twice")
	}
	if f := s.SQS(SQSEvent{Action: "SendMessage", Queue: "q"}); f.Rule != b.ID || f.Delay != 2*time.Second {
		t.Errorf("after removing %s: %+v", a.ID, f)
	}
	if n := s.Clear(); n != 1 || s.Active() {
		t.Errorf("Clear = %d, active %v", n, s.Active())
	}
	if c, _ := s.Add(Rule{Queue: "q", Delay: "1s"}); c.ID == a.ID || c.ID == b.ID {
		t.Errorf("id %s used again", c.ID)
	}
}
