package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

// ActivityCounters are the SQS metrics that count API activity on a
// queue: one moving keeps the queue active.
var ActivityCounters = []string{MessagesSent, MessagesReceived, EmptyReceives, MessagesDeleted}

// On a store several nodes share, each node saves its points every
// SaveEvery and reads the others', and one node at a time samples the
// gauges: the holder of the SamplerLease, renewed at every save.
const (
	SamplerLease        = "metrics-sampler"
	DefaultSaveEvery    = 10 * time.Second
	DefaultSamplerLease = 3 * DefaultSaveEvery
)

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	Store   *Store
	Backend engine.Backend
	// Hidden are the accounts whose queues are never reported: the hidden
	// SNS delivery queues live in one. Every other account's are.
	Hidden []string
	Clock  clock.Clock
	Logger *slog.Logger
	// Persist, when set, receives the completed minutes at every tick and
	// everything at Close (Store.Flush).
	Persist engine.MetricStore
	// Cluster, when it is Shared, makes this node one of several on one
	// store: every SaveEvery (DefaultSaveEvery if zero) the sampler saves
	// every minute, the current one too, into Persist and reads the other
	// nodes' points (Store.RefreshPeers); it samples the gauges only while
	// it holds SamplerLease, taken for LeaseTime (DefaultSamplerLease if
	// zero) at every save, so that each gauge gets one sample a minute in
	// the cluster and another node carries on within LeaseTime when the
	// holder dies.
	Cluster   Cluster
	SaveEvery time.Duration
	LeaseTime time.Duration
}

// Sampler records the SQS gauges of every account's active queues into a
// Store once a minute, at the start of the minute, on the injected clock, and flushes
// the store's completed minutes. A queue is active, as CloudWatch has it,
// while it holds messages or an action touched it (or it was created)
// within the last six hours.
type Sampler struct {
	o      SamplerOptions
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	// touched maps a queue to the unix nanoseconds of its latest action.
	// Touch only updates entries; a tick adds the queues it lists and
	// drops those gone, so garbage names cannot grow it.
	tmu     sync.RWMutex
	touched map[queueID]*atomic.Int64

	mu      sync.Mutex // guards timer, next, closed; ticks changes under it
	timer   clock.Timer
	next    time.Time // when timer fires
	closed  bool
	running sync.WaitGroup
	ticks   atomic.Uint64

	shared  bool        // Cluster is Shared: tick every SaveEvery
	holding atomic.Bool // held SamplerLease at the latest tick
	samples atomic.Uint64
}

