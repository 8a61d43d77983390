package delivery

import (
	"fmt"
	"testing"
	"time"
)

func TestScheduleDelays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    schedule
		want []int // delay before each retry, seconds
	}{
		{"http default", httpDefault, []int{20, 20, 20}},
		{"phases", schedule{MinDelay: 1, MaxDelay: 60, Retries: 8, NoDelay: 2, MinDelayRetries: 2, MaxDelayRetries: 2, Backoff: backoffLinear},
			[]int{0, 0, 1, 1, 1, 60, 60, 60}},
		{"linear", schedule{MinDelay: 10, MaxDelay: 50, Retries: 5, Backoff: backoffLinear}, []int{10, 20, 30, 40, 50}},
		{"arithmetic", schedule{MinDelay: 10, MaxDelay: 50, Retries: 5, Backoff: backoffArithmetic}, []int{10, 13, 20, 33, 50}},
		{"geometric", schedule{MinDelay: 1, MaxDelay: 16, Retries: 5, Backoff: backoffGeometric}, []int{1, 2, 4, 8, 16}},
		{"exponential", schedule{MinDelay: 10, MaxDelay: 100, Retries: 4, Backoff: backoffExponential}, []int{10, 23, 49, 100}},
		{"one backoff retry sits at min", schedule{MinDelay: 5, MaxDelay: 10, Retries: 1, Backoff: backoffExponential}, []int{5}},
		{"customer managed", customerManaged, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for r := 1; r <= tt.p.Retries; r++ {
				got = append(got, tt.p.delaySeconds(r))
			}
			if tt.want == nil {
				// 2 × 10 s, 10 from 10 to 600 s, 38 × 600 s.
				if len(got) != 50 || got[0] != 10 || got[1] != 10 || got[2] != 10 || got[11] != 600 || got[12] != 600 || got[49] != 600 {
					t.Errorf("customer-managed delays: %v", got)
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("delays = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJitterStaysWithinTenPercent(t *testing.T) {
	t.Parallel()
	for range 1000 {
		d := defaultJitter(20 * time.Second)
		if d < 18*time.Second || d > 22*time.Second {
			t.Fatalf("jitter gave %v", d)
		}
	}
	if d := httpDefault.delay(1, nil); d != 20*time.Second {
		t.Errorf("delay without jitter = %v", d)
	}
}

func TestParseSubscriptionPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, stored, err string
	}{
		{`{"healthyRetryPolicy":{"numRetries":5}}`,
			`{"healthyRetryPolicy":{"numRetries":5},"sicklyRetryPolicy":null,"throttlePolicy":null,"requestPolicy":null,"guaranteed":false}`, ""},
		{`{"throttlePolicy":{"maxReceivesPerSecond":2},"requestPolicy":{"headerContentType":"application/json"},"guaranteed":true}`,
			`{"healthyRetryPolicy":null,"sicklyRetryPolicy":null,"throttlePolicy":{"maxReceivesPerSecond":2},"requestPolicy":{"headerContentType":"application/json"},"guaranteed":true}`, ""},
		{`{"healthyRetryPolicy":{"backoffFunction":"LINEAR"},"sicklyRetryPolicy":{"numRetries": 1}}`,
			`{"healthyRetryPolicy":{"backoffFunction":"linear"},"sicklyRetryPolicy":{"numRetries":1},"throttlePolicy":null,"requestPolicy":null,"guaranteed":false}`, ""},
		{`nope`, "", "DeliveryPolicy: failed to parse JSON."},
		{`[]`, "", "DeliveryPolicy: failed to parse JSON."},
		{`{"healthyRetryPolicy":[]}`, "", "DeliveryPolicy: healthyRetryPolicy must be an object"},
		{`{"healthyRetryPolicy":{"minDelayTarget":0}}`, "", "DeliveryPolicy: healthyRetryPolicy.minDelayTarget must be greater than or equal to 1"},
		{`{"healthyRetryPolicy":{"minDelayTarget":"5"}}`, "", "DeliveryPolicy: healthyRetryPolicy.minDelayTarget must be an integer"},
		{`{"healthyRetryPolicy":{"minDelayTarget":1.5}}`, "", "DeliveryPolicy: healthyRetryPolicy.minDelayTarget must be an integer"},
		{`{"healthyRetryPolicy":{"maxDelayTarget":3601,"minDelayTarget":3601}}`, "", "DeliveryPolicy: healthyRetryPolicy.maxDelayTarget must be less than or equal to 3600"},
		{`{"healthyRetryPolicy":{"maxDelayTarget":10}}`, "", "DeliveryPolicy: healthyRetryPolicy.maxDelayTarget must be greater than or equal to minDelayTarget"},
		{`{"healthyRetryPolicy":{"numRetries":101,"minDelayTarget":1,"maxDelayTarget":1}}`, "", "DeliveryPolicy: healthyRetryPolicy.numRetries must be less than or equal to 100"},
		{`{"healthyRetryPolicy":{"numRetries":2,"numNoDelayRetries":3}}`, "", "DeliveryPolicy: healthyRetryPolicy.numRetries must be greater than or equal to numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries"},
		{`{"healthyRetryPolicy":{"numMinDelayRetries":-1}}`, "", "DeliveryPolicy: healthyRetryPolicy.numMinDelayRetries must be greater than or equal to 0"},
		{`{"healthyRetryPolicy":{"backoffFunction":"cubic"}}`, "", "DeliveryPolicy: healthyRetryPolicy.backoffFunction must be one of arithmetic, exponential, geometric, linear"},
		{`{"healthyRetryPolicy":{"numRetries":100,"minDelayTarget":60,"maxDelayTarget":60}}`, "", "DeliveryPolicy: healthyRetryPolicy: the total time of all retries must be less than or equal to 3600 seconds"},
		{`{"throttlePolicy":{"maxReceivesPerSecond":0}}`, "", "DeliveryPolicy: throttlePolicy.maxReceivesPerSecond must be greater than or equal to 1"},
		{`{"requestPolicy":{"headerContentType":""}}`, "", "DeliveryPolicy: requestPolicy.headerContentType is not a valid content type"},
		{`{"guaranteed":"yes"}`, "", "DeliveryPolicy: guaranteed must be a boolean"},
	}
	for _, tt := range tests {
		p, perr := parseSubscriptionPolicy(tt.raw)
		switch {
		case tt.err != "":
			if perr == nil || perr.Error() != tt.err {
				t.Errorf("%s: error %v, want %q", tt.raw, perr, tt.err)
			}
		case perr != nil:
			t.Errorf("%s: %v", tt.raw, perr)
		case mustJSON(p) != tt.stored:
			t.Errorf("%s stored as\n %s\nwant %s", tt.raw, mustJSON(p), tt.stored)
		}
	}
}

func TestEffectivePolicies(t *testing.T) {
	t.Parallel()
	var none *topicPolicy
	if got := none.effective().topicJSON(); got != `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}` {
		t.Errorf("default topic policy: %s", got)
	}
	tp, perr := parseTopicPolicy(`{"http":{"defaultHealthyRetryPolicy":{"numRetries":5},"defaultRequestPolicy":{"headerContentType":"text/xml"}}}`)
	if perr != nil {
		t.Fatal(perr)
	}
	sp, _ := parseSubscriptionPolicy(`{"healthyRetryPolicy":{"minDelayTarget":5},"throttlePolicy":{"maxReceivesPerSecond":4}}`)
	d := tp.effective().forSubscription(sp)
	if d.retry.Retries != 5 || d.retry.MinDelay != 5 || d.maxPerSecond != 4 || d.contentType != "text/xml" {
		t.Errorf("merged: %+v", d)
	}
	if got := d.json(); got != `{"healthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":20,"numRetries":5,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"sicklyRetryPolicy":null,"throttlePolicy":{"maxReceivesPerSecond":4},"requestPolicy":{"headerContentType":"text/xml"},"guaranteed":false}` {
		t.Errorf("effective subscription policy: %s", got)
	}
	// With overrides disabled the topic's policy wins.
	tp, _ = parseTopicPolicy(`{"http":{"disableSubscriptionOverrides":true,"defaultHealthyRetryPolicy":{"numRetries":1}}}`)
	if d := tp.effective().forSubscription(sp); d.retry.Retries != 1 || d.retry.MinDelay != 20 || d.maxPerSecond != 0 {
		t.Errorf("overrides disabled: %+v", d)
	}
	if _, perr := parseTopicPolicy(`{"http":{"defaultHealthyRetryPolicy":{"numRetries":-1}}}`); perr == nil ||
		perr.Error() != "DeliveryPolicy: http.defaultHealthyRetryPolicy.numRetries must be greater than or equal to 0" {
		t.Errorf("bad topic policy: %v", perr)
	}
}

// TestAtOncePolicies: the AWS-managed schedule of SQS, Lambda and Firehose
// (sns.md §7) and the customer-managed one of SMS and mobile push.
func TestAtOncePolicies(t *testing.T) {
	aws := atOncePolicy(ProtoSQS)
	cases := []struct {
		name     string
		p        schedule
		attempt  int // the failed attempt the delay follows
		want     int // seconds
		wantPhas string
	}{
		{"first attempt", aws, 1, 0, phaseInitial},
		{"immediate 1", aws, 2, 0, phaseImmediateRetry},
		{"immediate 3", aws, 3, 0, phaseImmediateRetry},
		{"pre-backoff 1", aws, 4, 1, phaseImmediateRetry},
		{"pre-backoff 2", aws, 5, 1, phasePreBackoff},
		{"backoff start", aws, 6, 1, phasePreBackoff},
		{"backoff end", aws, 15, 20, phaseBackoff},
		{"post-backoff", aws, 16, 20, phaseBackoff},
		{"post-backoff late", aws, 100_000, 20, phasePostBackoff},
		{"sms first retry", atOncePolicy(ProtoSMS), 1, 10, phaseInitial},
		{"push first retry", atOncePolicy(ProtoApplication), 1, 10, phaseInitial},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.delaySeconds(tc.attempt); got != tc.want {
				t.Errorf("delay after attempt %d = %d s, want %d", tc.attempt, got, tc.want)
			}
			if got := tc.p.phase(tc.attempt); got != tc.wantPhas {
				t.Errorf("phase of attempt %d = %s, want %s", tc.attempt, got, tc.wantPhas)
			}
		})
	}
	if n := aws.Retries + 1; n != 100_015 {
		t.Errorf("AWS-managed makes %d attempts, want 100,015", n)
	}
	if days := float64(aws.totalSeconds()) / 86400; days < 22.5 || days > 23.5 {
		t.Errorf("AWS-managed retries take %.1f days, want about 23", days)
	}
	for _, p := range []string{ProtoLambda, ProtoFirehose} {
		if atOncePolicy(p) != aws {
			t.Errorf("%s does not follow the AWS-managed policy", p)
		}
	}
}
