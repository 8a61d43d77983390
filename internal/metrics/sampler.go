package metrics

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
)

// SQS gauge metrics, sampled once a minute per active queue.
const (
	MessagesVisible        = "ApproximateNumberOfMessagesVisible"
	MessagesNotVisible     = "ApproximateNumberOfMessagesNotVisible"
	MessagesDelayed        = "ApproximateNumberOfMessagesDelayed"
	AgeOfOldestMessage     = "ApproximateAgeOfOldestMessage"
	GroupsWithInflightMsgs = "ApproximateNumberOfGroupsWithInflightMessages"
)

const (
	// ActiveWindow is how long after its latest action an empty queue is
	// still reported.
	ActiveWindow = 6 * time.Hour
	// sampleTimeout bounds the engine reads and the flush of one tick.
	sampleTimeout = 30 * time.Second
)

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	Store   *Store
	Backend engine.Backend
	// Account is the one account whose queues are reported; the hidden SNS
	// delivery queues live in another and are never listed.
	Account string
	Clock   clock.Clock
	Logger  *slog.Logger
	// Persist, when set, receives the completed minutes at every tick and
	// everything at Close (Store.Flush).
	Persist engine.MetricStore
}

// Sampler records the SQS gauges of every active queue into a Store once
// a minute, at the start of the minute, on the injected clock, and flushes
// the store's completed minutes. A queue is active, as CloudWatch has it,
// while it holds messages or an action touched it (or it was created)
// within the last six hours.
type Sampler struct {
	o      SamplerOptions
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	// touched maps a queue name to the unix nanoseconds of its latest
	// action. Touch only updates entries; a tick adds the queues it lists
	// and drops those gone, so garbage names cannot grow it.
	tmu     sync.RWMutex
	touched map[string]*atomic.Int64

	mu      sync.Mutex // guards timer, closed
	timer   clock.Timer
	closed  bool
	running sync.WaitGroup
	ticks   atomic.Uint64
}

// NewSampler starts sampling; Close stops it.
func NewSampler(o SamplerOptions) *Sampler {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	s := &Sampler{o: o, log: o.Logger, touched: make(map[string]*atomic.Int64)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.armLocked()
	s.mu.Unlock()
	return s
}

// Touch marks an action on queue; it does not allocate.
func (s *Sampler) Touch(queue string) {
	s.tmu.RLock()
	at := s.touched[queue]
	s.tmu.RUnlock()
	if at != nil {
		at.Store(s.o.Clock.Now().UnixNano())
	}
}

// armLocked schedules the next tick at the start of the next minute.
func (s *Sampler) armLocked() {
	now := s.o.Clock.Now()
	next := now.Truncate(time.Minute).Add(time.Minute)
	s.timer = s.o.Clock.AfterFunc(next.Sub(now), s.tick)
}

func (s *Sampler) tick() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()

	ctx, cancel := context.WithTimeout(s.ctx, sampleTimeout)
	defer cancel()
	s.Sample(ctx)
	if s.o.Persist != nil {
		if err := s.o.Store.Flush(ctx, s.o.Persist, false); err != nil {
			s.log.Warn("metrics: save datapoints", "err", err)
		}
	}
	s.mu.Lock()
	if !s.closed {
		s.armLocked()
	}
	s.mu.Unlock()
	s.ticks.Add(1)
}

// Ticks counts the completed ticks (samples and flushes), so that a test
// on a fake clock knows when the tick it caused is over.
func (s *Sampler) Ticks() uint64 { return s.ticks.Load() }

// Sample records one sample of every gauge of every active queue now.
func (s *Sampler) Sample(ctx context.Context) {
	queues, err := s.o.Backend.ListQueues(ctx, s.o.Account, "")
	if err != nil {
		s.log.Warn("metrics: list queues", "err", err)
		return
	}
	now := s.o.Clock.Now()
	s.syncTouched(queues)
	for _, q := range queues {
		st, err := s.o.Backend.Stats(ctx, s.o.Account, q.Name)
		if err != nil {
			continue // deleted since the listing
		}
		if !s.active(q, st, now) {
			continue
		}
		dim := Queue(q.Name)
		rec := func(metric string, v float64) { s.o.Store.Record(NamespaceSQS, metric, dim, v) }
		rec(MessagesVisible, float64(st.Visible))
		rec(MessagesNotVisible, float64(st.NotVisible))
		rec(MessagesDelayed, float64(st.Delayed))
		rec(AgeOfOldestMessage, AgeSeconds(st, now))
		if q.Settings.FIFO {
			rec(GroupsWithInflightMsgs, float64(st.GroupsInFlight))
		}
	}
}

// AgeSeconds is ApproximateAgeOfOldestMessage at now: whole seconds since
// the oldest counted message entered the queue, 0 without one.
func AgeSeconds(st engine.Stats, now time.Time) float64 {
	if st.OldestAt.IsZero() || !now.After(st.OldestAt) {
		return 0
	}
	return float64(now.Sub(st.OldestAt) / time.Second)
}

func (s *Sampler) active(q engine.Queue, st engine.Stats, now time.Time) bool {
	if st.Visible+st.NotVisible+st.Delayed > 0 {
		return true
	}
	since := now.Add(-ActiveWindow)
	if q.Created.After(since) || q.Modified.After(since) {
		return true
	}
	s.tmu.RLock()
	at := s.touched[q.Name]
	s.tmu.RUnlock()
	return at != nil && at.Load() > since.UnixNano()
}

// syncTouched adds the listed queues to the touch map and drops the rest.
func (s *Sampler) syncTouched(queues []engine.Queue) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	seen := make(map[string]bool, len(queues))
	for _, q := range queues {
		seen[q.Name] = true
		if s.touched[q.Name] == nil {
			s.touched[q.Name] = new(atomic.Int64)
		}
	}
	for name := range s.touched {
		if !seen[name] {
			delete(s.touched, name)
		}
	}
}

// Close stops the ticks, waits for one under way and saves every minute,
// the current one included, so that a restart goes on from there.
func (s *Sampler) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.cancel()
	s.running.Wait()
	if s.o.Persist == nil {
		return nil
	}
	return s.o.Store.Flush(ctx, s.o.Persist, true)
}
