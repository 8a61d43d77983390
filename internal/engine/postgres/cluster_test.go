package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// engine.Cluster as several nodes on one schema see each other.

// A lease is one node's until it runs out (on the database's clock); then
// another node takes it, and the first has lost it.
func TestTakeLeaseExclusive(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	const d = 300 * time.Millisecond
	take := func(s *Store, name string) bool {
		t.Helper()
		held, err := s.TakeLease(ctx, name, d)
		if err != nil {
			t.Fatalf("TakeLease(%s): %v", name, err)
		}
		return held
	}
	if !take(a, "sampler") {
		t.Fatal("a did not get a free lease")
	}
	if take(b, "sampler") {
		t.Fatal("b took the lease a holds")
	}
	if !take(a, "sampler") {
		t.Fatal("a could not renew its lease")
	}
	// Leases of other names, and the store's own leases, are apart.
	if !take(b, "alarms") {
		t.Fatal("b did not get another free lease")
	}
	if held, err := a.takeLease(ctx, "janitor", time.Minute); err != nil || !held {
		t.Fatalf("a's janitor lease: %v, %v", held, err)
	}
	if !take(b, "janitor") {
		t.Fatal("the service lease janitor is taken by the store's own")
	}
	var until time.Time
	if err := a.pool.QueryRow(ctx, `SELECT until FROM leases WHERE name = 'service:sampler'`).Scan(&until); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "b to take the lease once a's ran out", func() bool { return take(b, "sampler") })
	var expired bool
	if err := a.pool.QueryRow(ctx, `SELECT clock_timestamp() > $1`, until).Scan(&expired); err != nil || !expired {
		t.Fatalf("b took the lease before a's ran out (%v): %v", until, err)
	}
	if take(a, "sampler") {
		t.Fatal("a took the lease b holds now")
	}
}

// Nodes making a secret at the same moment all end up with one value,
// which each reads from then on.
func TestSecretConcurrentNodes(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	const perNode = 4
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		got   [][]byte
		made  [][]byte
		start = make(chan struct{})
	)
	for i := range 2 * perNode {
		s := []*Store{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			v, err := s.Secret(ctx, "signing-key", func() ([]byte, error) {
				v := []byte(fmt.Sprint("made by caller ", i))
				mu.Lock()
				made = append(made, v)
				mu.Unlock()
				return v, nil
			})
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, v := range got {
		if !bytes.Equal(v, got[0]) {
			t.Fatalf("the callers got different secrets: %q", got)
		}
	}
	if !slices.ContainsFunc(made, func(v []byte) bool { return bytes.Equal(v, got[0]) }) {
		t.Fatalf("the secret %q is none of those made: %q", got[0], made)
	}
	for _, s := range []*Store{a, b} {
		v, err := s.Secret(ctx, "signing-key", func() ([]byte, error) {
			t.Error("create called for a secret that exists")
			return []byte("again"), nil
		})
		if err != nil || !bytes.Equal(v, got[0]) {
			t.Fatalf("Secret after the race = %q, %v; want %q", v, err, got[0])
		}
	}
}

// news is one thing WatchRecords told.
type news struct{ kind, key string }

// watch sets s's WatchRecords and returns what it was told so far.
func watch(s *Store) func() []news {
	var (
		mu   sync.Mutex
		told []news
	)
	s.WatchRecords(func(kind, key string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, news{kind, key})
	})
	return func() []news {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(told)
	}
}

// waitNews waits until told holds as many as want, and checks it holds
// want: notifications arrive in commit order, so once the last of want
// arrived, anything else would have too.
func waitNews(t *testing.T, who string, told func() []news, want ...news) {
	t.Helper()
	testwait.Eventually(t, fmt.Sprintf("%s to be told %q", who, want), func() bool { return len(told()) >= len(want) })
	if got := told(); !slices.Equal(got, want) {
		t.Fatalf("%s was told %q, want %q", who, got, want)
	}
}

