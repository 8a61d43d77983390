package metrics

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/testwait"
)

// fakeDB is a store several nodes share: each node's points kept apart,
// leases on the test's clock.
type fakeDB struct {
	clk    clock.Clock
	mu     sync.Mutex
	points map[string]*memPoints // by node
	leases map[string]lease
}

type lease struct {
	owner string
	until time.Time
}

func newFakeDB(clk clock.Clock) *fakeDB {
	return &fakeDB{clk: clk, points: map[string]*memPoints{}, leases: map[string]lease{}}
}

// fakeNode is one node's view of a fakeDB; a dead one fails every call.
type fakeNode struct {
	db   *fakeDB
	name string
	dead bool
}

var errDead = errors.New("the node is dead")

func (db *fakeDB) node(name string) *fakeNode {
	db.points[name] = newMemPoints()
	return &fakeNode{db: db, name: name}
}

func (n *fakeNode) Shared() bool { return true }

func (n *fakeNode) TakeLease(_ context.Context, name string, d time.Duration) (bool, error) {
	n.db.mu.Lock()
	defer n.db.mu.Unlock()
	if n.dead {
		return false, errDead
	}
	now := n.db.clk.Now()
	if l, ok := n.db.leases[name]; ok && l.owner != n.name && !l.until.Before(now) {
		return false, nil
	}
	n.db.leases[name] = lease{n.name, now.Add(d)}
	return d > 0, nil
}

func (n *fakeNode) PutMetricPoints(ctx context.Context, ps []engine.MetricPoint) error {
	n.db.mu.Lock()
	defer n.db.mu.Unlock()
	if n.dead {
		return errDead
	}
	return n.db.points[n.name].PutMetricPoints(ctx, ps)
}

func (n *fakeNode) DeleteMetricPointsBefore(ctx context.Context, minute int64) error {
	n.db.mu.Lock()
	defer n.db.mu.Unlock()
	for _, p := range n.db.points {
		_ = p.DeleteMetricPointsBefore(ctx, minute)
	}
	return nil
}

func (n *fakeNode) DeleteMetricPoints(ctx context.Context, pick func(string) bool) error {
	n.db.mu.Lock()
	defer n.db.mu.Unlock()
	for _, p := range n.db.points {
		_ = p.DeleteMetricPoints(ctx, pick)
	}
	return nil
}

func (n *fakeNode) MetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error) {
	return n.merged(ctx, from, "")
}

func (n *fakeNode) PeerMetricPoints(ctx context.Context, from int64) ([]engine.MetricPoint, error) {
	return n.merged(ctx, from, n.name)
}

// merged merges the points of every node but except, as the store does.
func (n *fakeNode) merged(ctx context.Context, from int64, except string) ([]engine.MetricPoint, error) {
	n.db.mu.Lock()
	defer n.db.mu.Unlock()
	if n.dead {
		return nil, errDead
	}
	type key struct {
		account, ns, metric, dn, dv string
		minute                      int64
	}
	m := map[key]engine.MetricPoint{}
	for node, ps := range n.db.points {
		if node == except {
			continue
		}
		got, _ := ps.MetricPoints(ctx, from)
		for _, p := range got {
			k := key{p.Account, p.Namespace, p.Metric, p.DimName, p.DimValue, p.Minute}
			if o, ok := m[k]; ok {
				p.Sum, p.Count, p.Min, p.Max = p.Sum+o.Sum, p.Count+o.Count, min(p.Min, o.Min), max(p.Max, o.Max)
			}
			m[k] = p
		}
	}
	out := make([]engine.MetricPoint, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Minute < out[j].Minute })
	return out, nil
}

