package delivery

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/testwait"
)

// TestDeliveryWaitsHolds: a wait's time is set by the hold that began it,
// and by no hold or end that came since.
func TestDeliveryWaitsHolds(t *testing.T) {
	t.Parallel()
	a, b := waitKey{sub: "s1", msg: "m1"}, waitKey{sub: "s2", msg: "m1"}
	at := time.Unix(100, 0)
	for _, tc := range []struct {
		name string
		run  func(w *deliveryWaits)
		want []time.Time
	}{
		{"a hold is due until its time is set", func(w *deliveryWaits) { w.hold(a) }, []time.Time{{}}},
		{"until sets the hold's time", func(w *deliveryWaits) { w.until(a, w.hold(a), at) }, []time.Time{at}},
		{"a later hold wins", func(w *deliveryWaits) {
			first := w.hold(a)
			w.until(a, w.hold(a), at.Add(time.Second))
			w.until(a, first, at)
		}, []time.Time{at.Add(time.Second)}},
		{"an until after the end does nothing", func(w *deliveryWaits) {
			h := w.hold(a)
			w.end(a)
			w.until(a, h, at)
		}, nil},
		{"a stopped subscription's waits go", func(w *deliveryWaits) {
			w.until(a, w.hold(a), at)
			w.until(b, w.hold(b), at.Add(time.Second))
			w.endSubscription("s1")
		}, []time.Time{at.Add(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &Service{}
			tc.run(&d.waits)
			if got := d.Waits(); !slices.EqualFunc(got, tc.want, time.Time.Equal) {
				t.Errorf("waits = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeliveryWaitsFollowRetries: a first attempt waits for nothing; a
// failed one waits for its retry, and that wait, once due, stays while the
// retry is under way; Stop ends the subscription's waits.
func TestDeliveryWaitsFollowRetries(t *testing.T) {
	t.Parallel()
	// The endpoint tells when an attempt arrives, and waits for the test to
	// take its answer.
	arrived, answer := make(chan struct{}), make(chan struct{})
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for _, ch := range []chan struct{}{arrived, answer} {
			select {
			case ch <- struct{}{}:
			case <-t.Context().Done(): // the test failed: Close must not wait
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(ep.Close)
	sub := httpSubscription(t, ep.URL, `{"healthyRetryPolicy":{"numRetries":3,"minDelayTarget":2,"maxDelayTarget":2}}`)
	d, _, _, clk := newTestService(t, sub, nil)
	start := clk.Now()
	d.Start(&sub)
	if err := d.Enqueue(context.Background(), &sub, []*Message{{ID: "m1", Body: "m", Timestamp: start}}); err != nil {
		t.Fatal(err)
	}
	waits := func(want ...time.Time) func() bool {
		return func() bool { return slices.EqualFunc(d.Waits(), want, time.Time.Equal) }
	}
	testwait.Receive(t, "the first attempt", arrived)
	if !waits()() {
		t.Errorf("a first attempt waited: %v", d.Waits())
	}
	testwait.Receive(t, "the first attempt's answer", answer)
	retry := start.Add(2 * time.Second)
	testwait.Eventually(t, "the wait for the retry", waits(retry))
	clk.Set(retry)
	testwait.Receive(t, "the retry", arrived)
	if !waits(retry)() {
		t.Errorf("while the retry is under way, waits = %v", d.Waits())
	}
	testwait.Receive(t, "the retry's answer", answer)
	testwait.Eventually(t, "the wait for the next retry", waits(retry.Add(2*time.Second)))
	d.Stop(sub.ARN)
	if !waits()() {
		t.Errorf("after Stop, waits = %v", d.Waits())
	}
}