// A node is told of every record another node puts or deletes, never of
// its own, and of a change whose key is too long for a notification as
// the change of its kind.
func TestWatchRecords(t *testing.T) {
	a, b, _ := twoNodes(t)
	ctx := context.Background()
	toldA, toldB := watch(a), watch(b)
	put := func(s *Store, kind, key string) {
		t.Helper()
		if err := s.PutRecord(ctx, kind, key, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	del := func(s *Store, kind, key string) {
		t.Helper()
		if err := s.DeleteRecord(ctx, kind, key); err != nil {
			t.Fatal(err)
		}
	}
	const arn = "arn:aws:sns:us-east-1:123456789012:t/1"
	put(b, "topic", "b's own")
	put(a, "topic", arn)
	put(a, "topic", arn) // the same again is a change too
	del(a, "topic", arn)
	del(a, "topic", "missing") // deletes nothing, tells nothing
	del(b, "topic", "b's own")
	put(a, "sns/topic", "a/b") // slashes in the kind and the key
	put(a, "sub", "")
	put(a, "sub", "last")
	toB := []news{{"topic", arn}, {"topic", arn}, {"topic", arn}, {"sns/topic", "a/b"}, {"sub", ""}, {"sub", "last"}}
	waitNews(t, "b", toldB, toB...)
	put(b, "sub", "b's last")
	waitNews(t, "a", toldA, news{"topic", "b's own"}, news{"topic", "b's own"}, news{"sub", "b's last"})

	// The longest payload a notification takes carries its key; a longer
	// one names the kind only.
	fits := ""
	for len(a.recordNote("sns/sub", fits)) < maxNotePayload {
		fits += "k"
	}
	if got := a.recordNote("sns/sub", fits); len(got) != maxNotePayload {
		t.Fatalf("no key makes a note of %d bytes: %d", maxNotePayload, len(got))
	}
	put(a, "sns/sub", fits)
	put(a, "sns/sub", fits+"k")
	del(a, "sns/sub", fits+"k")
	waitNews(t, "b", toldB, append(toB, news{"sns/sub", fits}, news{"sns/sub", ""}, news{"sns/sub", ""})...)
}

// A node that lost its listening connection may have missed news: once it
// listens again it is told that any record may have changed, once, and
// then the news as before.
func TestWatchRecordsReconnect(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	a := ts.open(t, clk)
	b, appB := ts.openNamed(t, Options{Clock: clk})
	ctx := context.Background()
	toldA, toldB := watch(a), watch(b)
	ts.terminate(t, appB, true)
	// Made while b may not listen: b may or may not hear of it.
	if err := a.PutRecord(ctx, "topic", "meanwhile", nil); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "b to listen again and say so", func() bool { return slices.Contains(toldB(), news{}) })
	if err := a.PutRecord(ctx, "topic", "after", nil); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, "b to hear of the put after it listens again",
		func() bool { return slices.Contains(toldB(), news{"topic", "after"}) })
	got := slices.DeleteFunc(toldB(), func(n news) bool { return n == news{"topic", "meanwhile"} })
	if want := []news{{}, {"topic", "after"}}; !slices.Equal(got, want) {
		t.Fatalf("b was told %q, want %q (and perhaps topic/meanwhile)", toldB(), want)
	}
	if b.Refusing() != "" {
		t.Fatalf("b listens again but says %q", b.Refusing())
	}
	// a kept listening: it heard nothing.
	if err := b.PutRecord(ctx, "topic", "from b", nil); err != nil {
		t.Fatal(err)
	}
	waitNews(t, "a", toldA, news{"topic", "from b"})
}

// mp is a point of series s (one of a few) with the given statistics.
func mp(minute int64, s string, sum, count, lo, hi float64) engine.MetricPoint {
	return engine.MetricPoint{Namespace: "AWS/SQS", Metric: s, DimName: "QueueName", DimValue: "q",
		Minute: minute, Sum: sum, Count: count, Min: lo, Max: hi}
}

// wantMerged checks a read of metric points.
func wantMerged(t *testing.T, what string, got []engine.MetricPoint, err error, want ...engine.MetricPoint) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s =\n%+v\nwant\n%+v", what, got, want)
	}
}

