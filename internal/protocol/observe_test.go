package protocol

import (
	"testing"
	"time"
)

// Observe sees every request once it is answered, found or not.
func TestObserve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		req             request
		service, action string
		status          int
	}{
		{"json", jsonReq("ListQueues", `{}`), "sqs", "ListQueues", 200},
		{"json unknown action", jsonReq("Nope", `{}`), "sqs", "", 400},
		{"json bad input", jsonReq("SendMessageBatch", `{"QueueUrl":`), "sqs", "SendMessageBatch", 400},
		{"query sns", formReq("Action=CreateTopic&Version=2010-03-31&Name=t"), "sns", "CreateTopic", 200},
		{"query without an action", formReq("Version=2012-11-05"), "sqs", "", 400},
		{"method", request{method: "PUT"}, "sqs", "", 405}, // errors speak the default service
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := newTestHandler(t)
			type seen struct {
				service, action string
				status          int
			}
			var got []seen
			h.Observe = func(service, action string, status int, took time.Duration) {
				if took < 0 {
					t.Errorf("took %v", took)
				}
				got = append(got, seen{service, action, status})
			}
			res, _ := tc.req.do(t, h)
			want := seen{tc.service, tc.action, tc.status}
			if len(got) != 1 || got[0] != want || res.StatusCode != tc.status {
				t.Errorf("observed %+v (answered %d), want %+v", got, res.StatusCode, want)
			}
		})
	}
}