// NewSampler starts sampling; Close stops it.
func NewSampler(o SamplerOptions) *Sampler {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	s := &Sampler{o: o, log: o.Logger, touched: make(map[queueID]*atomic.Int64)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.Cluster != nil && o.Cluster.Shared() {
		s.shared = true
		if s.o.SaveEvery <= 0 {
			s.o.SaveEvery = DefaultSaveEvery
		}
		if s.o.LeaseTime <= 0 {
			s.o.LeaseTime = DefaultSamplerLease
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.armLocked()
	s.mu.Unlock()
	return s
}

// queueID names a queue across accounts.
type queueID struct{ account, name string }

// Touch marks an action on account's queue; it does not allocate.
func (s *Sampler) Touch(account, queue string) {
	s.tmu.RLock()
	at := s.touched[queueID{account, queue}]
	s.tmu.RUnlock()
	if at != nil {
		at.Store(s.o.Clock.Now().UnixNano())
	}
}

// armLocked schedules the next tick at the start of the next minute, or
// of the next SaveEvery on a shared store.
func (s *Sampler) armLocked() {
	every := time.Minute
	if s.shared {
		every = s.o.SaveEvery
	}
	now := s.o.Clock.Now()
	s.next = now.Truncate(every).Add(every)
	s.timer = s.o.Clock.AfterFunc(s.next.Sub(now), s.tick)
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
	if s.shared {
		s.sharedTick(ctx)
	} else {
		s.Sample(ctx)
		if s.o.Persist != nil {
			if err := s.o.Store.Flush(ctx, s.o.Persist, false); err != nil {
				s.log.Warn("metrics: save datapoints", "err", err)
			}
		}
	}
	s.mu.Lock()
	s.ticks.Add(1)
	if !s.closed {
		s.armLocked()
	}
	s.mu.Unlock()
}

// sharedTick is a tick on a shared store: renew or take the lease, sample
// if this is the tick that opens a minute and the lease is this node's,
// save every minute so far and read the other nodes' points.
func (s *Sampler) sharedTick(ctx context.Context) {
	now := s.o.Clock.Now()
	held, err := s.o.Cluster.TakeLease(ctx, SamplerLease, s.o.LeaseTime)
	if err != nil {
		s.log.Warn("metrics: take the sampling lease", "err", err)
		held = false
	}
	s.holding.Store(held)
	// Only the tick opening a minute samples: a node that takes the lease
	// over later in the minute must not sample it a second time.
	if held && now.Sub(now.Truncate(time.Minute)) < s.o.SaveEvery {
		s.Sample(ctx)
	}
	if s.o.Persist != nil {
		if err := s.o.Store.Flush(ctx, s.o.Persist, true); err != nil {
			s.log.Warn("metrics: save datapoints", "err", err)
		}
	}
	if err := s.o.Store.RefreshPeers(ctx, s.o.Cluster); err != nil {
		s.log.Warn("metrics: read the other nodes' datapoints", "err", err)
	}
}

// Ticks counts the completed ticks (samples and flushes), so that a test
// on a fake clock knows when the tick it caused is over.
func (s *Sampler) Ticks() uint64 { return s.ticks.Load() }

// NextTick reports, together, the completed ticks and when the next one is
// due. A due time not after the clock's now means a tick is under way: a
// test on a fake clock waits for it to end before it moves the clock, or
// that tick would re-arm from the new now and the one the test expects
// would never come.
func (s *Sampler) NextTick() (ticks uint64, due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ticks.Load(), s.next
}

// Samples counts the samplings of the gauges this node made.
func (s *Sampler) Samples() uint64 { return s.samples.Load() }

// Holding reports whether this node held the sampling lease at its latest
// tick (always false on a store no other node shares).
func (s *Sampler) Holding() bool { return s.holding.Load() }

// Sample records one sample of every gauge of every active queue now.
func (s *Sampler) Sample(ctx context.Context) {
	queues, err := reportedQueues(ctx, s.o.Backend, s.o.Hidden)
	if err != nil {
		s.log.Warn("metrics: list queues", "err", err)
		return
	}
	now := s.o.Clock.Now()
	s.syncTouched(queues)
	defer s.samples.Add(1)
	for _, q := range queues {
		st, err := s.o.Backend.Stats(ctx, q.Account, q.Name)
		if err != nil {
			continue // deleted since the listing
		}
		if !s.active(q, st, now) {
			continue
		}
		dim := Queue(q.Name)
		rec := func(metric string, v float64) { s.o.Store.Record(q.Account, NamespaceSQS, metric, dim, v) }
		rec(MessagesVisible, float64(st.Visible))
		rec(MessagesNotVisible, float64(st.NotVisible))
		rec(MessagesDelayed, float64(st.Delayed))
		rec(AgeOfOldestMessage, AgeSeconds(st, now))
		if q.Settings.FIFO {
			rec(GroupsWithInflightMsgs, float64(st.GroupsInFlight))
		}
	}
}

// reportedQueues lists the queues of every account but the hidden ones,
// by account and name: the queues whose metrics are reported.
func reportedQueues(ctx context.Context, b engine.Backend, hidden []string) ([]engine.Queue, error) {
	accounts, err := b.Accounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	var out []engine.Queue
	for _, a := range accounts {
		if slices.Contains(hidden, a) {
			continue
		}
		qs, err := b.ListQueues(ctx, a, "")
		if err != nil {
			return nil, fmt.Errorf("list the queues of %s: %w", a, err)
		}
		out = append(out, qs...)
	}
	return out, nil
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
	at := s.touched[queueID{q.Account, q.Name}]
	s.tmu.RUnlock()
	if at != nil && at.Load() > since.UnixNano() {
		return true
	}
	// On a shared store the actions on the queue may have gone to other
	// nodes: the counters they recorded, the cluster's, say so.
	return s.shared && s.countersMoved(q.Account, q.Name, since, now)
}

// countersMoved reports whether an activity counter of account's queue
// has a datapoint between since and now.
func (s *Sampler) countersMoved(account, queue string, since, now time.Time) bool {
	for _, m := range ActivityCounters {
		if len(s.o.Store.Datapoints(account, NamespaceSQS, m, Queue(queue), since, now.Add(time.Minute))) > 0 {
			return true
		}
	}
	return false
}

// syncTouched adds the listed queues to the touch map and drops the rest.
func (s *Sampler) syncTouched(queues []engine.Queue) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	seen := make(map[queueID]bool, len(queues))
	for _, q := range queues {
		id := queueID{q.Account, q.Name}
		seen[id] = true
		if s.touched[id] == nil {
			s.touched[id] = new(atomic.Int64)
		}
	}
	for id := range s.touched {
		if !seen[id] {
			delete(s.touched, id)
		}
	}
}

// Close stops the ticks, waits for one under way and saves every minute,
// the current one included, so that a restart goes on from there. On a
// shared store it then gives the sampling lease up, so that another node
// samples from its next minute on rather than after LeaseTime.
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
	var err error
	if s.o.Persist != nil {
		err = s.o.Store.Flush(ctx, s.o.Persist, true)
	}
	if s.holding.Load() {
		// A lease taken for no time ends at once.
		if _, lerr := s.o.Cluster.TakeLease(ctx, SamplerLease, 0); lerr != nil {
			err = errors.Join(err, fmt.Errorf("metrics: give the sampling lease up: %w", lerr))
		}
	}
	return err
}
