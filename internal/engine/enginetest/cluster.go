package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// engine.Cluster and RecordStore.GetRecord as a store shows them to its own
// node: whatever backend, a store is at least the only node of its
// cluster. What several nodes see of each other is the backend's own test.

var clusterTests = []test{
	{"GetRecord", testGetRecord},
	{"Secret", testSecret},
	{"SecretConcurrent", testSecretConcurrent},
	{"TakeLease", testTakeLease},
	{"WatchRecordsNotOwn", testWatchRecordsNotOwn},
	{"PeerMetricPoints", testPeerMetricPoints},
}

// WantRecord checks GetRecord(kind, key): want is the value, or nil for
// no record.
func (h *H) WantRecord(kind, key string, want []byte) {
	h.Helper()
	got, found, err := h.B.GetRecord(h.Ctx, kind, key)
	switch {
	case err != nil:
		h.Fatalf("GetRecord(%s, %s): %v", kind, key, err)
	case found != (want != nil) || !bytes.Equal(got, want):
		h.Fatalf("GetRecord(%s, %s) = %q, found %v; want %q, found %v", kind, key, got, found, want, want != nil)
	}
}

// wantTestRecords checks, record by record, what putTestRecords left.
func wantTestRecords(h *H) {
	h.Helper()
	for _, r := range []struct {
		kind, key string
		want      []byte // nil: none
	}{
		{"topic", "a", []byte("1")},
		{"topic", "b", []byte("two")}, // replaced
		{"topic", "c", nil},           // deleted
		{"topic", "never", nil},
		{"topic", "x", nil}, // another kind's key
		{"topics", "x", []byte("a kind whose name starts with another's")},
		{"top", "y", []byte("and the other way")},
		{"top", "icsx", nil}, // topics/x with the kind and key run together
		{"sub", "a", []byte("s")},
		{"sub", "a/b", []byte("t")},
		{"sub", "b", nil}, // B is another key
		{"sub", "a0", []byte("v")},
		{"sub", "é", []byte{}}, // empty, and there
		{"none", "a", nil},
	} {
		h.WantRecord(r.kind, r.key, r.want)
	}
}

func testGetRecord(h *H) {
	putTestRecords(h)
	wantTestRecords(h)
	// The value handed out is a copy.
	v, _, err := h.B.GetRecord(h.Ctx, "topic", "a")
	if err != nil {
		h.Fatal(err)
	}
	v[0] = 'X'
	h.WantRecord("topic", "a", []byte("1"))
	if err := h.B.DeleteRecord(h.Ctx, "topic", "a"); err != nil {
		h.Fatal(err)
	}
	h.WantRecord("topic", "a", nil)
	h.PutRecord("topic", "a", "again")
	h.WantRecord("topic", "a", []byte("again"))
}

// creator makes a secret's value and counts how often it was asked to.
type creator struct {
	mu    sync.Mutex
	calls int
	value []byte
	err   error
}

func (c *creator) create() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return bytes.Clone(c.value), c.err
}

func (c *creator) called() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// WantSecret calls Secret(name) with a create that must not run, and
// checks the value.
func (h *H) WantSecret(name string, want []byte) {
	h.Helper()
	got, err := h.B.Secret(h.Ctx, name, func() ([]byte, error) {
		return nil, fmt.Errorf("create of secret %s called again", name)
	})
	if err != nil || !bytes.Equal(got, want) {
		h.Fatalf("Secret(%s) = %q, %v; want %q", name, got, err, want)
	}
}

func testSecret(h *H) {
	// A create that fails stores nothing, and the caller hears why.
	failing := &creator{err: errors.New("no entropy")}
	if v, err := h.B.Secret(h.Ctx, "key", failing.create); !errors.Is(err, failing.err) || v != nil {
		h.Fatalf("Secret with a failing create = %q, %v; want its error", v, err)
	}
	first := &creator{value: []byte("first")}
	got, err := h.B.Secret(h.Ctx, "key", first.create)
	if err != nil || string(got) != "first" || first.called() != 1 {
		h.Fatalf("Secret(key) = %q, %v after %d creates; want first, made once", got, err, first.called())
	}
	// Later calls read it and create nothing.
	h.WantSecret("key", []byte("first"))
	h.WantSecret("key", []byte("first"))
	// Names are distinct, also where one starts with the other.
	for _, name := range []string{"key2", "ke", "Key"} {
		c := &creator{value: []byte("value of " + name)}
		if got, err := h.B.Secret(h.Ctx, name, c.create); err != nil || !bytes.Equal(got, c.value) || c.called() != 1 {
			h.Fatalf("Secret(%s) = %q, %v after %d creates; want its own value", name, got, err, c.called())
		}
		h.WantSecret(name, c.value)
	}
	h.WantSecret("key", []byte("first"))
	// What a caller does to the value it got does not change the secret.
	got[0] = 'X'
	h.WantSecret("key", []byte("first"))
}

