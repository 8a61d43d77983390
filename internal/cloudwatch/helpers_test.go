package cloudwatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
)

// t0 is a minute boundary; tests record datapoints in the minutes after it.
var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// memRecords is an in-memory engine.RecordStore.
type memRecords struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

func (r *memRecords) PutRecord(_ context.Context, kind, key string, v []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string][]byte{}
	}
	if r.m[kind] == nil {
		r.m[kind] = map[string][]byte{}
	}
	r.m[kind][key] = append([]byte(nil), v...)
	return nil
}

func (r *memRecords) DeleteRecord(_ context.Context, kind, key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m[kind], key)
	return nil
}

// writeIf puts v as kind/key (deletes it when del) if cond holds of it.
func (r *memRecords) writeIf(kind, key string, cond func(cur []byte, found bool) bool, v []byte, del bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, found := r.m[kind][key]
	if !cond(cur, found) {
		return false
	}
	if r.m == nil {
		r.m = map[string]map[string][]byte{}
	}
	if r.m[kind] == nil {
		r.m[kind] = map[string][]byte{}
	}
	if del {
		delete(r.m[kind], key)
	} else {
		r.m[kind][key] = append([]byte{}, v...)
	}
	return true
}

func (r *memRecords) InsertRecord(_ context.Context, kind, key string, v []byte) (bool, error) {
	return r.writeIf(kind, key, func(_ []byte, found bool) bool { return !found }, v, false), nil
}

func (r *memRecords) SwapRecord(_ context.Context, kind, key string, old, v []byte) (bool, error) {
	return r.writeIf(kind, key, func(cur []byte, found bool) bool { return found && bytes.Equal(cur, old) }, v, false), nil
}

func (r *memRecords) DeleteRecordIf(_ context.Context, kind, key string, old []byte) (bool, error) {
	return r.writeIf(kind, key, func(cur []byte, found bool) bool { return found && bytes.Equal(cur, old) }, nil, true), nil
}

func (r *memRecords) Records(_ context.Context, kind string) ([]engine.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.Record
	for k, v := range r.m[kind] {
		out = append(out, engine.Record{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (r *memRecords) GetRecord(_ context.Context, kind, key string) ([]byte, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[kind][key]
	return append([]byte(nil), v...), ok, nil
}

func (r *memRecords) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m[kind])
}

// note is one notification the fake notifier received.
type note struct{ topic, subject, message string }

type fakeNotifier struct {
	mu   sync.Mutex
	got  []note
	fail error
}

func (n *fakeNotifier) Notify(_ context.Context, topic, subject, message string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return n.fail
	}
	n.got = append(n.got, note{topic, subject, message})
	return nil
}

func (n *fakeNotifier) notes() []note {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]note(nil), n.got...)
}

// rig is a service whose own clock stays put (its minute timer never
// fires unless a test moves it), over a metric store on a clock of its
// own that tests move to record datapoints in chosen minutes.
type rig struct {
	svc      *Service
	clk      *clock.Fake // the service's
	mclk     *clock.Fake // the metric store's
	store    *metrics.Store
	records  *memRecords
	notifier *fakeNotifier
}

// ownAccount is the rig's configured account (Config.Account's default).
const ownAccount = "000000000000"

const topicARN = "arn:aws:sns:us-east-1:" + ownAccount + ":alerts"

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(t0.Add(30 * time.Second)), mclk: clock.NewFake(t0), records: &memRecords{}, notifier: &fakeNotifier{}}
	r.store = metrics.New(metrics.Options{Clock: r.mclk})
	r.start(t)
	return r
}

func (r *rig) start(t testing.TB) {
	t.Helper()
	svc, err := New(context.Background(), Config{Metrics: r.store, Records: r.records, Notifier: r.notifier, Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	t.Cleanup(func() { svc.Close() })
}

// record adds value to the queue's metric in minute m after t0, in the
// configured account.
func (r *rig) record(queue, metric string, m int, values ...float64) {
	r.recordIn(ownAccount, queue, metric, m, values...)
}

// recordIn adds value to account's queue's metric in minute m after t0.
func (r *rig) recordIn(account, queue, metric string, m int, values ...float64) {
	r.mclk.Set(t0.Add(time.Duration(m) * time.Minute))
	for _, v := range values {
		r.store.Record(account, metrics.NamespaceSQS, metric, metrics.Queue(queue), v)
	}
}

func (r *rig) alarm(name string) alarm {
	r.svc.mu.Lock()
	defer r.svc.mu.Unlock()
	return *r.svc.alarms[name]
}

// input is a valid alarm on the queue q's NumberOfMessagesReceived.
func input(name string) *PutMetricAlarmInput {
	return &PutMetricAlarmInput{
		AlarmName: name, Namespace: "AWS/SQS", MetricName: "NumberOfMessagesReceived",
		Dimensions: []Dimension{{Name: "QueueName", Value: "q"}}, Statistic: "Sum", Period: ptr[int32](60),
		EvaluationPeriods: ptr[int32](1), Threshold: ptr(1.0), ComparisonOperator: "GreaterThanOrEqualToThreshold",
		AlarmActions: []string{topicARN}, OKActions: []string{topicARN},
	}
}

func wantError(t *testing.T, err error, code, message string) {
	t.Helper()
	var e *protocol.Error
	if !errors.As(err, &e) {
		t.Fatalf("want %s, got %v", code, err)
	}
	if e.Code != code || message != "" && e.Message != message {
		t.Errorf("error = %s %q\nwant    %s %q", e.Code, e.Message, code, message)
	}
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) }
