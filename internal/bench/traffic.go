package bench

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/bench/ceiling"
)

// traffic is the HTTP client of a run's SDK clients: it counts their
// requests (Result.Requests) and notes whether an answer came from the
// ceiling, which marks every answer. The figures' scrapes of /metrics go
// around it, on Config.HTTPClient: they measure, they are not measured.
type traffic struct {
	client   *http.Client
	next     http.RoundTripper
	requests atomic.Int64
	ceiling  atomic.Bool
}

func newTraffic(hc *http.Client) *traffic {
	t := &traffic{next: hc.Transport}
	if t.next == nil {
		t.next = http.DefaultTransport
	}
	c := *hc
	c.Transport = t
	t.client = &c
	return t
}

// RoundTrip counts req and passes it on.
func (t *traffic) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.Header.Get(ceiling.Header) == "1" {
		t.ceiling.Store(true)
	}
	return resp, err
}

// isCeiling asks the endpoint a harmless question, before any scenario
// and whatever the answer, to learn whether it is the ceiling: that
// decides which scenarios run and how their messages are booked.
func (t *traffic) isCeiling(ctx context.Context, c *sqs.Client) bool {
	_, _ = c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})
	return t.ceiling.Load()
}
