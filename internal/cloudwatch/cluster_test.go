package cloudwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/testwait"
)

// sharedRecords is one node's view of records that several nodes share:
// a change is told to the other nodes (as engine.Cluster.WatchRecords
// does) unless the test holds the news back. Leases run on the rig's
// metric clock.
type sharedRecords struct {
	*memRecords
	c    *nodes
	self int
}

// nodes are services sharing one memRecords.
type nodes struct {
	mu       sync.Mutex
	svcs     []*Service
	withhold bool
	leases   map[string]string // lease name → holder; leases never lapse here
}

func (r *sharedRecords) tell(kind, key string) {
	r.c.mu.Lock()
	svcs, hold := append([]*Service(nil), r.c.svcs...), r.c.withhold
	r.c.mu.Unlock()
	for i, s := range svcs {
		if i != r.self && !hold {
			s.RecordChanged(kind, key)
		}
	}
}

func (r *sharedRecords) PutRecord(ctx context.Context, kind, key string, v []byte) error {
	err := r.memRecords.PutRecord(ctx, kind, key, v)
	r.tell(kind, key)
	return err
}

func (r *sharedRecords) DeleteRecord(ctx context.Context, kind, key string) error {
	err := r.memRecords.DeleteRecord(ctx, kind, key)
	r.tell(kind, key)
	return err
}

func (r *sharedRecords) InsertRecord(ctx context.Context, kind, key string, v []byte) (bool, error) {
	ok, err := r.memRecords.InsertRecord(ctx, kind, key, v)
	if ok {
		r.tell(kind, key)
	}
	return ok, err
}

func (r *sharedRecords) SwapRecord(ctx context.Context, kind, key string, old, v []byte) (bool, error) {
	ok, err := r.memRecords.SwapRecord(ctx, kind, key, old, v)
	if ok {
		r.tell(kind, key)
	}
	return ok, err
}

func (r *sharedRecords) DeleteRecordIf(ctx context.Context, kind, key string, old []byte) (bool, error) {
	ok, err := r.memRecords.DeleteRecordIf(ctx, kind, key, old)
	if ok {
		r.tell(kind, key)
	}
	return ok, err
}

func (r *sharedRecords) Shared() bool { return true }

func (r *sharedRecords) TakeLease(_ context.Context, name string, d time.Duration) (bool, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	me := string(rune('a' + r.self))
	if h := r.c.leases[name]; h != "" && h != me {
		return false, nil
	}
	r.c.leases[name] = me
	if d == 0 {
		delete(r.c.leases, name)
	}
	return d > 0, nil
}

func (r *sharedRecords) PeerMetricPoints(context.Context, int64) ([]engine.MetricPoint, error) {
	return nil, nil
}

// newPair is two services on one record store and one metric store; a
// holds the alarm lease.
func newPair(t *testing.T) (*rig, *Service, *Service, *nodes) {
	t.Helper()
	r := &rig{clk: clock.NewFake(t0.Add(30 * time.Second)), mclk: clock.NewFake(t0), records: &memRecords{}, notifier: &fakeNotifier{}}
	r.store = metrics.New(metrics.Options{Clock: r.mclk})
	c := &nodes{leases: map[string]string{}}
	var svcs []*Service
	for i := range 2 {
		view := &sharedRecords{memRecords: r.records, c: c, self: i}
		svc, err := New(context.Background(), Config{Metrics: r.store, Records: view, Notifier: r.notifier, Clock: r.clk, Cluster: view})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		svcs = append(svcs, svc)
	}
	c.svcs = svcs
	return r, svcs[0], svcs[1], c
}

// tickBoth moves the services' clock past the next evaluation and waits
// for both nodes' ticks.
func tickBoth(t *testing.T, r *rig, svcs ...*Service) {
	t.Helper()
	before := make([]uint64, len(svcs))
	for i, s := range svcs {
		before[i] = s.Ticks()
	}
	r.clk.Advance(time.Minute)
	testwait.Eventually(t, "the evaluations", func() bool {
		for i, s := range svcs {
			if s.Ticks() == before[i] {
				return false
			}
		}
		return true
	})
}