// Each node keeps its own points: a node's peers' points are the others',
// merged per series and minute, and every node reads all of them merged.
// Points stored before nodes kept their own (node ”) count as a peer's.
func TestMetricPointsPerNode(t *testing.T) {
	ts := freshSchema(t)
	clk := clock.NewFake(enginetest.Start)
	a, b, c := ts.open(t, clk), ts.open(t, clk), ts.open(t, clk)
	ctx := context.Background()
	for _, p := range []struct {
		s      *Store
		points []engine.MetricPoint
	}{
		{a, []engine.MetricPoint{mp(10, "Sent", 3, 2, 1, 2), mp(10, "Size", 100, 1, 100, 100), mp(11, "Sent", 1, 1, 1, 1)}},
		{c, []engine.MetricPoint{mp(10, "Sent", 5, 3, 0.5, 4), mp(12, "Sent", 7, 7, 1, 1)}},
		{b, []engine.MetricPoint{mp(10, "Sent", 100, 1, 0.1, 100), mp(13, "Sent", 2, 2, 1, 1)}},
		// A later put of a node's point replaces only that node's.
		{a, []engine.MetricPoint{mp(10, "Sent", 4, 3, 1, 2)}},
	} {
		if err := p.s.PutMetricPoints(ctx, p.points); err != nil {
			t.Fatal(err)
		}
	}
	peers, err := b.PeerMetricPoints(ctx, 0)
	wantMerged(t, "b's peers' points", peers, err,
		mp(10, "Sent", 9, 6, 0.5, 4), mp(10, "Size", 100, 1, 100, 100), mp(11, "Sent", 1, 1, 1, 1), mp(12, "Sent", 7, 7, 1, 1))
	peers, err = a.PeerMetricPoints(ctx, 11)
	wantMerged(t, "a's peers' points from minute 11", peers, err, mp(12, "Sent", 7, 7, 1, 1), mp(13, "Sent", 2, 2, 1, 1))
	all := []engine.MetricPoint{mp(10, "Sent", 109, 7, 0.1, 100), mp(10, "Size", 100, 1, 100, 100),
		mp(11, "Sent", 1, 1, 1, 1), mp(12, "Sent", 7, 7, 1, 1), mp(13, "Sent", 2, 2, 1, 1)}
	for _, s := range []*Store{a, b, c} {
		got, err := s.MetricPoints(ctx, 0)
		wantMerged(t, "every node's points", got, err, all...)
	}

	// A row as the store wrote it before migration 0005.
	if _, err := a.pool.Exec(ctx, `INSERT INTO metric_points (minute, namespace, metric, dim_name, dim_value, sum, count, min, max)
		VALUES (13, 'AWS/SQS', 'Sent', 'QueueName', 'q', 10, 1, 10, 10)`); err != nil {
		t.Fatal(err)
	}
	peers, err = b.PeerMetricPoints(ctx, 13)
	wantMerged(t, "b's peers' points with a row of before", peers, err, mp(13, "Sent", 10, 1, 10, 10))
	got, err := c.MetricPoints(ctx, 13)
	wantMerged(t, "every node's points with a row of before", got, err, mp(13, "Sent", 12, 3, 1, 10))
	if err := c.DeleteMetricPointsBefore(ctx, 14); err != nil {
		t.Fatal(err)
	}
	got, err = a.MetricPoints(ctx, 0)
	wantMerged(t, "every node's points after deleting them", got, err)
}

