package metrics

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/ferrymq/ferry/internal/clock"
)

// TestSeriesKeepNoRequestMemory: a series lives up to 15 days, and the
// queue name that creates it may be a view into the request that named it
// (a DeleteMessageBatch's QueueUrl, decoded from its body): the key must
// be the store's own copy, or the series holds that request for its life.
func TestSeriesKeepNoRequestMemory(t *testing.T) {
	s := New(Options{Clock: clock.NewFake(t0)})
	held := func() weak.Pointer[byte] {
		body := strings.Repeat("x", 64<<10) + "queue-1" + "Metric"
		s.Record(acct, NamespaceSQS, body[64<<10+7:], Queue(body[64<<10:64<<10+7]), 1)
		return weak.Make(unsafe.StringData(body))
	}()
	runtime.GC()
	if held.Value() != nil {
		t.Fatal("the series keeps the request body alive")
	}
	if tot, ok := s.Totals(acct, NamespaceSQS, "Metric", Queue("queue-1")); !ok || tot.Sum != 1 {
		t.Fatalf("series lost: %+v %v", tot, ok)
	}
}