func TestClusterAlarmNews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, a, b, c := newPair(t)

	// Made on a with the news held back: b finds it by name at once.
	c.withhold = true
	if _, err := a.putMetricAlarm(ctx, input("x")); err != nil {
		t.Fatal(err)
	}
	if out, err := b.describeAlarms(ctx, &DescribeAlarmsInput{AlarmNames: []string{"x"}}); err != nil || len(out.MetricAlarms) != 1 {
		t.Fatalf("b by name: %+v %v", out, err)
	}
	r.clk.Advance(time.Second) // one change a second: the history's order is plain
	// SetAlarmState on b starts from the stored alarm.
	if _, err := b.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "x", StateValue: stateOK, StateReason: ptr("by hand")}); err != nil {
		t.Fatal(err)
	}
	c.withhold = false

	// With the news told, a and b show the same alarms and history.
	r.clk.Advance(time.Second)
	if _, err := b.putMetricAlarm(ctx, input("y")); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Second)
	if err := b.deleteAlarmsNamed(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "a to follow b", func() bool {
		out, _ := a.describeAlarms(ctx, &DescribeAlarmsInput{})
		return len(out.MetricAlarms) == 1 && out.MetricAlarms[0].AlarmName == "y"
	})
	history := func(s *Service) []string {
		out, err := s.describeAlarmHistory(ctx, &DescribeAlarmHistoryInput{ScanBy: "TimestampAscending"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range out.AlarmHistoryItems {
			got = append(got, h.AlarmName+" "+h.HistoryItemType+": "+h.HistorySummary)
		}
		return got
	}
	want := []string{
		`x ConfigurationUpdate: Alarm "x" created`,
		"x StateUpdate: Alarm updated from INSUFFICIENT_DATA to OK",
		"x Action: Successfully executed action " + topicARN,
		`y ConfigurationUpdate: Alarm "y" created`,
		`x ConfigurationUpdate: Alarm "x" deleted`,
	}
	// Both missed the news of the history held back: a kind read again
	// whole catches them up, as after a lost connection.
	a.RecordChanged(kindHistory, "")
	b.RecordChanged(kindHistory, "")
	testwait.Eventually(t, "the same history on both", func() bool {
		return equal(history(a), want) && equal(history(b), want)
	})
}

// deleteAlarmsNamed deletes alarms through the action.
func (s *Service) deleteAlarmsNamed(ctx context.Context, names ...string) error {
	_, err := s.deleteAlarms(ctx, &AlarmNamesInput{AlarmNames: names})
	return err
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestClusterEvaluation: only the lease holder evaluates and notifies; it
// does not undo a change another node made that it has not heard of yet;
// when it closes the other node evaluates.
func TestClusterEvaluation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, a, b, c := newPair(t)
	if _, err := a.putMetricAlarm(ctx, input("x")); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "b to know x", func() bool {
		out, _ := b.describeAlarms(ctx, &DescribeAlarmsInput{})
		return len(out.MetricAlarms) == 1
	})
	c.leases[AlarmLease] = "a"

	// Minute 0 breaches; a evaluates 20 s after minute 1 begins, b does not.
	r.record("q", "NumberOfMessagesReceived", 0, 3)
	tickBoth(t, r, a, b)
	if !a.Evaluating() || b.Evaluating() {
		t.Fatalf("evaluating: a %v, b %v", a.Evaluating(), b.Evaluating())
	}
	if n := len(r.notifier.notes()); n != 1 {
		t.Fatalf("%d notifications, want 1", n)
	}
	testwait.Eventually(t, "ALARM on b", func() bool { return b.alarmState("x") == stateAlarm })

	// b sets OK and a does not hear of it: a evaluates the stored alarm,
	// and minute 1 breaching sets it off again, once.
	c.withhold = true
	if _, err := b.setAlarmState(ctx, &SetAlarmStateInput{AlarmName: "x", StateValue: stateOK, StateReason: ptr("by hand")}); err != nil {
		t.Fatal(err)
	}
	c.withhold = false
	r.record("q", "NumberOfMessagesReceived", 1, 3)
	tickBoth(t, r, a, b)
	notes := r.notifier.notes()
	if len(notes) != 3 { // ALARM (a), OK (b), ALARM again (a)
		t.Fatalf("%d notifications, want 3", len(notes))
	}
	if a.alarmState("x") != stateAlarm {
		t.Fatalf("a's x: %s", a.alarmState("x"))
	}

	// b raises the threshold (its own evaluation sets OK), a not told: a
	// must not set the alarm off on the old threshold.
	c.withhold = true
	in := input("x")
	in.Threshold = ptr(100.0)
	if _, err := b.putMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	c.withhold = false
	notes = r.notifier.notes()
	r.record("q", "NumberOfMessagesReceived", 2, 3)
	tickBoth(t, r, a, b)
	if got := r.notifier.notes(); len(got) != len(notes) {
		t.Fatalf("a notified %d more times on a threshold b had changed", len(got)-len(notes))
	}
	if got := a.alarmNow("x"); got.Threshold != 100 || got.State != stateOK {
		t.Fatalf("a's x: threshold %v, state %s", got.Threshold, got.State)
	}

	// a closes: b takes the lease at its next tick.
	a.Close()
	r.record("q", "NumberOfMessagesReceived", 3, 300)
	tickBoth(t, r, b)
	if !b.Evaluating() || b.alarmState("x") != stateAlarm {
		t.Fatalf("b: evaluating %v, x %s", b.Evaluating(), b.alarmState("x"))
	}
}

