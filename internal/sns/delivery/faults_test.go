package delivery

import (
	"fmt"
	"testing"

	"github.com/ferrymq/ferry/internal/faults"
)

// TestFaultImmediate: for the protocols SNS serves at once, injected
// answers map onto what SNS does there, its policy's retries made at once.
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
		{"5xx retried", sqsSub, faults.Rule{Protocol: "sqs", Status: 500, Count: 5}, "copies 1", 5},
		{"succeed after 4", sqsSub, faults.Rule{Protocol: "sqs", SucceedAfter: 4, Timeout: true}, "copies 1", 4},
		{"5xx for good, AWS-managed", sqsSub, faults.Rule{Protocol: "sqs", Status: 503}, "refused 503", awsManagedAttempts},
		{"timeout for good, customer-managed", smsSub, faults.Rule{Protocol: "sms", Timeout: true}, "refused 0", int64(customerManaged.Retries + 1)},
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
			if f.Refused {
				got = fmt.Sprintf("refused %d", f.Status)
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
