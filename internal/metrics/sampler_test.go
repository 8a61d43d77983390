package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/testwait"
)

// The sampler reports the gauges of every account's active queues, each
// in its own account's series, and never the hidden accounts' queues; an
// action keeps active the queue of its own account only.
func TestSamplerAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	eng := queuesIn(t, clk, []testQueue{{acct, "q", 2}, {other, "q", 1}, {acct, "idle", 0}, {other, "idle", 0}, {"hidden", "q", 3}})
	store := New(Options{Clock: clk, Account: acct})
	s := NewSampler(SamplerOptions{Store: store, Backend: eng, Hidden: []string{"hidden"}, Clock: clk})
	t.Cleanup(func() { _ = s.Close(ctx) })

	// The sampler's own tick samples, at the start of each minute; a
	// sample of the test's own would be a second one in that minute.
	tick := func(d time.Duration) {
		n := s.Samples()
		clk.Advance(d)
		testwait.Eventually(t, "the sampler's tick", func() bool { return s.Samples() > n })
	}
	// Past the active window: the empty queues are idle until touched.
	// The tick lists the queues, so that touches count.
	tick(ActiveWindow + time.Minute)
	s.Touch(other, "idle")
	s.Touch("333333333333", "idle") // no such queue: ignored
	tick(time.Minute)
	at := clk.Now().Truncate(time.Minute)

	visible := func(account, queue string) []Datapoint {
		return store.Datapoints(account, NamespaceSQS, MessagesVisible, Queue(queue), at, at.Add(time.Minute))
	}
	for _, c := range []struct {
		account, queue string
		want           float64 // -1: not sampled
	}{
		{acct, "q", 2},
		{other, "q", 1},
		{other, "idle", 0},
		{acct, "idle", -1},
		{"hidden", "q", -1},
	} {
		dps := visible(c.account, c.queue)
		switch {
		case c.want < 0 && len(dps) != 0:
			t.Errorf("%s's %s sampled: %+v", c.account, c.queue, dps)
		case c.want >= 0 && (len(dps) != 1 || dps[0].Sum != c.want || dps[0].SampleCount != 1):
			t.Errorf("%s's %s: %+v, want one sample of %v", c.account, c.queue, dps, c.want)
		}
	}
	for _, k := range store.Series() {
		if k.Account == "hidden" {
			t.Errorf("series of a hidden account: %+v", k)
		}
	}
}

// testQueue is a queue to create, holding messages messages.
type testQueue struct {
	account, name string
	messages      int
}

// queuesIn is an in-memory engine on clk holding queues.
func queuesIn(t *testing.T, clk clock.Clock, queues []testQueue) engine.Backend {
	t.Helper()
	ctx := context.Background()
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	for _, q := range queues {
		if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: q.account, Name: q.name, Created: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		for range q.messages {
			if _, err := eng.Send(ctx, q.account, q.name, []engine.NewMessage{{Body: "m"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return eng
}