func (s *Service) alarmState(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.alarms[name]; a != nil {
		return a.State
	}
	return ""
}

func (s *Service) alarmNow(name string) alarm {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.alarms[name]
}

// TestClusterAlarmChangesAtOnce: changes of one alarm through two nodes
// at the same moment, many rounds over, all hold: each builds on the
// alarm as stored, and one that lost the race to the store builds again.
func TestClusterAlarmChangesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, a, b, _ := newPair(t)
	if _, err := a.putMetricAlarm(ctx, input("x")); err != nil {
		t.Fatal(err)
	}
	arn := a.alarmARN(a.account, "x")
	const rounds = 20 // 40 tags: below the limit of 50
	for i := range rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 3)
		for k, call := range []func() error{
			func() error {
				_, err := a.tagResource(ctx, &TagResourceInput{ResourceARN: arn, Tags: []Tag{{Key: fmt.Sprint("a", i), Value: "v"}}})
				return err
			},
			func() error {
				_, err := b.tagResource(ctx, &TagResourceInput{ResourceARN: arn, Tags: []Tag{{Key: fmt.Sprint("b", i), Value: "v"}}})
				return err
			},
			func() error {
				on := i%2 == 0
				in := &AlarmNamesInput{AlarmNames: []string{"x"}}
				var err error
				if on {
					_, err = b.enableAlarmActions(ctx, in)
				} else {
					_, err = b.disableAlarmActions(ctx, in)
				}
				return err
			},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[k] = call()
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	}
	v, _, _ := r.records.GetRecord(ctx, kindAlarm, "x")
	var got alarm
	if err := json.Unmarshal(v, &got); err != nil {
		t.Fatal(err)
	}
	enabled := (rounds-1)%2 == 0 // the last round's
	if len(got.Tags) != 2*rounds || got.ActionsEnabled != enabled {
		t.Fatalf("stored alarm after %d rounds: %d tags, actions enabled %v; want %d tags, %v",
			rounds, len(got.Tags), got.ActionsEnabled, 2*rounds, enabled)
	}
}
