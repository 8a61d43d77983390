package delivery

import (
	"fmt"
	"testing"

	"github.com/ferrymq/ferry/internal/faults"
)

// TestFaultImmediate: for the protocols SNS serves at once, an injected
// answer to the first attempt maps onto what SNS does there; a
// server-side one is retried later, from the retry queue.
func TestFaultImmediate(t *testing.T) {
	sqsSub := &Subscription{ARN: "arn:aws:sns:us-east-1:000000000000:t:1", Protocol: ProtoSQS, Endpoint: "arn:aws:sqs:us-east-1:000000000000:q"}
	smsSub := &Subscription{ARN: "arn:aws:sns:us-east-1:000000000000:t:2", Protocol: ProtoSMS, Endpoint: "+15555550100"}
	cases := []struct {
		name     string
		sub      *Subscription
		rule     faults.Rule
		want     string
		injected int64
	}{
		{"no rule for it", sqsSub, faults.Rule{Protocol: "http", Drop: true}, "copies 1", 0},
		{"2xx", sqsSub, faults.Rule{Protocol: "sqs", Status: 200}, "copies 1", 1},
		{"drop", sqsSub, faults.Rule{Protocol: "sqs", Drop: true}, "copies 0", 1},
		{"duplicate", sqsSub, faults.Rule{Protocol: "sqs", Duplicate: true}, "copies 2", 1},
		{"4xx is client-side", sqsSub, faults.Rule{Protocol: "sqs", Status: 403}, "refused 403", 1},
		{"client error", sqsSub, faults.Rule{Protocol: "sqs", ClientError: true}, "refused 400", 1},
		{"5xx retried", sqsSub, faults.Rule{Protocol: "sqs", Status: 500, Count: 5}, "retry 500", 1},
		{"succeed after 4", sqsSub, faults.Rule{Protocol: "sqs", SucceedAfter: 4, Timeout: true}, "retry 0", 1},
		{"timeout, customer-managed", smsSub, faults.Rule{Protocol: "sms", Timeout: true}, "retry 0", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := faults.New(faults.Options{})
			if _, err := set.Add(tc.rule); err != nil {
				t.Fatal(err)
			}
			d := &Service{faults: set}
			f := d.Fault(tc.sub, "m1")
			got := fmt.Sprintf("copies %d", f.Copies)
			switch {
			case f.Refused:
				got = fmt.Sprintf("refused %d", f.Status)
			case f.Retry:
				got = fmt.Sprintf("retry %d", f.Status)
			}
			if got != tc.want {
				t.Errorf("Fault = %+v (%s), want %s", f, got, tc.want)
			}
			if n := set.List().Rules[0].Injected; n != tc.injected {
				t.Errorf("injected %d, want %d", n, tc.injected)
			}
		})
	}
}