// testSecretConcurrent: callers asking at once all get the one value
// stored, whoever's create made it.
func testSecretConcurrent(h *H) {
	const n = 8
	var (
		wg    sync.WaitGroup
		got   [n][]byte
		errs  [n]error
		makes [n]*creator
	)
	for i := range n {
		makes[i] = &creator{value: []byte(fmt.Sprint("value ", i))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = h.B.Secret(h.Ctx, "shared", makes[i].create)
		}()
	}
	wg.Wait()
	creates := 0
	for i := range n {
		if errs[i] != nil {
			h.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(got[i], got[0]) {
			h.Fatalf("caller %d got %q, caller 0 %q", i, got[i], got[0])
		}
		creates += makes[i].called()
	}
	stored := false
	for i := range n {
		stored = stored || bytes.Equal(got[0], makes[i].value)
	}
	if !stored || creates == 0 {
		h.Fatalf("the callers got %q after %d creates, none of which made it", got[0], creates)
	}
	h.WantSecret("shared", got[0])
}

// testTakeLease: a store is at least the only node of its cluster, so it
// holds every lease it takes, and keeps it when it renews.
func testTakeLease(h *H) {
	for _, name := range []string{"sampler", "alarms", "sampler", "alarms"} {
		held, err := h.B.TakeLease(h.Ctx, name, time.Minute)
		if err != nil || !held {
			h.Fatalf("TakeLease(%s) = %v, %v; the only node must hold it", name, held, err)
		}
	}
}

// recordNews collects what WatchRecords tells.
type recordNews struct {
	mu   sync.Mutex
	news []string // kind/key
}

func (n *recordNews) tell(kind, key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.news = append(n.news, kind+"/"+key)
}

func (n *recordNews) told() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.news...)
}

// testWatchRecordsNotOwn: a store never tells its own node of the
// records that node changed.
func testWatchRecordsNotOwn(h *H) {
	news := &recordNews{}
	h.B.WatchRecords(news.tell)
	h.Create("q", nil)
	// The barrier: a long poll woken by a send made after the changes.
	// A store that hears of changes the way its long polls do (a shared
	// store's notifications, in commit order) has heard of them by then.
	wait := h.StartWait(h.Ctx, "q", engine.ReceiveRequest{Max: 1, Wait: 20 * time.Second})
	testwait.Never(h, "the store told its own node of its own record changes", func() {
		putTestRecords(h)
		h.SendBodies("q", "after the changes")
		if r := h.Await(wait); r.Err != nil || len(r.Msgs) != 1 {
			h.Fatalf("long poll: %d messages, %v", len(r.Msgs), r.Err)
		}
	}, func() bool { return len(news.told()) > 0 })
}

// testPeerMetricPoints: a store's own points are no peer's, and a point
// put again for its series and minute replaces the one stored, in one
// batch or across batches.
func testPeerMetricPoints(h *H) {
	peers := func() []engine.MetricPoint {
		h.Helper()
		ps, err := h.B.PeerMetricPoints(h.Ctx, 0)
		if err != nil {
			h.Fatalf("PeerMetricPoints: %v", err)
		}
		return ps
	}
	if ps := peers(); len(ps) != 0 {
		h.Fatalf("PeerMetricPoints on an empty store = %+v", ps)
	}
	all := putTestPoints(h)
	if ps := peers(); len(ps) != 0 {
		h.Fatalf("PeerMetricPoints = %+v; the store's own points are no peer's", ps)
	}
	batch := []engine.MetricPoint{
		Point(200, "AWS/SQS", "NumberOfMessagesSent", "a", 1),
		Point(200, "AWS/SQS", "NumberOfMessagesSent", "a", 8),
	}
	if err := h.B.PutMetricPoints(h.Ctx, batch); err != nil {
		h.Fatal(err)
	}
	h.WantPoints(200, batch[1])
	again := Point(200, "AWS/SQS", "NumberOfMessagesSent", "a", 12)
	again.Count, again.Min, again.Max = 5, 0.5, 11
	if err := h.B.PutMetricPoints(h.Ctx, []engine.MetricPoint{again}); err != nil {
		h.Fatal(err)
	}
	h.WantPoints(200, again)
	h.WantPoints(0, append(all, again)...)
	if ps := peers(); len(ps) != 0 {
		h.Fatalf("PeerMetricPoints = %+v; the store's own points are no peer's", ps)
	}
}