// Migrations 0005 and 0010 keep the points stored before them, as the
// points of node ” and of the configured account (account ”), which every
// node then reads; another account's point of the same names stays apart.
func TestMigrationKeepsMetricPoints(t *testing.T) {
	ts := freshSchema(t)
	ctx := context.Background()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, ts.url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool, ts.name, ms[:4]); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{ts.name, "metric_points"}.Sanitize()+` (minute, namespace, metric, dim_name, dim_value, sum, count, min, max)
		VALUES (10, 'AWS/SQS', 'Sent', 'QueueName', 'q', 3, 2, 1, 2), (11, 'AWS/SQS', 'Sent', 'QueueName', 'q', 1, 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	a, b := ts.open(t, clock.Real{}), ts.open(t, clock.Real{})
	other := mp(10, "Sent", 4, 1, 4, 4)
	other.Account = "222222222222"
	if err := a.PutMetricPoints(ctx, []engine.MetricPoint{mp(10, "Sent", 5, 1, 5, 5), other}); err != nil {
		t.Fatal(err)
	}
	got, err := b.MetricPoints(ctx, 0)
	wantMerged(t, "the points after the migration", got, err, mp(10, "Sent", 8, 3, 1, 5), other, mp(11, "Sent", 1, 1, 1, 1))
	got, err = a.PeerMetricPoints(ctx, 0)
	wantMerged(t, "a's peers' points after the migration", got, err, mp(10, "Sent", 3, 2, 1, 2), mp(11, "Sent", 1, 1, 1, 1))
}

// A record note names the node, kind and key whatever characters they
// hold; a malformed one is refused.
func TestRecordNote(t *testing.T) {
	s := &Store{node: newNodeName()}
	for _, tc := range []struct{ kind, key string }{
		{"topic", "arn:aws:sns:us-east-1:123456789012:t"},
		{"sns/topic", "a/b"},
		{"12/", "/3"},
		{"k", ""},
		{"é", "ü"},
	} {
		note, ok := strings.CutPrefix(s.recordNote(tc.kind, tc.key), "rec:")
		node, kind, key, parsed := parseRecordNote(note)
		if !ok || !parsed || node != s.node || kind != tc.kind || key != tc.key {
			t.Errorf("recordNote(%q, %q) = %q, read back as %q %q %q %v", tc.kind, tc.key, note, node, kind, key, parsed)
		}
	}
	for _, bad := range []string{"", "node", "node/", "node/x/kind", "node/0/key", "node/-1/k", "node/6/kind", "node//kind"} {
		if node, kind, key, ok := parseRecordNote(bad); ok {
			t.Errorf("parseRecordNote(%q) = %q %q %q, want refused", bad, node, kind, key)
		}
	}
}

// A conditional write that happens tells the other nodes as a put or a
// delete does; one that does not happen tells nobody. Through two nodes
// at once, an insert happens once and a key of a sequence is numbered
// once, and a key taken through one node is a duplicate through the other.
func TestConditionalWritesNodes(t *testing.T) {
	a, b, clk := twoNodes(t)
	ctx := context.Background()
	toldB := watch(b)
	write := func(what string, ok bool, err error, want bool) {
		t.Helper()
		if err != nil || ok != want {
			t.Fatalf("%s = %v, %v; want %v", what, ok, err, want)
		}
	}
	ok, err := a.InsertRecord(ctx, "topic", "t", []byte("1"))
	write("insert", ok, err, true)
	ok, err = a.InsertRecord(ctx, "topic", "t", []byte("2"))
	write("insert again", ok, err, false)
	ok, err = a.SwapRecord(ctx, "topic", "t", []byte("0"), []byte("2"))
	write("swap of a stale value", ok, err, false)
	ok, err = a.SwapRecord(ctx, "topic", "t", []byte("1"), []byte("2"))
	write("swap", ok, err, true)
	ok, err = a.DeleteRecordIf(ctx, "topic", "t", []byte("1"))
	write("delete of a stale value", ok, err, false)
	ok, err = a.DeleteRecordIf(ctx, "topic", "t", []byte("2"))
	write("delete", ok, err, true)
	waitNews(t, "b", toldB, news{"topic", "t"}, news{"topic", "t"}, news{"topic", "t"})

	const rounds = 20
	for r := range rounds {
		key := fmt.Sprint("k", r)
		start := make(chan struct{})
		var (
			wg       sync.WaitGroup
			inserted [2]bool
			tickets  [2][]engine.SequenceTicket
			errs     [4]error
		)
		for i, s := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				inserted[i], errs[i] = s.InsertRecord(ctx, "race", key, []byte{byte(i)})
				tickets[i], errs[2+i] = s.Sequence(ctx, "topic", clk.Now(), []engine.SequenceClaim{{Key: key, ID: fmt.Sprint(key, "/", i)}})
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if inserted[0] == inserted[1] {
			t.Fatalf("round %d: inserted through a %v, through b %v; want exactly one", r, inserted[0], inserted[1])
		}
		ta, tb := tickets[0][0], tickets[1][0]
		if ta.Duplicate == tb.Duplicate || ta.ID != tb.ID || ta.Number != tb.Number {
			t.Fatalf("round %d: tickets %+v and %+v; want one number, the other its duplicate", r, ta, tb)
		}
	}
}
