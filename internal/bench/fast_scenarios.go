package bench

import (
	"context"
	"errors"
	"sync"
	"time"
)

// fastCatalogue is the scenarios the fast client runs: the same meaning
// and figures as the SDK's of the same name (see catalogue), so that the
// two reports compare. Queues are still made, counted and removed through
// the SDK: a few calls outside the traffic measured.
var fastCatalogue = map[string]func(context.Context, *env) error{
	"send":            runFastSends(false),
	"send-batch":      runFastSends(true),
	"receive-delete":  runFastReceiveDelete,
	"produce-consume": runFastProduceConsume,
}

// fastScenario is what name runs with the fast client: its run, or one
// that reports it unsupported. The fast client checks every message, so
// it has nothing to run against the ceiling, which holds none.
func fastScenario(name string, ceiling bool) func(context.Context, *env) error {
	run, ok := fastCatalogue[name]
	switch {
	case ceiling:
		return func(context.Context, *env) error {
			return &unsupportedError{op: "--client fast", err: errors.New("checks every message, and the ceiling holds none")}
		}
	case !ok:
		return func(context.Context, *env) error {
			return &unsupportedError{op: "--client fast", err: errors.New("runs with --client sdk only")}
		}
	}
	return run
}

// fastQueueOf makes the scenario's queue (see createQueue) and its templates.
func (e *env) fastQueueOf(ctx context.Context) (*fastQueue, error) {
	url, err := e.createQueue(ctx, e.res.Name, nil)
	if err != nil {
		return nil, err
	}
	return newFastQueue(url), nil
}

// runFastSends is runSends with the fast client.
func runFastSends(batch bool) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		q, err := e.fastQueueOf(ctx)
		if err != nil {
			return err
		}
		l := NewLedger(1)
		var lat Latencies
		conns := e.fastConns(e.cfg.Concurrency)
		defer conns.close()
		elapsed := e.loop(ctx, e.cfg.Concurrency, e.cfg.Duration, func(ctx context.Context, w int) bool {
			switch {
			case l.Issued() >= e.cfg.MaxMessages:
				return false
			case batch:
				e.failN(e.fastSendBatch(ctx, conns[w], q, l, e.stamps(l, 10), &lat))
			default:
				e.fastSend(ctx, conns[w], q, l, &lat)
			}
			return true
		})
		e.measured(int64(l.Tally().Acked), elapsed)
		what := "request"
		if batch {
			what = "batch request"
		}
		e.latency(what, lat.Summary())
		e.fastDrain(ctx, q, l, nil)
		e.settle(ctx, l, q.url)
		return nil
	}
}

// runFastReceiveDelete is runReceiveDelete with the fast client, which
// fills the queue too.
func runFastReceiveDelete(ctx context.Context, e *env) error {
	q, err := e.fastQueueOf(ctx)
	if err != nil {
		return err
	}
	l := NewLedger(1)
	e.fastPrefill(ctx, q, l)
	var lat Latencies
	elapsed := e.fastDrain(ctx, q, l, &lat)
	e.measured(l.Tally().Received, elapsed)
	e.latency("receive request", lat.Summary())
	e.settle(ctx, l, q.url)
	return nil
}

// runFastProduceConsume is runProduceConsume (single sends) with the fast
// client: the rate is what arrived while the producers ran, the latency
// end to end.
func runFastProduceConsume(ctx context.Context, e *env) error {
	q, err := e.fastQueueOf(ctx)
	if err != nil {
		return err
	}
	l := NewLedger(1)
	producers := max(1, e.cfg.Concurrency/2)
	conns := e.fastConns(producers)
	defer conns.close()

	var lat Latencies
	start := time.Now()
	win := newWindow(start, e.cfg.Duration)
	c := newCrew(ctx, e.cfg.Duration+e.drainLimit(), l, true)
	defer c.cancel()
	var consumers sync.WaitGroup
	consumers.Go(func() {
		e.fastReceive(c, fastReceiver{q: q, workers: max(1, e.cfg.Concurrency/2),
			handle: func(msgs []fastMsg, at time.Time) {
				for _, st := range e.fastArrive(l, msgs) {
					lat.Add(at.Sub(st.Sent))
					win.arrive(at)
				}
			}})
	})
	sendElapsed := e.loop(ctx, producers, e.cfg.Duration, func(ctx context.Context, w int) bool {
		if l.Issued() >= e.cfg.MaxMessages {
			return false
		}
		e.fastSend(ctx, conns[w], q, l, nil)
		return true
	})
	win.end.Store(min(win.end.Load(), start.Add(sendElapsed).UnixNano()))
	c.producersDone()
	consumers.Wait()

	e.measured(win.arrived.Load(), min(sendElapsed, e.cfg.Duration))
	e.latency("end-to-end", lat.Summary())
	e.note("sent %s msgs/s", Thousands(Rate(int64(l.Tally().Acked), sendElapsed)))
	e.settle(ctx, l, q.url)
	return nil
}

// fastPrefill is prefill with the fast client's batches.
func (e *env) fastPrefill(ctx context.Context, q *fastQueue, l *Ledger) int {
	target := min(e.cfg.Prefill, e.cfg.MaxMessages)
	conns := e.fastConns(e.cfg.Concurrency)
	defer conns.close()
	elapsed := e.loop(ctx, e.cfg.Concurrency, e.cfg.Duration, func(ctx context.Context, w int) bool {
		n := min(10, target-l.Issued())
		if n <= 0 {
			return false
		}
		e.failN(e.fastSendBatch(ctx, conns[w], q, l, e.stamps(l, n), nil))
		return true
	})
	t := l.Tally()
	e.note("pre-filled %d in %s", t.Acked, elapsed.Round(time.Millisecond))
	return t.Acked
}

// fastDrain is drain with the fast client.
func (e *env) fastDrain(ctx context.Context, q *fastQueue, l *Ledger, lat *Latencies) time.Duration {
	c := newCrew(ctx, e.drainLimit(), l, false)
	defer c.cancel()
	start := time.Now()
	e.fastReceive(c, fastReceiver{q: q, workers: e.cfg.Concurrency, lat: lat,
		handle: func(msgs []fastMsg, _ time.Time) { e.fastArrive(l, msgs) }})
	return time.Since(start)
}