// TestPeerOverlay: a node reads its own minutes and the other nodes'
// merged; a refresh reads the recent minutes again and keeps the older.
func TestPeerOverlay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db := newFakeDB(clk)
	a, b := db.node("a"), db.node("b")
	sa, sb := New(Options{Clock: clk}), New(Options{Clock: clk})
	q := Queue("q")
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	read := func(s *Store, m int) Datapoint {
		dps := s.Datapoints(acct, NamespaceSQS, MessagesSent, q, minute(m), minute(m+1))
		if len(dps) > 1 {
			t.Fatalf("%d datapoints in one minute", len(dps))
		}
		if len(dps) == 0 {
			return Datapoint{}
		}
		dps[0].Timestamp = time.Time{}
		return dps[0]
	}
	save := func(s *Store, n *fakeNode) {
		if err := s.Flush(ctx, n, true); err != nil {
			t.Fatal(err)
		}
	}

	// Minute 0: a records 1 and 4, b records 2; b has a series a lacks.
	sa.Record(acct, NamespaceSQS, MessagesSent, q, 1)
	sa.Record(acct, NamespaceSQS, MessagesSent, q, 4)
	sb.Record(acct, NamespaceSQS, MessagesSent, q, 2)
	sb.Record(acct, NamespaceSQS, MessagesDeleted, q, 1)
	save(sa, a)
	save(sb, b)
	if got := read(sa, 0); got != (Datapoint{Sum: 5, SampleCount: 2, Minimum: 1, Maximum: 4}) {
		t.Errorf("before LoadPeers a reads %+v, its own only", got)
	}
	if err := sa.LoadPeers(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := sb.LoadPeers(ctx, b); err != nil {
		t.Fatal(err)
	}
	cluster := Datapoint{Sum: 7, SampleCount: 3, Minimum: 1, Maximum: 4}
	for name, s := range map[string]*Store{"a": sa, "b": sb} {
		if got := read(s, 0); got != cluster {
			t.Errorf("%s reads %+v, want the cluster's %+v", name, got, cluster)
		}
	}
	if keys := sa.Series(); len(keys) != 2 {
		t.Errorf("a lists %v, want its series and b's", keys)
	}
	if _, ok := sa.Totals(acct, NamespaceSQS, MessagesDeleted, q); ok {
		t.Error("a has Totals of b's series: Prometheus would count it on both nodes")
	}

	// b records more in minute 0, then minute 1 begins and b saves both.
	sb.Record(acct, NamespaceSQS, MessagesSent, q, 10)
	clk.Advance(time.Minute)
	sb.Record(acct, NamespaceSQS, MessagesSent, q, 3)
	save(sb, b)
	if got := read(sa, 0); got != cluster {
		t.Errorf("before a refresh a reads %+v", got)
	}
	if err := sa.RefreshPeers(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		minute int
		want   Datapoint
	}{
		{0, Datapoint{Sum: 17, SampleCount: 4, Minimum: 1, Maximum: 10}},
		{1, Datapoint{Sum: 3, SampleCount: 1, Minimum: 3, Maximum: 3}},
	} {
		if got := read(sa, tc.minute); got != tc.want {
			t.Errorf("after a refresh, minute %d reads %+v, want %+v", tc.minute, got, tc.want)
		}
	}

	// Minutes before the refreshed ones are kept without being read again.
	clk.Advance(5 * time.Minute)
	db.points["b"] = newMemPoints()
	if err := sa.RefreshPeers(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := read(sa, 1); got.Sum != 3 {
		t.Errorf("a settled minute of b's was dropped: %+v", got)
	}
	// Past retention they go.
	clk.Advance(DefaultRetention)
	if err := sa.RefreshPeers(ctx, a); err != nil {
		t.Fatal(err)
	}
	sa.peerMu.RLock()
	left := len(sa.peers)
	sa.peerMu.RUnlock()
	if left != 0 {
		t.Errorf("%d peer series outlive retention", left)
	}
}

// samplerNode is one node's metrics on a shared fake store.
type samplerNode struct {
	store   *Store
	sampler *Sampler
	view    *fakeNode
}

// TestSharedSampling: of two nodes, the one holding the lease samples the
// gauges, once a minute; when it dies the other takes over within the
// lease time, and when a node closes it hands the lease over at once.
func TestSharedSampling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0.Add(5 * time.Second))
	eng, err := embedded.Open(ctx, embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: acct, Name: "q", Created: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, acct, "q", []engine.NewMessage{{Body: "a"}, {Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	// Another account's queue of the same name is sampled as its own.
	if _, _, err := eng.CreateQueue(ctx, engine.Queue{Account: other, Name: "q", Created: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, other, "q", []engine.NewMessage{{Body: "c"}}); err != nil {
		t.Fatal(err)
	}
	db := newFakeDB(clk)
	const leaseTime = 30 * time.Second
	var nodes []*samplerNode
	for _, name := range []string{"a", "b", "c"} {
		n := &samplerNode{store: New(Options{Clock: clk, Account: acct}), view: db.node(name)}
		n.sampler = NewSampler(SamplerOptions{Store: n.store, Backend: eng, Clock: clk,
			Persist: n.view, Cluster: n.view, LeaseTime: leaseTime})
		t.Cleanup(func() { n.sampler.Close(ctx) })
		nodes = append(nodes, n)
	}
	step := func() {
		t.Helper()
		// A tick still under way from the last step would re-arm from the
		// moved clock, past the tick this step means to fire: wait for
		// every node to be between ticks first.
		before := make([]uint64, len(nodes))
		testwait.Eventually(t, "every node between ticks", func() bool {
			for i, n := range nodes {
				var due time.Time
				if before[i], due = n.sampler.NextTick(); !due.After(clk.Now()) {
					return false
				}
			}
			return true
		})
		clk.Advance(10 * time.Second)
		testwait.Eventually(t, "every node's tick", func() bool {
			for i, n := range nodes {
				if n.sampler.Ticks() == before[i] {
					return false
				}
			}
			return true
		})
	}
	visibleOf := func(n *samplerNode, account string, at time.Time) Datapoint {
		dps := n.store.Datapoints(account, NamespaceSQS, MessagesVisible, Queue("q"), at, at.Add(time.Minute))
		if len(dps) != 1 {
			t.Fatalf("%s: %d datapoints of the minute %s", n.view.name, len(dps), at.Format(time.TimeOnly))
		}
		return dps[0]
	}
	visible := func(n *samplerNode, at time.Time) Datapoint { return visibleOf(n, acct, at) }
	holder := func() *samplerNode {
		var h *samplerNode
		for _, n := range nodes {
			if n.sampler.Holding() {
				if h != nil {
					t.Fatalf("%s and %s both hold the lease", h.view.name, n.view.name)
				}
				h = n
			}
		}
		return h
	}
	// Through the next minute and one save more.
	nextMinute := func() time.Time {
		m := clk.Now().Truncate(time.Minute).Add(time.Minute)
		for clk.Now().Before(m) {
			step()
		}
		step()
		return m
	}

	m := nextMinute()
	for _, n := range nodes {
		if got := visible(n, m); got.SampleCount != 1 || got.Sum != 2 {
			t.Errorf("%s reads %+v, want one sample of 2", n.view.name, got)
		}
		if got := visibleOf(n, other, m); got.SampleCount != 1 || got.Sum != 1 {
			t.Errorf("%s reads %+v of %s's queue, want one sample of 1", n.view.name, got, other)
		}
	}

	// The holder dies: its lease runs out, and one of the others samples.
	dead := holder()
	db.mu.Lock()
	dead.view.dead = true
	db.mu.Unlock()
	nodes = slicesDelete(nodes, dead)
	_ = dead.sampler.Close(ctx) // fails: the node is dead, its lease stays
	start := clk.Now()
	for holder() == nil {
		step()
		if clk.Now().Sub(start) > leaseTime+10*time.Second {
			t.Fatalf("no node took the lease over in %v", clk.Now().Sub(start))
		}
	}
	m = nextMinute()
	for _, n := range nodes {
		if got := visible(n, m); got.SampleCount != 1 {
			t.Errorf("after the takeover %s reads %+v, want one sample", n.view.name, got)
		}
	}

	// The holder closes: the other takes the lease at its next tick.
	closing := holder()
	nodes = slicesDelete(nodes, closing)
	if err := closing.sampler.Close(ctx); err != nil {
		t.Fatal(err)
	}
	step()
	if holder() != nodes[0] {
		t.Fatalf("the lease was not handed over")
	}
}

func slicesDelete(nodes []*samplerNode, n *samplerNode) []*samplerNode {
	for i, o := range nodes {
		if o == n {
			return append(nodes[:i:i], nodes[i+1:]...)
		}
	}
	return nodes
}
